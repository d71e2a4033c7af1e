package local

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/clock"
	"github.com/pipeline-dev/pipeline/internal/tokens"
	"github.com/pipeline-dev/pipeline/steps"
	"github.com/pipeline-dev/pipeline/triggers"
)

// StepRunner runs the steps of one session, one StartStep (or Compact) at
// a time: it builds the step's command (a shell line, or an agent's turn
// with its native session and resume context), opens its transcript,
// runs it through the step executor with the phase's pause_when triggers
// evaluated live, and turns what it left into an engine.StepResult. Every
// driver runs steps through it: the local loop, and the Temporal activity
// (engine/temporal), so that a step runs the same wherever it runs.
type StepRunner struct {
	Session  *session.Session
	Plan     *spec.Plan
	View     View
	Clock    clock.Clock
	Executor *steps.Executor
	// Grace is the time between interrupting a step and killing it.
	Grace time.Duration
	// Fired is told that a pause_when trigger became true while the step
	// ran. It is called from the executor's goroutine, which holds its
	// lock: it must not block.
	Fired func(engine.TriggerFired)
	// Markers, when set, gets the working-set markers ([DECISION], [FACT]
	// …) an agent step of phase prints, as it prints them; it must not
	// block.
	Markers func(phase string) func(steps.Marker)
	// scopeUnchecked: the runner said once that the work folder is not in
	// a git work tree, so that writes: cannot be checked.
	scopeUnchecked bool
	// left is the work tree as the step of leftExecution left it:
	// the snapshot its files_changed was counted against (leftBy).
	leftMu        sync.Mutex
	left          seenTree
	leftExecution int
}

// seenTree is a snapshot of the work tree, and the count of the
// session's own writes to the work tree (session.WorkTreeWrites) before
// it was taken: while the count stays, nothing of the session's wrote
// the work tree since, and a snapshot taken now would be the same tree
// (see session.WorkTree).
type seenTree struct {
	now    session.WorkTree
	writes int64
}

// still is the snapshot, or zero when the session wrote the work tree
// since it was taken.
func (s seenTree) still(sess *session.Session) session.WorkTree {
	if s.now.Tree == "" || sess.WorkTreeWrites() != s.writes {
		return session.WorkTree{}
	}
	return s.now
}

// leave keeps the snapshot the step of execution was last looked at
// with, for leftBy.
func (r *StepRunner) leave(execution int, left seenTree) {
	r.leftMu.Lock()
	r.left, r.leftExecution = left, execution
	r.leftMu.Unlock()
}

// leftBy is the snapshot of the work tree the step of execution was
// last looked at with (zero when none was taken, or another step ran
// since), once.
func (r *StepRunner) leftBy(execution int) seenTree {
	r.leftMu.Lock()
	defer r.leftMu.Unlock()
	left, by := r.left, r.leftExecution
	r.left, r.leftExecution = seenTree{}, 0
	if execution == 0 || by != execution {
		return seenTree{}
	}
	return left
}

func (r *StepRunner) say(format string, args ...any) { r.View.Say(format, args...) }

// RunStep runs the step a asks for and waits for its end. Cancelling ctx
// stops the step gracefully, as Ctrl+C does (interrupt, grace, kill): its
// result is then Stopped.
func (r *StepRunner) RunStep(ctx context.Context, a engine.StartStep, s engine.State) engine.StepResult {
	done := make(chan engine.StepResult, 1)
	current := r.Start(ctx, a, s, func(res engine.StepResult) { done <- res })
	if current != nil {
		stop := context.AfterFunc(ctx, func() { current.Stop(false) })
		defer stop()
	}
	return <-done
}

// RunCompaction runs the compaction turn a asks for and waits for its
// end; cancelling ctx stops it gracefully.
func (r *StepRunner) RunCompaction(ctx context.Context, a engine.Compact, s engine.State) engine.Compacted {
	done := make(chan engine.Compacted, 1)
	current := r.Compact(ctx, a, s, func(ev engine.Compacted) { done <- ev })
	if current != nil {
		stop := context.AfterFunc(ctx, func() { current.Stop(false) })
		defer stop()
	}
	return <-done
}

func (r *StepRunner) markerSink(phase string) func(steps.Marker) {
	if r.Markers == nil {
		return nil
	}
	return r.Markers(phase)
}

