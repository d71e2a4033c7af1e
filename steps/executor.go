package steps

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/pipeline-dev/pipeline/internal/clock"
	"github.com/pipeline-dev/pipeline/internal/tokens"
)

// Step is one step to run: the program, what to make of its output, and
// its limits.
type Step struct {
	Command Command
	// Parser reads an agent CLI's machine output line by line; nil when
	// the output is plain text.
	Parser Parser
	// CountTokens counts the plain-text output with the tokenizer (an
	// agent without a parser); PromptTokens are added to the count.
	CountTokens  bool
	PromptTokens int
	// SessionChecker and AskedSession tell a failed turn whose native
	// session is gone from any other failure.
	SessionChecker SessionChecker
	AskedSession   string
	// Transcript receives the output as it comes (a parsed agent's raw
	// lines); the executor buffers it and flushes it at every tick.
	Transcript io.Writer
	// Timeout ends the step after this long, IdleTimeout after this long
	// without output; zero is no limit.
	Timeout, IdleTimeout time.Duration
	// Grace is the time between interrupting the step and killing it.
	Grace time.Duration
	// Redact, when set, gives each output stream the redaction of secrets
	// that runs before the output is shown, scanned or kept.
	Redact func() RedactStream
}

// RedactStream hides secrets in a stream of chunks: Write returns what can
// be passed on now (it may hold back the start of a possible secret), Flush
// the rest at the end.
type RedactStream interface {
	Write(chunk []byte) []byte
	Flush() []byte
}

// Live is what a running step has shown so far: the values the live
// triggers read.
type Live struct {
	// Tokens, CostUSD: of this step so far; ContextTokens: the agent's
	// context in use.
	Tokens        int
	ContextTokens int
	CostUSD       float64
	Elapsed       time.Duration
	// Checkpoint is set once the output held the checkpoint marker.
	Checkpoint     bool
	CheckpointNote string
	// NewOutput is set when output arrived since the last call.
	NewOutput bool
	// Tail returns the bounded tail of the output; it is valid only
	// during the call to Observe.
	Tail func() string
}

// Observer follows one step as it runs. Its methods are called one at a
// time, from the executor's goroutines; they must not block.
type Observer interface {
	// Started is told the running step, which it may stop.
	Started(r *Running)
	// Output is the step's text as a person should see it, secrets
	// redacted.
	Output(text []byte)
	// Observe is called after output and at every tick with the live
	// values: this is where pause_when is evaluated.
	Observe(live *Live)
	// Warn reports a problem that does not end the step (a transcript
	// that cannot be written).
	Warn(message string)
}

// Result is what a step left behind.
type Result struct {
	ExitCode       int
	TimedOut       bool
	Stopped        bool
	Tokens         int
	ContextTokens  int
	CostUSD        float64
	Elapsed        time.Duration
	Output         string
	Checkpoint     bool
	CheckpointNote string
	SessionID      string
	// SessionLost: the CLI said the native session to resume is gone.
	SessionLost bool
	// RateLimited and ResumeAfter: the vendor refused for now, and said
	// when to come back (zero when it did not say).
	RateLimited bool
	ResumeAfter time.Time
	// Error is what the agent reported as its error, if anything.
	Error string
}

// Executor runs steps, one at a time each: the process group, the
// readers, the parser, the checkpoint scan, live tokens, the transcript,
// timeout and idle timeout.
type Executor struct {
	Clock clock.Clock
	// Tick is how often time limits are checked and the observer told the
	// time; 100 ms when zero.
	Tick time.Duration
}

// chunkSize is how much of a step's standard output is read at once;
// standard error is read in smaller chunks.
const (
	chunkSize    = 256 << 10
	errChunkSize = 16 << 10
)

