package engine

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/tokens"
	"github.com/pipeline-dev/pipeline/steps"
	"github.com/pipeline-dev/pipeline/triggers"
)

// Recorder keeps what a run produces: the transcript of every step and
// every event with the state it led to.
type Recorder interface {
	Transcript(phase string, attempt int, step string) (io.WriteCloser, error)
	Record(ev Event, s State) error
}

// Runner carries out the decision function's actions with real processes,
// a clock and files.
type Runner struct {
	Plan *spec.Plan
	// Dir is where steps run: the folder of phases.yaml.
	Dir      string
	View     View
	Clock    Clock
	Recorder Recorder
	// Grace is the time between interrupting a step and killing it.
	Grace time.Duration
	// Tick is how often time limits and time-based triggers are checked.
	Tick time.Duration
	// Interrupts delivers Ctrl+C, SIGTERM and pipeline pause: the first
	// pauses the session gracefully, the second kills the running step at
	// once.
	Interrupts <-chan Interrupt
	// ResumeContext, when set, gives the text put before the prompt of an
	// agent step that starts after a resume, a recovery or a restart.
	ResumeContext func(s State, a StartStep) string
	// Git reports HEAD and the files changed since base in Dir; nil when
	// Dir is not a git work tree.
	Git func(base string) (head string, files []string)
	// NewRedactStream, when set, gives each output stream of a step the
	// redaction of secrets that runs before the output is shown or kept.
	NewRedactStream func() RedactStream
	// StepProcess, when set, is told the process group of each step that
	// starts (and 0 when it has ended), so that what a killed runner left
	// behind can be found and stopped by the next one.
	StepProcess func(pgid int)

	// The adapter and native session of the step being started, handed
	// from command to start.
	lastAdapter   steps.Adapter
	lastSessionID string
}

// RedactStream hides secrets in a stream of chunks: Write returns what can
// be passed on now (it may hold back the start of a possible secret), Flush
// the rest at the end.
type RedactStream interface {
	Write(chunk []byte) []byte
	Flush() []byte
}

// Interrupt is a request to pause: Ctrl+C, SIGTERM, or pipeline pause with
// the human's notes.
type Interrupt struct {
	Reason string
	Notes  string
}

// Run drives the session from state with the first event (Started, or
// Resumed) until it pauses, completes or fails, and returns the final state.
// No process of a step outlives Run.
func (r *Runner) Run(state State, first Event) State {
	events := make(chan Event, 64)
	var (
		current   *execution
		stopSleep func() bool
		forced    bool
	)
	handle := func(ev Event) (finished bool) {
		var actions []Action
		state, actions = Decide(r.Plan, state, ev)
		// Stopping a step cannot wait for the record: it is the latency
		// from a trigger to the interrupt.
		for _, a := range actions {
			if _, ok := a.(StopStep); ok && current != nil {
				current.stop(r.Grace, false)
			}
		}
		if err := r.Recorder.Record(ev, state); err != nil {
			r.View.Say("pipeline: recording the session: %v", err)
		}
		for _, a := range actions {
			switch a := a.(type) {
			case StartStep:
				current = r.start(a, state, events)
			case Sleep:
				r.View.Say("retrying in %s (attempt %d)", a.Duration, state.Attempt)
				stopSleep = r.Clock.AfterFunc(a.Duration, func() { events <- TimerExpired{At: r.Clock.Now()} })
			case DropSession:
				r.View.Say("restart: the agent's session %s is dropped; the next attempt starts fresh", a.Key)
			case Pause:
				if stopSleep != nil {
					stopSleep()
				}
				r.View.Say("paused: %s", describeFiring(a.Firing))
				return true
			case Complete:
				r.View.Say("completed: %d phases", len(r.Plan.Phases))
				return true
			case Fail:
				r.View.Say("failed: %s", a.Reason)
				return true
			}
		}
		return false
	}
	if handle(first) || (current == nil && !state.Waiting && !state.StepRunning) {
		// Ended, or the event asked nothing of a session that cannot move
		// (a resume of a session that is not paused): nothing to wait for.
		return state
	}
	for {
		select {
		case ev := <-events:
			if _, ok := ev.(StepFinished); ok {
				current = nil
			}
			if handle(ev) {
				return state
			}
		case in := <-r.Interrupts:
			if state.Stopping != nil && current != nil && !forced {
				forced = true
				r.View.Say("interrupted again: killing the step now")
				current.stop(0, true)
				continue
			}
			if in.Reason == "" {
				in.Reason = ReasonInterrupted
			}
			if handle(PauseRequested{At: r.Clock.Now(), Reason: in.Reason, Notes: in.Notes}) {
				return state
			}
		}
	}
}