// StepRun is a step running: it can be stopped before and after its
// process starts.
type StepRun struct {
	grace   time.Duration
	cancel  context.CancelFunc
	mu      sync.Mutex
	running *steps.Running
}

// Stop ends the step gracefully, or at once.
func (s *StepRun) Stop(now bool) {
	s.mu.Lock()
	running := s.running
	s.mu.Unlock()
	if now && running != nil {
		running.Stop(0)
		return
	}
	s.cancel()
}

// turn is how an agent step is called: the adapter's command and parser.
type turn struct {
	command      steps.Command
	parser       steps.Parser
	checker      steps.SessionChecker
	askedSession string
	promptTokens int
	agentName    string
	// prompt is the text the agent is sent, kept with the transcript.
	prompt string
	// contextSent and contextReplaced account for the resume context the
	// prompt began with (engine.StepResult.ContextSent).
	contextSent, contextReplaced int
}

// prompt is what the agent is asked: the step's prompt and where the spec
// is.
func (r *StepRunner) prompt(step *spec.StepPlan) string {
	text := step.Prompt.Value
	if r.Plan.Spec != "" {
		text += "\n\nSpec: " + r.specPath(true)
	}
	return text + "\n\n" + engine.MarkerHint
}

// specPath is the plan's spec relative to the folder where steps run (as
// the agent is told it), or absolute with no link in it (for
// PIPELINE_SPEC, which must hold wherever the step changes directory to,
// and be the same on every run).
func (r *StepRunner) specPath(relative bool) string {
	abs, err := filepath.Abs(r.Plan.Spec)
	if err != nil {
		return r.Plan.Spec
	}
	if !relative {
		// The same path on every run of the session, whatever link to
		// the project's folder the run was started through.
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			return real
		}
		return abs
	}
	if rel, err := filepath.Rel(r.Session.Dir(), abs); err == nil {
		return rel
	}
	return abs
}

// prepare builds the command of a step: a shell line, or a turn of an
// agent prepared by its adapter from a request.
func (r *StepRunner) prepare(a engine.StartStep, s engine.State, step *spec.StepPlan) (turn, error) {
	return r.prepareTurn(a, s, step, "")
}