// Execute runs exactly one step and returns its result when it has ended
// and no process of its group is left. Cancelling ctx stops it gracefully
// (SIGINT to the group, Grace, then SIGKILL). The error is set only when
// the step could not start; its result then says so with exit code 127, as
// a shell does for a missing program.
func (x *Executor) Execute(ctx context.Context, step Step, obs Observer) (Result, error) {
	c := x.Clock
	if c == nil {
		c = clock.Real{}
	}
	if step.Transcript == nil {
		step.Transcript = io.Discard
	}
	r := &Running{x: x, clock: c, step: step, obs: obs,
		transcript: bufio.NewWriterSize(step.Transcript, 64<<10)}
	r.started = c.Now()
	r.lastOutput = r.started
	proc, err := Start(step.Command)
	if err != nil {
		fmt.Fprintf(r.transcript, "pipeline: cannot start step: %v\n", err)
		r.flush()
		return Result{ExitCode: 127, Output: err.Error()}, err
	}
	r.proc = proc
	if step.CountTokens {
		r.tokens = tokens.NewLive()
	}
	obs.Started(r)
	var readers sync.WaitGroup
	readers.Add(2)
	go r.read(proc.Stdout, chunkSize, &readers)
	go r.read(proc.Stderr, errChunkSize, &readers)
	r.mu.Lock()
	r.armTick()
	r.mu.Unlock()
	stopOnCancel := context.AfterFunc(ctx, func() { r.Stop(step.Grace) })
	defer stopOnCancel()
	return r.finish(&readers), nil
}

// Running is a step while it runs.
type Running struct {
	x     *Executor
	clock clock.Clock
	step  Step
	obs   Observer
	proc  *Process

	mu          sync.Mutex
	transcript  *bufio.Writer
	scanner     OutputScanner
	tokens      *tokens.Live
	stderr      []byte // the end of standard error, for SessionGone
	errText     string
	rateLimited bool
	resumeAfter time.Time
	lines       []byte // a line of parsed output not yet ended
	usage       Event
	sessionID   string
	started     time.Time
	lastOutput  time.Time
	flushFailed bool
	timedOut    bool
	stopped     bool
	killed      bool
	done        bool
	stopTick    func() bool
	live        Live
}

// Pid is the step's process id, which is also its process group id.
func (r *Running) Pid() int { return r.proc.Pid() }

// Stop ends the step gracefully: SIGINT to its group, then SIGKILL after
// grace. A second call with a zero grace kills the group at once, however
// long the first one gave it.
func (r *Running) Stop(grace time.Duration) {
	r.mu.Lock()
	first := !r.stopped
	r.stopped = true
	killNow := !first && grace == 0 && !r.killed
	if killNow || (first && grace == 0) {
		r.killed = true
	}
	r.mu.Unlock()
	switch {
	case killNow:
		_ = syscall.Kill(-r.proc.Pid(), syscall.SIGKILL)
	case first:
		go r.proc.Stop(grace)
	}
}

func (r *Running) read(src io.Reader, size int, done *sync.WaitGroup) {
	defer done.Done()
	var redact RedactStream
	if r.step.Redact != nil {
		redact = r.step.Redact()
	}
	parsed := r.step.Parser != nil && size == chunkSize
	consume := r.consume
	switch {
	case parsed:
		consume = r.consumeLines
	case size == errChunkSize:
		consume = func(chunk []byte) {
			r.mu.Lock()
			r.stderr = append(r.stderr, chunk...)
			if len(r.stderr) > errChunkSize {
				r.stderr = append([]byte(nil), r.stderr[len(r.stderr)-errChunkSize:]...)
			}
			r.mu.Unlock()
			r.consume(chunk)
		}
	}
	buf := make([]byte, size)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if redact != nil {
				chunk = redact.Write(chunk)
			}
			if len(chunk) > 0 {
				consume(chunk)
			}
		}
		if err != nil {
			if redact != nil {
				if rest := redact.Flush(); len(rest) > 0 {
					consume(rest)
				}
			}
			if parsed {
				r.mu.Lock()
				pending := len(r.lines) > 0
				r.mu.Unlock()
				if pending {
					// A last line without its newline.
					r.consumeLines([]byte("\n"))
				}
			}
			return
		}
	}
}

// consume is the hot path: every chunk of plain output passes here once.
func (r *Running) consume(chunk []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.transcript.Write(chunk)
	r.obs.Output(chunk)
	r.scanner.Write(chunk)
	r.lastOutput = r.clock.Now()
	if r.tokens != nil {
		r.tokens.Write(chunk)
		r.live.Tokens = r.step.PromptTokens + r.tokens.Count()
	}
	r.observe(true)
}

