package steps

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
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
	// lines); the executor buffers it and flushes it at every tick. A
	// step without a parser writes its standard output and error into one
	// pipe, whose bytes the transcript keeps in their order; a parsed
	// agent's standard error is read apart, and each of its lines is
	// kept whole, after StderrPrefix, between whole lines of its standard
	// output.
	Transcript io.Writer
	// Timeout ends the step after this long, IdleTimeout after this long
	// without output; zero is no limit.
	Timeout, IdleTimeout time.Duration
	// Grace is the time between interrupting the step and killing it.
	Grace time.Duration
	// Redact, when set, gives each output stream the redaction of secrets
	// that runs before the output is shown, scanned or kept.
	Redact func() RedactStream
	// Markers, when set, is called with each working-set marker line as
	// soon as its line has ended (or the step ended), from the executor's
	// goroutines, one at a time; it must not block. The markers are read
	// where the checkpoint is, from the redacted text: all of a plain
	// step's output, and the text a parsed agent wrote (not its standard
	// error, not its errors, not the prompt a CLI echoes). See
	// MarkerScanner for what makes a marker line; at most MaxMarkers are
	// reported, the rest dropped with one warning to the observer.
	Markers func(Marker)
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

// CheckpointDecider is an Observer that decides on a checkpoint line the
// moment it ends, before the output that ended it is kept, shown or
// counted: when Checkpoint reports true, the executor interrupts the step
// at once, from the goroutine that read the line. The Observe that follows
// sees the checkpoint as set; that is where the decision is reported. It
// must not block, and should not allocate: it is the latency of a pause.
type CheckpointDecider interface {
	Checkpoint(note string) (stop bool)
}

// Result is what a step left behind.
type Result struct {
	ExitCode       int
	TimedOut       bool
	Stopped        bool
	Tokens         int
	InputTokens    int // of Tokens, what the agent read (its prompt, its context)
	OutputTokens   int // of Tokens, what it wrote
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
	// Leftovers are the processes the step left running when its own
	// process exited, killed then (a daemon, a background job).
	Leftovers []Leftover
	// OutputHeld: after the step's process exited, something kept its
	// output open and the executor stopped reading it (see outputDrain).
	OutputHeld bool
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

// StderrPrefix starts each transcript line that came from a parsed
// agent's standard error.
const StderrPrefix = "[stderr] "

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
	// Plain output shares one pipe: its order is exact. A parser reads
	// standard output alone, and a session checker reads standard error.
	step.Command.MergeOutput = step.Parser == nil && step.SessionChecker == nil
	r.step = step
	if !step.Command.MergeOutput {
		r.outLines = &lineWriter{w: r.transcript}
		r.errLines = &lineWriter{w: r.transcript, prefix: []byte(StderrPrefix)}
	}
	proc, err := startUnwaited(step.Command)
	if err != nil {
		fmt.Fprintf(r.transcript, "pipeline: cannot start step: %v\n", err)
		r.flush()
		return Result{ExitCode: 127, Output: err.Error()}, err
	}
	r.proc = proc
	if step.CountTokens {
		r.tokens = tokens.NewLive()
	}
	if step.Markers != nil {
		r.markers = &MarkerScanner{Emit: step.Markers, Dropped: func(Marker) {
			r.report(markerDropped(MaxMarkers))
		}}
	}
	obs.Started(r)
	n := int32(1)
	if proc.Stderr != nil {
		n = 2
	}
	readers := newReaders(n)
	if proc.Stderr != nil {
		go r.read(1, proc.Stderr, errChunkSize, readers)
	}
	go r.read(0, proc.Stdout, chunkSize, readers)
	r.mu.Lock()
	r.armTick()
	r.mu.Unlock()
	stopOnCancel := context.AfterFunc(ctx, func() { r.Stop(step.Grace) })
	defer stopOnCancel()
	return r.finish(readers), nil
}