// prepareTurn is prepare; a compaction prompt, when set, is sent as it is
// to the native session a names, instead of the step's prompt.
func (r *StepRunner) prepareTurn(a engine.StartStep, s engine.State, step *spec.StepPlan, compaction string) (turn, error) {
	phase := &r.Plan.Phases[a.Phase]
	dir := r.Session.Dir()
	env := append(os.Environ(),
		"PIPELINE_PHASE="+phase.Name, "PIPELINE_STEP="+step.Name, fmt.Sprintf("PIPELINE_ATTEMPT=%d", a.Attempt))
	if r.Plan.Spec != "" {
		env = append(env, "PIPELINE_SPEC="+r.specPath(false))
	}
	// TRACEPARENT and the like: the step joins the session's trace.
	env = append(env, r.Session.StepEnv()...)
	// The session's mark comes last, so that no agent env can replace it:
	// by it the step's daemons are found when the step ends.
	mark := session.StepMark(r.Session.ID())
	if step.Agent == nil {
		args, path := shellCommand(step.Run)
		return turn{command: steps.Command{Args: args, Path: path, Dir: dir, Env: append(env, mark), Mark: mark}}, nil
	}
	agent := step.Agent.Value
	t := turn{agentName: engine.AgentName(agent)}
	adapter, err := steps.AdapterFor(agent.Kind)
	if err != nil {
		return t, err
	}
	for _, k := range slices.Sorted(maps.Keys(agent.Env)) {
		env = append(env, k+"="+agent.Env[k])
	}
	req := steps.Request{Kind: agent.Kind, Model: agent.Model, Command: agent.Command, Args: agent.Args,
		SessionID: a.SessionID, Fork: a.Fork, Dir: dir, Env: env, ReadOnly: phase.Writes != nil && len(phase.Writes.Value) == 0}
	switch {
	case a.Fork && steps.CanFork(adapter) && a.ForkOnly:
		r.say("the %s session %s, as phase %s started, is resumed as a fork", agent.Kind, a.SessionID, phase.Name)
	case a.Fork && !steps.CanFork(adapter):
		// The CLI resumes a session as it is now: what went on since the
		// phase started would come back with it.
		req.Fork = false
		if a.ForkOnly {
			r.say("the %s CLI cannot fork its session %s back to where phase %s started: a fresh session starts with the resume context", agent.Kind, a.SessionID, phase.Name)
			req.SessionID = ""
		}
	}
	if recoverer, ok := adapter.(steps.Recoverer); ok && a.Recover {
		if id, found := recoverer.Recover(agent.Feature, req, env); found {
			r.say("adopting the %s session %s of feature %s: the session store had none", agent.Kind, id, agent.Feature)
			req.SessionID = id
		}
	}
	prompt := r.prompt(step)
	if compaction != "" {
		prompt = compaction
	}
	if a.ResumeContext {
		text, warning := r.Session.ResumeContext(s, a)
		if warning != "" {
			r.say("pipeline: %s", warning)
		}
		if text != "" {
			prompt = text + "\n\n" + prompt
			t.contextSent = tokens.Count(text)
		}
	}
	if req.SessionID == "" && !a.ResumeContext && compaction == "" {
		// A fresh conversation with no resume context still learns what
		// the project pinned for every session.
		facts, err := r.Session.ProjectFacts()
		if err != nil {
			r.say("pipeline: %v; the project's facts are left out of this prompt", err)
		}
		if facts != "" {
			prompt = facts + "\n\n" + prompt
		}
	}
	if req.SessionID == "" && agent.Feature != "" && compaction == "" {
		// The first prompt of a native session names its feature, so that
		// the session can be found again if the store is lost.
		prompt = steps.FeatureHeader(agent.Feature) + "\n\n" + prompt
	}
	req.Prompt = prompt
	if t.contextSent > 0 {
		if req.SessionID == "" {
			// A fresh native session: the context stands for the
			// conversation it does not carry on.
			t.contextReplaced = s.LastContext[a.SessionKey]
			if t.contextReplaced == 0 {
				t.contextReplaced = s.TotalTokens
			}
		}
	}
	prepared, err := adapter.Prepare(req)
	if err != nil {
		return t, err
	}
	t.command = steps.Command{Args: prepared.Args, Dir: dir, Env: append(env, mark), Mark: mark}
	if prepared.Stdin != "" {
		t.command.Stdin = strings.NewReader(prepared.Stdin)
	}
	t.parser = prepared.Parser
	t.checker, _ = adapter.(steps.SessionChecker)
	t.askedSession = req.SessionID
	t.promptTokens = tokens.Count(prompt)
	t.prompt = prompt
	return t, nil
}

// shellCommand runs a run step through sh -c, except a plain command line
// (words only, nothing the shell would interpret), which runs directly, as
// make does: it saves starting a shell for every step. path is the
// program's file when it was looked up on PATH here, so that the start
// does not look again.
func shellCommand(line string) (args []string, path string) {
	if strings.ContainsAny(line, "|&;<>()$`\\\"'*?[]#~=%{}!\n") {
		return []string{"sh", "-c", line}, ""
	}
	words := strings.Fields(line)
	if len(words) == 0 {
		return []string{"sh", "-c", line}, ""
	}
	if !strings.Contains(words[0], "/") {
		found, err := exec.LookPath(words[0])
		if err != nil {
			// A builtin of the shell (exit 1, cd, export), or a program
			// that is not there: the shell runs the one and says the
			// other is not found.
			return []string{"sh", "-c", line}, ""
		}
		return words, found
	}
	return words, ""
}

// startProblem says why program could not start, naming it and the PATH
// it was looked for on: the one thing to fix.
func startProblem(err error, program string) string {
	path := os.Getenv("PATH")
	if errors.Is(err, exec.ErrNotFound) {
		return fmt.Sprintf("%q was not found on PATH (PATH=%s): install it, or put the folder that holds it on PATH", program, path)
	}
	return fmt.Sprintf("%v (PATH=%s)", err, path)
}

// shellNotFound recognises a run step whose shell could not find (127) or
// run (126) the program the line names: as sure a failure to start as
// exec's, and no more helped by a retry. It returns the shell's words.
func shellNotFound(args []string, res steps.Result) string {
	if len(args) < 3 || args[0] != "sh" || res.Stopped || res.TimedOut || (res.ExitCode != 127 && res.ExitCode != 126) {
		return ""
	}
	out := strings.TrimSpace(res.Output)
	if i := strings.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	if !strings.Contains(out, "not found") && !strings.Contains(out, "Permission denied") && !strings.Contains(out, "No such file") {
		return ""
	}
	return fmt.Sprintf("%s (exit %d; PATH=%s)", out, res.ExitCode, os.Getenv("PATH"))
}