func describeFiring(f Firing) string {
	text := f.Reason
	if f.Expression != "" && f.Expression != f.Reason {
		text += fmt.Sprintf(" (%s)", f.Expression)
	}
	if len(f.Values) > 0 && f.Expression != f.Reason {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(f.Values)) {
			if k == "output" || k == "steps" || k == "spec" {
				continue
			}
			parts = append(parts, fmt.Sprintf("%s=%v", k, f.Values[k]))
		}
		if len(parts) > 0 {
			text += " with " + strings.Join(parts, ", ")
		}
	}
	if f.Note != "" {
		text += ": " + f.Note
	}
	return text
}

// execution is one running step: its process, its output and its live
// triggers.
type execution struct {
	r          *Runner
	info       StepInfo
	proc       *steps.Process
	events     chan<- Event
	transcript *bufio.Writer
	file       io.WriteCloser

	mu            sync.Mutex
	monitor       *triggers.Monitor
	scanner       steps.OutputScanner
	tokens        *tokens.Live
	parser        steps.Parser
	adapter       steps.Adapter
	askedSession  string // the native session the step was asked to resume
	agentName     string
	stderr        []byte // the end of the step's standard error
	errText       string
	rateLimited   bool
	resumeAfter   time.Time
	lines         []byte // a line of parsed output not yet ended
	usage         steps.Event
	sessionID     string
	costBefore    float64
	promptTokens  int
	tokensBefore  int
	phaseBefore   time.Duration
	sessionBefore time.Duration
	started       time.Time
	lastOutput    time.Time
	timeout, idle time.Duration
	headBefore    string
	flushFailed   bool
	timedOut      bool
	stopped       bool
	fired         bool
	done          bool
	stopTick      func() bool
}

// prompt is what the agent is asked: the step's prompt and where the spec is.
func (r *Runner) prompt(step *spec.StepPlan) string {
	text := step.Prompt.Value
	if r.Plan.Spec != "" {
		rel, err := filepath.Rel(r.Dir, r.Plan.Spec)
		if err != nil {
			rel = r.Plan.Spec
		}
		text += "\n\nSpec: " + rel
	}
	return text
}

func (r *Runner) command(a StartStep, s State, step *spec.StepPlan) (steps.Command, steps.Parser, int, error) {
	phase := &r.Plan.Phases[a.Phase]
	env := append(os.Environ(),
		"PIPELINE_PHASE="+phase.Name, "PIPELINE_STEP="+step.Name, fmt.Sprintf("PIPELINE_ATTEMPT=%d", a.Attempt))
	if r.Plan.Spec != "" {
		env = append(env, "PIPELINE_SPEC="+r.Plan.Spec)
	}
	if step.Agent == nil {
		return steps.Command{Args: shellCommand(step.Run), Dir: r.Dir, Env: env}, nil, 0, nil
	}
	agent := step.Agent.Value
	adapter, err := steps.AdapterFor(agent.Kind)
	if err != nil {
		return steps.Command{}, nil, 0, err
	}
	for _, k := range slices.Sorted(maps.Keys(agent.Env)) {
		env = append(env, k+"="+agent.Env[k])
	}
	req := steps.Request{Kind: agent.Kind, Model: agent.Model, Command: agent.Command, Args: agent.Args,
		SessionID: a.SessionID, Dir: r.Dir, Env: env}
	if recoverer, ok := adapter.(steps.Recoverer); ok && a.Recover {
		if id, found := recoverer.Recover(agent.Feature, req, env); found {
			r.View.Say("adopting the %s session %s of feature %s: the session store had none", agent.Kind, id, agent.Feature)
			req.SessionID = id
		}
	}
	prompt := r.prompt(step)
	if a.ResumeContext && r.ResumeContext != nil {
		if text := r.ResumeContext(s, a); text != "" {
			prompt = text + "\n\n" + prompt
		}
	}
	if req.SessionID == "" && agent.Feature != "" {
		// The first prompt of a native session names its feature, so that
		// the session can be found again if the store is lost.
		prompt = steps.FeatureHeader(agent.Feature) + "\n\n" + prompt
	}
	req.Prompt = prompt
	inv, err := adapter.Invocation(req)
	if err != nil {
		return steps.Command{}, nil, 0, err
	}
	cmd := steps.Command{Args: inv.Args, Dir: r.Dir, Env: env}
	if inv.Stdin != "" {
		cmd.Stdin = strings.NewReader(inv.Stdin)
	}
	r.lastAdapter, r.lastSessionID = adapter, req.SessionID
	return cmd, adapter.NewParser(), tokens.Count(prompt), nil
}