// Running is a step while it runs.
type Running struct {
	x     *Executor
	clock clock.Clock
	step  Step
	obs   Observer
	proc  *Process
	// bytesRead counts the bytes read of standard output and error, for the
	// drain at the end.
	bytesRead [2]atomic.Int64

	mu         sync.Mutex
	transcript *bufio.Writer
	// outLines and errLines write whole lines of standard output and
	// error to the transcript when the two are read apart; nil when
	// merged.
	outLines, errLines *lineWriter
	scanner            OutputScanner
	markers            *MarkerScanner // nil without Step.Markers
	tokens             *tokens.Live
	stderr             []byte // the end of standard error, for SessionGone
	errText            string
	rateLimited        bool
	resumeAfter        time.Time
	lines              []byte // a line of parsed output not yet ended
	usage              Event
	sessionID          string
	started            time.Time
	lastOutput         time.Time
	// scanned is when text last reached the scanner: an open checkpoint
	// line is taken as it is once it has waited checkpointLineWait.
	scanned     time.Time
	stopCheck   time.Time
	stopWarned  bool
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
	defer r.mu.Unlock()
	r.stopLocked(grace)
}

// stopLocked is Stop, called with r.mu held: the first SIGINT is sent
// before it returns.
func (r *Running) stopLocked(grace time.Duration) {
	first := !r.stopped
	r.stopped = true
	killNow := !first && grace == 0 && !r.killed
	if killNow || (first && grace == 0) {
		r.killed = true
	}
	switch {
	case killNow:
		_ = syscall.Kill(-r.proc.Pid(), syscall.SIGKILL)
	case first:
		r.proc.Interrupt()
		go r.proc.Stop(grace)
	}
}

func (r *Running) read(which int, src io.Reader, size int, done *readers) {
	defer done.readerEnded()
	var redact RedactStream
	if r.step.Redact != nil {
		redact = r.step.Redact()
	}
	parsed := r.step.Parser != nil && which == 0
	consume := r.consumerOf(which)
	take := func(chunk []byte) {
		if redact != nil {
			chunk = redact.Write(chunk)
		}
		if len(chunk) > 0 {
			consume(chunk)
		}
	}
	buf := make([]byte, size)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			r.bytesRead[which].Add(int64(n))
			take(buf[:n])
		}
		if err != nil {
			break
		}
		if n == len(buf) {
			// The output comes faster than it is taken: from now on it
			// is read ahead. (A step that writes a line now and then,
			// a checkpoint's say, is read here, without a handoff.)
			ahead := startReadAhead(src, buf, &r.bytesRead[which])
			for read := range ahead.chunks {
				take(read)
				ahead.done(read)
			}
			break
		}
	}
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
}

// consumerOf is what takes the chunks of standard output (which 0) or
// error (1), redacted.
func (r *Running) consumerOf(which int) func(chunk []byte) {
	switch {
	case r.step.Parser != nil && which == 0:
		return r.consumeLines
	case which == 1:
		return func(chunk []byte) {
			r.mu.Lock()
			r.stderr = append(r.stderr, chunk...)
			if len(r.stderr) > errChunkSize {
				r.stderr = append([]byte(nil), r.stderr[len(r.stderr)-errChunkSize:]...)
			}
			r.mu.Unlock()
			r.consume(chunk, r.errLines)
		}
	}
	return func(chunk []byte) { r.consume(chunk, r.outLines) }
}

// consume is the hot path: every chunk of plain output passes here once.
// lines, when set, writes it to the transcript by whole lines. Markers are
// read from it unless it is a parsed agent's standard error.
func (r *Running) consume(chunk []byte, lines *lineWriter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// The checkpoint first: a pause it causes interrupts the step before
	// the chunk goes to the transcript, the view or the tokenizer.
	r.scanner.Write(chunk)
	r.decideCheckpoint()
	if lines != nil {
		lines.Write(chunk)
	} else {
		r.transcript.Write(chunk)
	}
	r.obs.Output(chunk)
	if r.markers != nil && (lines == nil || lines == r.outLines) && !r.done {
		r.markers.Write(chunk)
	}
	r.lastOutput = r.clock.Now()
	r.scanned = r.lastOutput
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
				r.scanner.Write(text)
				r.decideCheckpoint()
				r.obs.Output(text)
				r.scanned = r.lastOutput
				if r.markers != nil && !r.done {
					// An error is the CLI's or the vendor's words, not
					// the agent's, on a line of its own.
					if ev.Kind == EventText {
						r.markers.Write(text)
					} else {
						r.markers.EndLine()
					}
				}
			case EventTool:
				r.obs.Output([]byte(ev.Text))
				if r.markers != nil && !r.done {
					r.markers.EndLine()
				}
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
	// Kept after it was read for a checkpoint: the parse is what the
	// decision waits for, the transcript is not.
	r.outLines.Write(chunk)
	r.observe(true)
}