// Start runs the step a asks for in the background, s being the state
// that asked; finished gets its result (from another goroutine, unless
// the step could not start: then at once, and Start returns nil).
func (r *StepRunner) Start(ctx context.Context, a engine.StartStep, s engine.State, finished func(engine.StepResult)) *StepRun {
	phase := &r.Plan.Phases[a.Phase]
	step := &phase.Steps[a.Step]
	timeLimit, tokenLimit := Limits(phase, step)
	info := StepInfo{Phase: phase.Name, PhaseIndex: a.Phase, Phases: len(r.Plan.Phases), Step: step.Name,
		Attempt: a.Attempt, TimeLimit: timeLimit, TokenLimit: tokenLimit, What: "run: " + step.Run}
	if step.Agent != nil {
		info.What = "agent " + step.Agent.Value.Kind
	}
	if a.Note != "" {
		r.say("%s", a.Note)
	}
	t, err := r.prepare(a, s, step)
	var transcript *store.Transcript
	if err == nil {
		transcript, err = r.Session.Transcript(phase.Name, a.Attempt, step.Name)
	}
	if err == nil {
		r.markRunAgain(transcript, a, s)
	}
	if err == nil && t.prompt != "" {
		if err := r.Session.RecordPrompt(phase.Name, a.Attempt, step.Name, t.prompt); err != nil {
			r.say("pipeline: keeping the prompt sent: %v", err)
		}
	}
	r.View.StepStarted(info)
	if err != nil {
		// The step could not start: it failed, as a missing program does
		// in a shell.
		r.say("cannot start step %s: %v", step.Name, err)
		result := engine.StepResult{ExitCode: 127, Output: err.Error(), Agent: t.agentName, NotStarted: true, Error: err.Error()}
		r.View.StepFinished(info, result)
		finished(result)
		return nil
	}
	stepCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	current := &StepRun{grace: r.Grace, cancel: cancel}
	obs := r.observer(a, s, phase, step, current)
	run := steps.Step{Command: t.command, Parser: t.parser, CountTokens: step.Agent != nil && t.parser == nil,
		PromptTokens: t.promptTokens, SessionChecker: t.checker, AskedSession: t.askedSession, Transcript: transcript,
		Timeout: time.Duration(step.Timeout.Value), IdleTimeout: time.Duration(step.IdleTimeout.Value), Grace: r.Grace,
		Redact: func() steps.RedactStream { return r.Session.Redactor().NewStream() }}
	if step.Agent != nil {
		run.Markers = r.markerSink(phase.Name)
	}
	git := r.Session.Git()
	headBefore, treeBefore := s.Phases[a.Phase].HeadBefore, s.Phases[a.Phase].TreeBefore
	scope := r.scope(phase, git)
	go func() {
		defer cancel()
		stepTree := ""
		if git != nil && headBefore == "" && treeBefore == "" {
			// The phase starts: files_changed counts from the work tree
			// as it is now, files already changed included. Taken before
			// the step's process starts, so that none of its writes is
			// taken for the tree before it. Always a new look, never one
			// handed on (the checkpoint's just before): a file written
			// by someone else in between is no change of the step's
			// (its write scope would put it back).
			headBefore, treeBefore = git.Snapshot()
			stepTree = treeBefore
		}
		if scope != nil && stepTree == "" {
			// The write scope judges the step's own changes.
			_, stepTree = git.Snapshot()
		}
		res, err := r.Executor.Execute(stepCtx, run, obs)
		notStarted := ""
		if err != nil {
			notStarted = startProblem(err, t.command.Args[0])
			r.say("cannot start step %s: %s", step.Name, notStarted)
		} else {
			r.Session.StepProcess(0)
			notStarted = shellNotFound(t.command.Args, res)
		}
		r.Session.SetLive(session.Live{})
		if err := transcript.Close(); err != nil {
			r.say("pipeline: closing the transcript: %v", err)
		}
		result := engine.StepResult{ExitCode: res.ExitCode, TimedOut: res.TimedOut, Stopped: res.Stopped,
			Tokens: res.Tokens, InputTokens: res.InputTokens, OutputTokens: res.OutputTokens, ContextTokens: res.ContextTokens, CostUSD: res.CostUSD, Elapsed: res.Elapsed,
			Output: res.Output, Checkpoint: res.Checkpoint, CheckpointNote: res.CheckpointNote, SessionID: res.SessionID,
			Agent: t.agentName, SessionLost: res.SessionLost, RateLimited: res.RateLimited, ResumeAfter: res.ResumeAfter,
			Error: res.Error, OutputHeld: res.OutputHeld, ContextSent: t.contextSent, ContextReplaced: t.contextReplaced}
		if notStarted != "" {
			result.NotStarted, result.Error = true, notStarted
		}
		for _, l := range res.Leftovers {
			result.Leftovers = append(result.Leftovers, l.String())
		}
		left := seenTree{writes: r.Session.WorkTreeWrites()}
		if scope != nil {
			// Before files_changed is counted: a revert undoes the change.
			result.OutOfScope, result.Reverted, left.now = r.checkScope(git, stepTree, phase, step.Name)
		}
		if git != nil {
			result.HeadBefore, result.TreeBefore = headBefore, treeBefore
			result.Head, result.Files, left.now = git.Changed(headBefore, treeBefore, left.now)
			result.FilesChanged = len(result.Files)
			r.leave(a.Execution, left)
		}
		r.View.StepFinished(info, result)
		finished(result)
	}()
	return current
}