// shellCommand runs a run step through sh -c, except a plain command line
// (words only, nothing the shell would interpret), which runs directly, as
// make does: it saves starting a shell for every step.
func shellCommand(line string) []string {
	if strings.ContainsAny(line, "|&;<>()$`\\\"'*?[]#~=%{}!\n") {
		return []string{"sh", "-c", line}
	}
	words := strings.Fields(line)
	if len(words) == 0 {
		return []string{"sh", "-c", line}
	}
	return words
}

func (r *Runner) start(a StartStep, s State, events chan<- Event) *execution {
	phase := &r.Plan.Phases[a.Phase]
	step := &phase.Steps[a.Step]
	timeLimit, tokenLimit := limits(phase, step)
	e := &execution{r: r, events: events,
		info: StepInfo{Phase: phase.Name, PhaseIndex: a.Phase, Phases: len(r.Plan.Phases), Step: step.Name,
			Attempt: a.Attempt, TimeLimit: timeLimit, TokenLimit: tokenLimit},
		timeout: time.Duration(step.Timeout.Value), idle: time.Duration(step.IdleTimeout.Value),
		tokensBefore: s.TotalTokens, phaseBefore: s.PhaseElapsed, sessionBefore: s.SessionElapsed,
	}
	var list []triggers.Named
	for _, t := range phase.PauseWhen {
		if t.Expr.Compiled != nil {
			list = append(list, triggers.Named{Name: t.Name, Expr: t.Expr.Compiled})
		}
	}
	e.monitor = triggers.NewMonitor(list)
	e.monitor.Env = triggers.Env{TotalTokens: s.TotalTokens, CostUSD: s.CostUSD, PhaseElapsed: s.PhaseElapsed,
		SessionElapsed: s.SessionElapsed, Errors: s.Errors, ConsecutiveErrors: s.ConsecutiveErrors,
		Attempt: a.Attempt, Phase: phase.Name, Step: step.Name, Steps: s.Steps, FilesChanged: s.FilesChanged,
		Spec: r.Plan.SpecValues}

	if a.Note != "" {
		r.View.Say("%s", a.Note)
	}
	r.lastAdapter, r.lastSessionID = nil, ""
	cmd, parser, promptTokens, err := r.command(a, s, step)
	e.parser, e.adapter, e.askedSession = parser, r.lastAdapter, r.lastSessionID
	if step.Agent != nil {
		e.agentName = agentName(step.Agent.Value)
	}
	if r.Git != nil {
		e.headBefore = s.Phases[a.Phase].HeadBefore
		if e.headBefore == "" {
			e.headBefore, _ = r.Git("")
		}
	}
	if step.Agent != nil {
		e.info.What = "agent " + step.Agent.Value.Kind
		e.promptTokens = promptTokens
	} else {
		e.info.What = "run: " + step.Run
	}
	if err == nil {
		e.file, err = r.Recorder.Transcript(phase.Name, a.Attempt, step.Name)
	}
	e.started = r.Clock.Now()
	e.lastOutput = e.started
	r.View.StepStarted(e.info)
	if err == nil {
		e.transcript = bufio.NewWriterSize(e.file, 64<<10)
		e.proc, err = steps.Start(cmd)
	}
	if err != nil {
		// The step could not start: it failed, as a missing program does
		// in a shell.
		r.View.Say("cannot start step %s: %v", step.Name, err)
		if e.file != nil {
			fmt.Fprintf(e.transcript, "pipeline: cannot start step: %v\n", err)
			e.closeTranscript()
		}
		result := StepResult{ExitCode: 127, Output: err.Error()}
		r.View.StepFinished(e.info, result)
		events <- StepFinished{At: r.Clock.Now(), Result: result}
		return nil
	}
	if r.StepProcess != nil {
		r.StepProcess(e.proc.Pid())
	}
	if step.Agent != nil && parser == nil {
		// Plain text output: the tokenizer counts it. An agent CLI with a
		// parser reports its own usage.
		e.tokens = tokens.NewLive()
	}
	e.costBefore = s.CostUSD
	var readers sync.WaitGroup
	readers.Add(2)
	go e.read(e.proc.Stdout, chunkSize, &readers)
	go e.read(e.proc.Stderr, 16<<10, &readers)
	e.mu.Lock()
	e.armTick()
	e.mu.Unlock()
	go e.finish(&readers)
	return e
}

// chunkSize is how much of a step's output is read at once.
const chunkSize = 256 << 10