// decideCheckpoint asks a CheckpointDecider about a checkpoint line that
// has just ended (a new one, or a new note), and interrupts the step when
// it says so. Called with r.mu held.
func (r *Running) decideCheckpoint() {
	if !r.scanner.Checkpoint || r.done {
		return
	}
	note := r.scanner.CheckpointNote()
	if r.live.Checkpoint && note == r.live.CheckpointNote {
		return
	}
	decider, ok := r.obs.(CheckpointDecider)
	if !ok {
		return
	}
	r.live.Checkpoint, r.live.CheckpointNote = true, note
	if decider.Checkpoint(note) {
		r.stopLocked(r.step.Grace)
		// What follows the interrupt (the chunk kept and shown, the
		// firing recorded by the loop) waits: on a busy machine it took
		// the core that the step's processes needed to take the signal.
		time.Sleep(interruptHeadStart)
	}
}

// interruptHeadStart is how long the reader that interrupted a step for a
// checkpoint holds back before it goes on. Measured on 2 cores at load 17
// (go run ./cmd/bench -checkpoint): the SIGINT received p50 0.57 ms
// without it, 0.35 ms with it, as a bare monitor's (0.38 ms); on a quiet
// machine it costs a pause 1 ms of its record, nothing of its latency.
const interruptHeadStart = time.Millisecond

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

// checkpointLineWait is how long a checkpoint line may stay open (the
// agent wrote the marker, and the note comes in pieces) before it counts
// with the note that has arrived: the trigger waits for the whole line,
// but not for ever.
const checkpointLineWait = time.Second

// stoppedCheck is how long a step must be silent before the executor looks
// for a stopped process in it, and how often it looks again.
const stoppedCheck = time.Second

// onTick moves the time, enforces timeout and idle_timeout, ends a
// checkpoint line that waited too long, looks for a stopped process in a
// silent step, and flushes the transcript.
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
	if r.scanner.NoteOpen() && now.Sub(r.scanned) >= checkpointLineWait {
		r.scanner.EndLine()
	}
	checkStopped := !r.stopWarned && now.Sub(r.lastOutput) >= stoppedCheck && now.Sub(r.stopCheck) >= stoppedCheck
	if checkStopped {
		r.stopCheck = now
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
	if checkStopped {
		r.reportStopped()
	}
}

// reportStopped says, once, that a process of the step is stopped: a step
// that waits for it would otherwise look merely quiet until its
// idle_timeout.
func (r *Running) reportStopped() {
	stopped, ok := stoppedProcess(r.proc.Pid())
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done || r.stopWarned {
		return
	}
	r.stopWarned = true
	r.report(fmt.Sprintf("process %s of the step is stopped (by SIGSTOP or SIGTSTP, or SIGTTIN/SIGTTOU for using a terminal)"+
		" and will not go on by itself; the step ends at its timeout or idle_timeout, or when it is interrupted", stopped))
}

// report writes a line of the executor's own into the transcript and
// tells the observer. Called with r.mu held.
func (r *Running) report(message string) {
	fmt.Fprintf(r.transcript, "pipeline: %s\n", message)
	r.obs.Warn(message)
}

// flush writes the buffered transcript; the first failure is reported.
func (r *Running) flush() {
	if err := r.transcript.Flush(); err != nil && !r.flushFailed {
		r.flushFailed = true
		r.obs.Warn(fmt.Sprintf("writing the transcript: %v", err))
	}
}