// markRunAgain writes a line in a transcript that already holds a run of
// the same attempt of the step (the step paused and was resumed, its
// runner died, its native session was lost), where the next run starts:
// when, what it was resumed from, and the human's notes.
func (r *StepRunner) markRunAgain(transcript *store.Transcript, a engine.StartStep, s engine.State) {
	if size, err := transcript.Size(); err != nil || size == 0 {
		return
	}
	line := "--- run again at " + r.Clock.Now().Format("2006-01-02 15:04:05 MST")
	from := a.Resuming
	if from == nil {
		// A run step leaves the resumption to the next agent step.
		from = s.Resuming
	}
	if from != nil {
		line = "--- resumed at " + r.Clock.Now().Format("2006-01-02 15:04:05 MST")
		if reason := from.Firing.Reason; reason != "" {
			line += " after " + reason
		}
		if notes := strings.Join(strings.Fields(from.Notes), " "); notes != "" {
			line += " (notes: " + notes + ")"
		}
	}
	if _, err := transcript.WriteString("\n" + r.Session.Redactor().String(line) + " ---\n"); err != nil {
		r.say("pipeline: writing the transcript: %v", err)
	}
}

// observer evaluates a step's pause_when triggers as its output and time
// go by: the executor tells it the live values, it tells the loop a
// trigger fired.
type observer struct {
	r       *StepRunner
	current *StepRun
	// pauseWhen are the phase's triggers, and env what they read as the
	// step starts: watch makes the monitor of them.
	pauseWhen []spec.TriggerPlan
	env       triggers.Env
	monitor   *triggers.Monitor
	// What the session had used before this step.
	tokensBefore               int
	costBefore                 float64
	phaseBefore, sessionBefore time.Duration
	fired                      bool
	// decided is the trigger (or the error) that Checkpoint found, for
	// the next Observe to report.
	decided     *triggers.Named
	decidedErr  error
	tailWanting bool
	// execution is the step's number (StartStep.Execution), which its
	// firing carries.
	execution int
}

func (r *StepRunner) observer(a engine.StartStep, s engine.State, phase *spec.PhasePlan, step *spec.StepPlan, current *StepRun) *observer {
	env := triggers.Env{TotalTokens: s.TotalTokens, CostUSD: s.CostUSD, PhaseElapsed: s.PhaseElapsed,
		SessionElapsed: s.SessionElapsed, Errors: s.Errors, ConsecutiveErrors: s.ConsecutiveErrors,
		Attempt: a.Attempt, Phase: phase.Name, Step: step.Name, Steps: s.Steps, FilesChanged: s.FilesChanged,
		Spec: r.Plan.SpecValues}
	return &observer{r: r, current: current, pauseWhen: phase.PauseWhen, env: env, tokensBefore: s.TotalTokens, costBefore: s.CostUSD,
		phaseBefore: s.PhaseElapsed, sessionBefore: s.SessionElapsed, execution: a.Execution}
}