// consumeLines reads an agent CLI's machine output: each line, kept as it
// is in the transcript, becomes events through the adapter's parser; the
// text the agent writes is shown and scanned for the checkpoint marker,
// its usage and session id are taken as they come.
func (r *Running) consumeLines(chunk []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.transcript.Write(chunk)
	r.lastOutput = r.clock.Now()
	r.lines = append(r.lines, chunk...)
	for {
		i := bytes.IndexByte(r.lines, '\n')
		if i < 0 {
			break
		}
		for _, ev := range r.step.Parser.Line(r.lines[:i]) {
			switch ev.Kind {
			case EventText, EventError:
				if ev.Kind == EventError {
					r.errText = ev.Text
					if ev.RateLimited {
						r.rateLimited, r.resumeAfter = true, ev.ResumeAfter
					}
				}
				text := []byte(ev.Text)
				r.obs.Output(text)
				r.scanner.Write(text)
			case EventUsage:
				r.usage = ev
				r.live.Tokens = ev.InputTokens + ev.OutputTokens
				r.live.ContextTokens = ev.ContextTokens
				r.live.CostUSD = ev.CostUSD
			case EventSession:
				r.sessionID = ev.SessionID
			}
		}
		r.lines = r.lines[i+1:]
	}
	r.lines = append([]byte(nil), r.lines...)
	r.observe(true)
}

// observe hands the live values to the observer. Called with r.mu held.
func (r *Running) observe(newOutput bool) {
	if r.done {
		return
	}
	if r.scanner.Checkpoint {
		r.live.Checkpoint, r.live.CheckpointNote = true, r.scanner.CheckpointNote()
	}
	r.live.NewOutput = newOutput
	r.live.Tail = r.scanner.Tail
	r.obs.Observe(&r.live)
	r.live.Tail = nil
}

func (r *Running) armTick() {
	tick := r.x.Tick
	if tick <= 0 {
		tick = 100 * time.Millisecond
	}
	r.stopTick = r.clock.AfterFunc(tick, r.onTick)
}

// onTick moves the time, enforces timeout and idle_timeout, and flushes
// the transcript.
func (r *Running) onTick() {
	r.mu.Lock()
	if r.done {
		r.mu.Unlock()
		return
	}
	now := r.clock.Now()
	r.live.Elapsed = now.Sub(r.started)
	timedOut := !r.timedOut && !r.stopped &&
		((r.step.Timeout > 0 && r.live.Elapsed >= r.step.Timeout) ||
			(r.step.IdleTimeout > 0 && now.Sub(r.lastOutput) >= r.step.IdleTimeout))
	if timedOut {
		r.timedOut = true
	}
	r.observe(false)
	// The transcript reaches its file at every tick, for logs -f; a flush
	// of an empty buffer costs nothing.
	r.flush()
	r.armTick()
	r.mu.Unlock()
	if timedOut {
		go r.proc.Stop(r.step.Grace)
	}
}

// flush writes the buffered transcript; the first failure is reported.
func (r *Running) flush() {
	if err := r.transcript.Flush(); err != nil && !r.flushFailed {
		r.flushFailed = true
		r.obs.Warn(fmt.Sprintf("writing the transcript: %v", err))
	}
}

// finish waits for the step's end and makes its result.
func (r *Running) finish(readers *sync.WaitGroup) Result {
	code, waitErr := r.proc.Wait()
	readers.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = true
	r.stopTick()
	if waitErr != nil {
		fmt.Fprintf(r.transcript, "pipeline: %v\n", waitErr)
	}
	tokenCount := r.usage.InputTokens + r.usage.OutputTokens
	if r.tokens != nil {
		tokenCount = r.step.PromptTokens + r.tokens.Close()
	}
	result := Result{ExitCode: code, TimedOut: r.timedOut, Stopped: r.stopped && !r.timedOut,
		Tokens: tokenCount, ContextTokens: r.usage.ContextTokens, CostUSD: r.usage.CostUSD, SessionID: r.sessionID,
		Elapsed: r.clock.Now().Sub(r.started), Output: r.scanner.Tail(),
		Checkpoint: r.scanner.Checkpoint, CheckpointNote: r.scanner.CheckpointNote(),
		Error: r.errText, RateLimited: r.rateLimited, ResumeAfter: r.resumeAfter}
	if r.step.SessionChecker != nil && r.step.AskedSession != "" && code != 0 && !r.stopped &&
		r.step.SessionChecker.SessionGone(r.stderr, code) {
		result.SessionLost = true
	}
	r.flush()
	return result
}