// finish waits for the step's end and makes its result.
// The child is waited for here, on the goroutine that had nothing else
// to do meanwhile (startUnwaited).
func (r *Running) finish(readers *readers) Result {
	r.proc.wait()
	code, waitErr := r.proc.Wait()
	held := r.proc.drain(readers.ended, &r.bytesRead)
	r.proc.closeOutputs()
	left := r.proc.Leftovers()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = true
	r.stopTick()
	if r.outLines != nil {
		r.outLines.Flush()
		r.errLines.Flush()
	}
	if waitErr != nil {
		fmt.Fprintf(r.transcript, "pipeline: %v\n", waitErr)
	}
	if grace, killed := r.proc.KilledAfter(); killed {
		r.report(fmt.Sprintf("the step did not stop within %s: killed", grace))
	}
	if len(left) > 0 {
		what := "1 process"
		if len(left) > 1 {
			what = fmt.Sprintf("%d processes", len(left))
		}
		r.report(fmt.Sprintf("the step left %s running when it exited, killed then: %s", what, describeLeftovers(left)))
	}
	if held {
		r.report(fmt.Sprintf("a process the step started kept its output open after the step exited;"+
			" the output was read for %s more, then left", outputDrain))
	}
	r.scanner.EndLine()
	if r.markers != nil {
		r.markers.EndLine()
	}
	input, output := r.usage.InputTokens, r.usage.OutputTokens
	if r.tokens != nil {
		input, output = r.step.PromptTokens, r.tokens.Close()
	}
	result := Result{ExitCode: code, TimedOut: r.timedOut, Stopped: r.stopped && !r.timedOut,
		Tokens: input + output, InputTokens: input, OutputTokens: output, ContextTokens: r.usage.ContextTokens, CostUSD: r.usage.CostUSD, SessionID: r.sessionID,
		Elapsed: r.clock.Now().Sub(r.started), Output: r.scanner.Tail(),
		Checkpoint: r.scanner.Checkpoint, CheckpointNote: r.scanner.CheckpointNote(),
		Error: r.errText, RateLimited: r.rateLimited, ResumeAfter: r.resumeAfter, Leftovers: left, OutputHeld: held}
	if r.step.SessionChecker != nil && r.step.AskedSession != "" && code != 0 && !r.stopped &&
		r.step.SessionChecker.SessionGone(r.stderr, code) {
		result.SessionLost = true
	}
	r.flush()
	return result
}

// lineWriter writes whole lines to w, each after prefix, so that the
// lines of two streams read apart interleave without cutting each other.
// A line longer than maxPending is written in pieces, each a line of its
// own.
type lineWriter struct {
	w       *bufio.Writer
	prefix  []byte
	pending []byte
}

const maxPending = 16 << 10

func (l *lineWriter) Write(chunk []byte) {
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			l.pending = append(l.pending, chunk...)
			if len(l.pending) >= maxPending {
				l.Flush()
			}
			return
		}
		l.w.Write(l.prefix)
		if len(l.pending) > 0 {
			l.w.Write(l.pending)
			l.pending = l.pending[:0]
		}
		l.w.Write(chunk[:i+1])
		chunk = chunk[i+1:]
	}
}

// Flush writes a line not ended yet, ending it.
func (l *lineWriter) Flush() {
	if len(l.pending) == 0 {
		return
	}
	l.w.Write(l.prefix)
	l.w.Write(l.pending)
	l.w.WriteByte('\n')
	l.pending = l.pending[:0]
}

// readers counts the output's readers still reading; ended is closed
// when the last one has ended, by that one: no goroutine waits for
// them to close it.
type readers struct {
	left  atomic.Int32
	ended chan struct{}
}

func newReaders(n int32) *readers {
	rs := &readers{ended: make(chan struct{})}
	rs.left.Store(n)
	return rs
}

func (rs *readers) readerEnded() {
	if rs.left.Add(-1) == 0 {
		close(rs.ended)
	}
}