// watch makes the monitor of the phase's pause_when triggers, compiling
// each the first time a run needs it. Called once the step's process has
// started (Started), before anything is observed: the compiling (some
// 0.2 ms for the built-in triggers) then runs while the process starts,
// not before it.
func (o *observer) watch() {
	var list []triggers.Named
	for _, t := range o.pauseWhen {
		if t.Expr.Program() != nil {
			list = append(list, triggers.Named{Name: t.Name, Expr: t.Expr.Program()})
		}
	}
	o.monitor = triggers.NewMonitor(list)
	o.monitor.Env = o.env
	o.tailWanting = o.monitor.Needs(triggers.VarOutput)
}

func (o *observer) Started(running *steps.Running) {
	o.current.mu.Lock()
	o.current.running = running
	o.current.mu.Unlock()
	o.r.Session.StepProcess(running.Pid())
	o.watch()
}

func (o *observer) Output(text []byte) { o.r.View.Output(text) }

func (o *observer) Warn(message string) { o.r.say("pipeline: %s", message) }

func (o *observer) Observe(live *steps.Live) {
	m := o.monitor
	m.SetTokens(live.Tokens, o.tokensBefore)
	if live.ContextTokens != m.Env.ContextTokens {
		m.Env.ContextTokens = live.ContextTokens
		m.Changed(triggers.VarContextTokens)
	}
	if cost := o.costBefore + live.CostUSD; cost != m.Env.CostUSD {
		m.Env.CostUSD = cost
		m.Changed(triggers.VarCostUSD)
	}
	if live.Checkpoint && (!m.Env.Checkpoint || live.CheckpointNote != m.Env.CheckpointNote) {
		m.Env.Checkpoint, m.Env.CheckpointNote = true, live.CheckpointNote
		m.Changed(triggers.VarCheckpoint)
	}
	if live.NewOutput && o.tailWanting {
		m.Env.Output = live.Tail()
		m.Changed(triggers.VarOutput)
	}
	if !live.NewOutput {
		m.SetElapsed(live.Elapsed, o.phaseBefore, o.sessionBefore)
		o.r.View.Progress(Progress{Elapsed: live.Elapsed, Tokens: m.Env.Tokens})
		o.r.Session.SetLive(session.Live{At: o.r.Clock.Now(), Phase: m.Env.Phase, Step: m.Env.Step, Attempt: m.Env.Attempt,
			StepTokens: m.Env.Tokens, TotalTokens: m.Env.TotalTokens, CostUSD: m.Env.CostUSD,
			StepElapsed: live.Elapsed, SessionElapsed: m.Env.SessionElapsed})
	}
	if o.decided != nil {
		o.report(o.decided, o.decidedErr)
		o.decided, o.decidedErr = nil, nil
	}
	if o.fired {
		return
	}
	named, err := m.Check()
	if named == nil && err == nil {
		return
	}
	o.fired = true
	o.report(named, err)
}

// Checkpoint decides on a checkpoint line as it ends, before the output
// goes on (steps.CheckpointDecider): the triggers that read checkpoint are
// evaluated, and a firing stops the step at once, as Decide does with any
// firing of the running step. The firing is reported by the next Observe,
// once the step is interrupted.
func (o *observer) Checkpoint(note string) bool {
	if o.fired {
		return false
	}
	m := o.monitor
	m.Env.Checkpoint, m.Env.CheckpointNote = true, note
	m.Changed(triggers.VarCheckpoint)
	named, err := m.Check()
	if named == nil && err == nil {
		return false
	}
	o.fired, o.decided, o.decidedErr = true, named, err
	return true
}

// report tells the loop that the trigger named fired (or failed with err).
func (o *observer) report(named *triggers.Named, err error) {
	m := o.monitor
	f := engine.Firing{Reason: engine.ReasonExpressionError, At: o.r.Clock.Now()}
	if err != nil {
		f.Note = err.Error()
	} else {
		f.Reason, f.Expression, f.Values = named.Name, named.Expr.Source, m.Env.Values(named.Expr.Reads)
		if m.Env.Checkpoint {
			f.Note = m.Env.CheckpointNote
		}
	}
	ev := engine.TriggerFired{At: f.At, Firing: f, Execution: o.execution}
	// The executor holds its lock while it observes: Fired never blocks.
	if o.r.Fired != nil {
		o.r.Fired(ev)
	}
}