func (e *execution) read(r io.Reader, size int, done *sync.WaitGroup) {
	defer done.Done()
	var redact RedactStream
	if e.r.NewRedactStream != nil {
		redact = e.r.NewRedactStream()
	}
	consume := e.consume
	if e.parser != nil && size == chunkSize { // stdout of an agent CLI
		consume = e.consumeLines
	}
	if size != chunkSize { // stderr: keep its end for SessionGone
		consume = func(chunk []byte) *Firing {
			e.mu.Lock()
			e.stderr = append(e.stderr, chunk...)
			if len(e.stderr) > 16<<10 {
				e.stderr = append([]byte(nil), e.stderr[len(e.stderr)-16<<10:]...)
			}
			e.mu.Unlock()
			return e.consume(chunk)
		}
	}
	pass := func(chunk []byte) {
		if redact != nil {
			chunk = redact.Write(chunk)
		}
		if len(chunk) == 0 {
			return
		}
		if f := consume(chunk); f != nil {
			e.events <- TriggerFired{At: f.At, Firing: *f}
		}
	}
	buf := make([]byte, size)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			pass(buf[:n])
		}
		if err != nil {
			if redact != nil {
				if rest := redact.Flush(); len(rest) > 0 {
					if f := consume(rest); f != nil {
						e.events <- TriggerFired{At: f.At, Firing: *f}
					}
				}
			}
			if e.parser != nil && size == chunkSize {
				e.mu.Lock()
				pending := len(e.lines) > 0
				e.mu.Unlock()
				if pending {
					// A last line without its newline.
					if f := e.consumeLines([]byte("\n")); f != nil {
						e.events <- TriggerFired{At: f.At, Firing: *f}
					}
				}
			}
			return
		}
	}
}

// consume is the hot path: every chunk of output passes here once.
func (e *execution) consume(chunk []byte) *Firing {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.transcript.Write(chunk)
	e.r.View.Output(chunk)
	e.scanner.Write(chunk)
	e.lastOutput = e.r.Clock.Now()
	m := e.monitor
	if e.scanner.Found {
		m.Env.Checkpoint, m.Env.CheckpointNote = true, e.scanner.CheckpointNote()
		m.Changed(triggers.VarCheckpoint)
	}
	if m.Needs(triggers.VarOutput) {
		m.Env.Output = e.scanner.Tail()
		m.Changed(triggers.VarOutput)
	}
	if e.tokens != nil {
		e.tokens.Write(chunk)
		m.SetTokens(e.promptTokens+e.tokens.Count(), e.tokensBefore)
	}
	return e.check()
}

// consumeLines reads an agent CLI's machine output: each line, kept as
// it is in the transcript, becomes events through the adapter's parser;
// the text the agent writes is shown and scanned for the checkpoint
// marker, its usage and session id are taken as they come.
func (e *execution) consumeLines(chunk []byte) *Firing {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.transcript.Write(chunk)
	e.lastOutput = e.r.Clock.Now()
	e.lines = append(e.lines, chunk...)
	m := e.monitor
	for {
		i := bytes.IndexByte(e.lines, '\n')
		if i < 0 {
			break
		}
		line := e.lines[:i]
		for _, ev := range e.parser.Line(line) {
			switch ev.Kind {
			case steps.EventText, steps.EventError:
				if ev.Kind == steps.EventError {
					e.errText = ev.Text
					if ev.RateLimited {
						e.rateLimited, e.resumeAfter = true, ev.ResumeAfter
					}
				}
				text := []byte(ev.Text)
				e.r.View.Output(text)
				e.scanner.Write(text)
				if e.scanner.Found {
					m.Env.Checkpoint, m.Env.CheckpointNote = true, e.scanner.CheckpointNote()
					m.Changed(triggers.VarCheckpoint)
				}
			case steps.EventUsage:
				e.usage = ev
				m.SetTokens(ev.InputTokens+ev.OutputTokens, e.tokensBefore)
				if ev.ContextTokens != m.Env.ContextTokens {
					m.Env.ContextTokens = ev.ContextTokens
					m.Changed(triggers.VarContextTokens)
				}
				if cost := e.costBefore + ev.CostUSD; cost != m.Env.CostUSD {
					m.Env.CostUSD = cost
					m.Changed(triggers.VarCostUSD)
				}
			case steps.EventSession:
				e.sessionID = ev.SessionID
			}
		}
		e.lines = e.lines[i+1:]
	}
	e.lines = append([]byte(nil), e.lines...)
	if m.Needs(triggers.VarOutput) {
		m.Env.Output = e.scanner.Tail()
		m.Changed(triggers.VarOutput)
	}
	return e.check()
}

// check evaluates the live triggers; it returns the firing to report, at
// most once per step. Called with e.mu held.
func (e *execution) check() *Firing {
	if e.fired || e.done {
		return nil
	}
	named, err := e.monitor.Check()
	if named == nil && err == nil {
		return nil
	}
	e.fired = true
	now := e.r.Clock.Now()
	if err != nil {
		return &Firing{Reason: ReasonExpressionError, Note: err.Error(), At: now}
	}
	f := &Firing{Reason: named.Name, Expression: named.Expr.Source, Values: e.monitor.Env.Values(named.Expr.Reads), At: now}
	if e.monitor.Env.Checkpoint {
		f.Note = e.monitor.Env.CheckpointNote
	}
	return f
}

func (e *execution) armTick() {
	tick := e.r.Tick
	if tick <= 0 {
		tick = 100 * time.Millisecond
	}
	e.stopTick = e.r.Clock.AfterFunc(tick, e.onTick)
}

// onTick moves the clock variables, enforces timeout and idle_timeout, and
// shows progress.
func (e *execution) onTick() {
	e.mu.Lock()
	if e.done {
		e.mu.Unlock()
		return
	}
	now := e.r.Clock.Now()
	elapsed := now.Sub(e.started)
	e.monitor.SetElapsed(elapsed, e.phaseBefore, e.sessionBefore)
	timedOut := !e.timedOut && !e.stopped &&
		((e.timeout > 0 && elapsed >= e.timeout) || (e.idle > 0 && now.Sub(e.lastOutput) >= e.idle))
	if timedOut {
		e.timedOut = true
	}
	fired := e.check()
	e.r.View.Progress(Progress{Elapsed: elapsed, Tokens: e.monitor.Env.Tokens})
	// The transcript reaches its file at every tick, for logs -f; a flush
	// of an empty buffer costs nothing.
	if err := e.transcript.Flush(); err != nil && !e.flushFailed {
		e.flushFailed = true
		e.r.View.Say("pipeline: writing the transcript: %v", err)
	}
	e.armTick()
	e.mu.Unlock()
	if timedOut {
		go e.proc.Stop(e.r.Grace)
	}
	if fired != nil {
		e.events <- TriggerFired{At: fired.At, Firing: *fired}
	}
}

// stop ends the step gracefully (or at once when now is set), because a
// trigger or a human asked.
func (e *execution) stop(grace time.Duration, now bool) {
	e.mu.Lock()
	e.stopped = true
	e.mu.Unlock()
	if now {
		grace = 0
	}
	go e.proc.Stop(grace)
}

func (e *execution) closeTranscript() {
	if err := e.transcript.Flush(); err != nil {
		e.r.View.Say("pipeline: writing the transcript: %v", err)
	}
	if err := e.file.Close(); err != nil {
		e.r.View.Say("pipeline: closing the transcript: %v", err)
	}
}

// finish waits for the step's end and reports it.
func (e *execution) finish(readers *sync.WaitGroup) {
	code, waitErr := e.proc.Wait()
	readers.Wait()
	if e.r.StepProcess != nil {
		e.r.StepProcess(0)
	}
	e.mu.Lock()
	e.done = true
	e.stopTick()
	if waitErr != nil {
		fmt.Fprintf(e.transcript, "pipeline: %v\n", waitErr)
	}
	tokens := e.usage.InputTokens + e.usage.OutputTokens
	if e.tokens != nil {
		tokens = e.promptTokens + e.tokens.Close()
	}
	result := StepResult{ExitCode: code, TimedOut: e.timedOut, Stopped: e.stopped && !e.timedOut,
		Tokens: tokens, ContextTokens: e.usage.ContextTokens, CostUSD: e.usage.CostUSD, SessionID: e.sessionID,
		Elapsed: e.r.Clock.Now().Sub(e.started), Output: e.scanner.Tail(),
		Checkpoint: e.scanner.Checkpoint, CheckpointNote: e.scanner.CheckpointNote(),
		Agent: e.agentName, Error: e.errText, RateLimited: e.rateLimited, ResumeAfter: e.resumeAfter}
	if checker, ok := e.adapter.(steps.SessionChecker); ok && e.askedSession != "" && code != 0 &&
		!e.stopped && checker.SessionGone(e.stderr, code) {
		result.SessionLost = true
	}
	e.closeTranscript()
	e.mu.Unlock()
	if e.r.Git != nil {
		result.HeadBefore = e.headBefore
		result.Head, result.Files = e.r.Git(e.headBefore)
		result.FilesChanged = len(result.Files)
	}
	e.r.View.StepFinished(e.info, result)
	e.events <- StepFinished{At: e.r.Clock.Now(), Result: result}
}
