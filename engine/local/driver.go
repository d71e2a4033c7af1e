// Package local is the local driver: a loop over the events of one session
// that calls engine.Decide and carries out its actions here, with real
// processes through the step executor, a clock for back-off, and OS
// signals turned into pause requests. It takes a context: cancelling it
// pauses the session cleanly.
package local

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/clock"
	"github.com/pipeline-dev/pipeline/internal/tokens"
	"github.com/pipeline-dev/pipeline/steps"
	"github.com/pipeline-dev/pipeline/triggers"
)

// Interrupt is a request to pause: Ctrl+C, SIGTERM, a closed terminal or
// output, or pipeline pause with the human's notes.
type Interrupt struct {
	Reason string
	Notes  string
	// Kill stops the running step at once, without its grace (SIGQUIT).
	Kill bool
	// Cause, when set, is said as the request arrives: what happened.
	Cause string
}

// Driver runs sessions on this machine.
type Driver struct {
	View  View
	Clock clock.Clock
	// Grace is the time between interrupting a step and killing it.
	Grace time.Duration
	// Tick is how often time limits and time-based triggers are checked.
	Tick time.Duration
	// Interrupts delivers requests to pause: the first pauses the session
	// gracefully, the second kills the running step at once.
	Interrupts <-chan Interrupt
	// Signals turns signals into interrupts: SIGINT, SIGTERM, SIGHUP (the
	// terminal closed) and SIGPIPE when standard output or error was
	// closed (pipeline run | head) pause; SIGQUIT pauses and kills the
	// step at once. A SIGTERM sent by pipeline pause carries the notes it
	// left in the session. While Run runs, no signal ends the runner
	// before the session is recorded.
	Signals bool
	// Plans delivers new plans for the session while it runs (pipeline
	// watch saw phases.yaml or the spec's frontmatter change): each takes
	// effect from the session's next decision, or is refused, with the
	// reason said, when its phases are not the session's.
	Plans <-chan *spec.Plan
	// HookTimeout bounds each on: hook (session.HookTimeout when 0).
	HookTimeout time.Duration
	// Verbose says each trigger that fires (pause_when, restart_when,
	// escalate_when …) with the values it read, as it fires.
	Verbose bool
}

// Run drives the session with events (the last one starts the run: a
// Started, Resumed or Recovered; those before it, such as notes, are
// recorded first) until it pauses, completes or fails, and returns the
// final state. Cancelling ctx pauses the session (reason interrupted). No
// process of a step outlives Run. The error is set when the session could
// not be recorded.
func (d *Driver) Run(ctx context.Context, sess *session.Session, events ...engine.Event) (engine.State, error) {
	if len(events) == 0 {
		return sess.State(), errors.New("local: Run needs an event to start from")
	}
	if _, err := sess.Apply(events[:len(events)-1]...); err != nil {
		return sess.State(), err
	}
	r := &run{d: d, sess: sess, plan: sess.Plan, clock: d.Clock, events: make(chan engine.Event, 64),
		markers: markerQueue{ready: make(chan struct{}, 1)}}
	if r.clock == nil {
		r.clock = clock.Real{}
	}
	r.executor = &steps.Executor{Clock: r.clock, Tick: d.Tick}
	interrupts, stopSignals := d.interrupts(sess)
	defer stopSignals()
	state, err := r.loop(ctx, events[len(events)-1], interrupts)
	if r.ended {
		// Somebody hears about it, whichever driver ran the session.
		// Signals are still caught: the session is recorded, and a hook
		// is bounded by its timeout.
		sess.RunHooks(ctx, d.HookTimeout, r.say)
	}
	return state, err
}

// interrupts merges the Interrupts channel and, when asked, the signals.
func (d *Driver) interrupts(sess *session.Session) (<-chan Interrupt, func()) {
	if !d.Signals {
		return d.Interrupts, func() {}
	}
	merged := make(chan Interrupt, 2)
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	done := make(chan struct{})
	go func() {
		// outputLost is set once a hang-up or a closed output asked for
		// the pause: every later write raises SIGPIPE again, and must not
		// count as a second Ctrl+C.
		outputLost := false
		for {
			var in Interrupt
			select {
			case <-done:
				return
			case in = <-d.Interrupts: // nil when not set: never ready
			case sig := <-signals:
				switch sig {
				case syscall.SIGHUP, syscall.SIGPIPE:
					// SIGPIPE comes from any write to a closed pipe, a
					// step's standard input too: only a closed output of
					// the runner's own pauses.
					if outputLost || (sig == syscall.SIGPIPE && !OutputClosed()) {
						continue
					}
					outputLost = true
					in.Cause = "the terminal hung up (SIGHUP)"
					if sig == syscall.SIGPIPE {
						in.Cause = "the output was closed (SIGPIPE)"
					}
				case syscall.SIGQUIT:
					in.Kill, in.Cause = true, "quit (SIGQUIT)"
				case syscall.SIGTERM:
					in.Cause = "terminated (SIGTERM)"
				default:
					in.Cause = "interrupted (SIGINT)"
				}
				if notes, ok := sess.PauseRequest(); ok {
					in.Reason, in.Notes = engine.ReasonHuman, notes
				}
			}
			select {
			case merged <- in:
			case <-done:
				return
			}
		}
	}()
	return merged, func() {
		signal.Stop(signals)
		close(done)
	}
}

// run is one call of Driver.Run.
type run struct {
	d        *Driver
	sess     *session.Session
	plan     *spec.Plan
	clock    clock.Clock
	executor *steps.Executor
	events   chan engine.Event
	current  *stepRun
	// ended: the run paused, completed or failed (its on: hooks are
	// owed), rather than asking nothing of a session that cannot move.
	ended bool
	// saidFiring is the last trigger said under Verbose.
	saidFiring *engine.Firing
	// scopeUnchecked: the run said once that the work folder is not in
	// a git work tree, so that writes: cannot be checked.
	scopeUnchecked bool
	// markers are the working-set markers the running step printed and
	// the loop has not recorded yet; markersReady wakes the loop.
	markers markerQueue
}

func (r *run) say(format string, args ...any) { r.d.View.Say(format, args...) }

func (r *run) loop(ctx context.Context, first engine.Event, interrupts <-chan Interrupt) (engine.State, error) {
	var (
		stopSleep func() bool
		forced    bool
		recordErr error
	)
	// recordFailed ends the run after a record failed: what is not
	// recorded is not carried out. It ends paused (store-error) as its
	// files leave it, once the step running has stopped; resume continues
	// from the files.
	recordFailed := func(err error) bool {
		recordErr, r.ended = err, true
		r.say("pipeline: recording the session: %v", err)
		if r.current != nil {
			r.current.stop(false)
			for r.current != nil {
				switch (<-r.events).(type) {
				case engine.StepFinished, engine.Compacted:
					r.current = nil
				}
			}
		}
		if pause := r.sess.State().Pause; pause != nil {
			r.say("paused: %s", DescribeFiring(*pause))
		}
		return true
	}
	// handle decides an event, carries out its actions, and reports
	// whether the run has ended.
	handle := func(ev engine.Event) bool {
		before := r.sess.State()
		state, actions := engine.Decide(r.plan, before, ev)
		// Stopping a step cannot wait for the record: it is the latency
		// from a trigger to the interrupt.
		for _, a := range actions {
			if _, ok := a.(engine.StopStep); ok && r.current != nil {
				r.current.stop(false)
				if w, ok := r.d.View.(WaitView); ok && !forced {
					w.Stopping()
				}
			}
		}
		if err := r.sess.Record(ev, state); err != nil {
			return recordFailed(err)
		}
		if r.d.Verbose {
			r.sayFired(before, state)
		}
		if err := r.checkpoints(ev, before, state); err != nil {
			return recordFailed(err)
		}
		state = r.sess.State()
		for _, a := range actions {
			switch a := a.(type) {
			case engine.StartStep:
				if done := r.plan.Phases[a.Phase].DoneWhen; done != nil && doneWhenFalse(ev, before, state, a) {
					r.say("done_when is false (%s): phase %s runs again (attempt %d)",
						done.Value.Source, r.plan.Phases[a.Phase].Name, a.Attempt)
				}
				r.current = r.start(ctx, a, state)
			case engine.Sleep:
				r.say("retrying in %s (attempt %d)", a.Duration, state.Attempt)
				if w, ok := r.d.View.(WaitView); ok {
					w.Backoff(a.Duration, state.Attempt)
				}
				stopSleep = r.clock.AfterFunc(a.Duration, func() { r.events <- engine.TimerExpired{At: r.clock.Now()} })
			case engine.Compact:
				r.current = r.compact(ctx, a, state)
			case engine.DropSession:
				r.say("restart: the agent's session %s is dropped; the next attempt starts fresh", a.Key)
			case engine.Pause:
				if stopSleep != nil {
					stopSleep()
				}
				r.say("paused: %s", DescribeFiring(a.Firing))
				r.ended = true
				return true
			case engine.Complete:
				r.say("completed: %d phases", len(r.plan.Phases))
				r.ended = true
				return true
			case engine.Fail:
				r.say("failed: %s", a.Reason)
				r.ended = true
				return true
			}
		}
		return false
	}
	state := r.sess.State
	if handle(first) || (r.current == nil && !state().Waiting && !state().StepRunning) {
		// Ended, or the event asked nothing of a session that cannot move
		// (a resume of a session that is not paused): nothing to wait for.
		return state(), recordErr
	}
	cancelled := ctx.Done()
	pause := func(in Interrupt) bool {
		if in.Reason == "" {
			in.Reason = engine.ReasonInterrupted
		}
		return handle(engine.PauseRequested{At: r.clock.Now(), Reason: in.Reason, Notes: in.Notes})
	}
	for {
		select {
		case <-r.markers.ready:
			if ev, ok := r.markers.take(r.clock.Now()); ok && handle(ev) {
				return state(), recordErr
			}
		case ev := <-r.events:
			switch ev.(type) {
			case engine.StepFinished, engine.Compacted:
				r.current = nil
				// What the step printed is the step's: recorded before
				// its end, as the human's changes left meanwhile.
				if marks, ok := r.markers.take(r.clock.Now()); ok && handle(marks) {
					return state(), recordErr
				}
				if err := r.sess.TakeMemoryRequests(r.say); err != nil {
					// Only a record that failed ends the run; requests that
					// cannot be listed or read wait for the next step (a
					// session folder deleted meanwhile fails the record of
					// the step's end, which pauses as store-error).
					if broken := r.sess.StoreFailed(); broken != nil {
						recordFailed(broken)
						return state(), recordErr
					}
					r.say("pipeline: the memory changes left for the session cannot be read now (%v): they wait for the next step", err)
				}
			}
			if handle(ev) {
				return state(), recordErr
			}
		case plan := <-r.d.Plans:
			err := r.sess.SetPlan(r.clock.Now(), plan)
			if broken := r.sess.StoreFailed(); broken != nil {
				recordFailed(broken)
				return state(), recordErr
			}
			if err != nil {
				r.say("%s changed, but this session keeps the plan it had: %v", plan.File, err)
				continue
			}
			r.plan = plan
			r.say("%s changed: this session follows it from its next step", plan.File)
		case <-cancelled:
			cancelled = nil // a closed channel is always ready
			if state().Stopping == nil && pause(Interrupt{}) {
				return state(), recordErr
			}
		case in := <-interrupts:
			switch {
			case in.Cause == "" || (state().Stopping != nil && r.current != nil):
			case r.current != nil && !in.Kill:
				r.say("%s: stopping the step, then pausing (interrupt again to kill it now)", in.Cause)
			default:
				r.say("%s: pausing", in.Cause)
			}
			if in.Kill {
				if state().Stopping == nil && pause(in) {
					return state(), recordErr
				}
				if r.current != nil && !forced {
					forced = true
					r.say("killing the step now")
					r.current.stop(true)
				}
				continue
			}
			if state().Stopping != nil && r.current != nil && !forced {
				forced = true
				r.say("interrupted again: killing the step now")
				r.current.stop(true)
				continue
			}
			if pause(in) {
				return state(), recordErr
			}
		}
	}
}

// sayFired says the triggers that fired between two states, once each: a
// live trigger as it stops the step, and what a decision recorded in the
// phase's history.
func (r *run) sayFired(before, after engine.State) {
	var fired []engine.Firing
	if after.Stopping != nil && (before.Stopping == nil || !sameFiring(*before.Stopping, *after.Stopping)) {
		fired = append(fired, *after.Stopping)
	}
	if after.Phase < len(after.Phases) {
		now := after.Phases[after.Phase].Fired
		start := 0
		if after.Phase < len(before.Phases) {
			if was := before.Phases[after.Phase].Fired; len(was) > 0 {
				start = len(now)
				for i := len(now) - 1; i >= 0; i-- {
					if sameFiring(now[i], was[len(was)-1]) {
						start = i + 1
						break
					}
				}
			}
		}
		fired = append(fired, now[start:]...)
	}
	for _, f := range fired {
		if r.saidFiring != nil && sameFiring(*r.saidFiring, f) {
			continue
		}
		r.say("trigger fired: %s", DescribeFiring(f))
		said := f
		r.saidFiring = &said
	}
}

func sameFiring(a, b engine.Firing) bool {
	return a.Reason == b.Reason && a.At.Equal(b.At) && a.Expression == b.Expression
}

// doneWhenFalse tells whether a StartStep decided on ev starts the phase
// again because its done_when was false: the first step of the same phase,
// a new attempt, after the phase's last step ended, and not a retry.
func doneWhenFalse(ev engine.Event, before, after engine.State, a engine.StartStep) bool {
	if _, ok := ev.(engine.StepFinished); !ok || a.Step != 0 || a.Phase != before.Phase || a.Attempt <= before.Attempt {
		return false
	}
	if a.Phase >= len(before.Phases) || a.Phase >= len(after.Phases) {
		return false
	}
	return after.Phases[a.Phase].Retries == before.Phases[a.Phase].Retries
}

// checkpoints keeps the work tree in git when the session started, when
// a phase completed and when the session paused (checkpoint: in
// phases.yaml), and records each as a Checkpointed event. Taken before
// the next step starts, so that none of its writes gets in. A checkpoint
// git could not make is said, and the run goes on without it; an error
// is the record's.
func (r *run) checkpoints(ev engine.Event, before, after engine.State) error {
	git, mode := r.sess.Git(), r.plan.Checkpoint.Value
	if mode == spec.CheckpointOff {
		return nil
	}
	if git == nil {
		if _, ok := ev.(engine.Started); ok {
			r.say("pipeline: %s is not in a git work tree (or git ignores it): this session keeps no checkpoints (rewind and fork need them)", r.sess.Dir())
		}
		return nil
	}
	take := func(kind string, phase int, name, message string) error {
		var commit string
		var err error
		if kind == engine.CheckpointPhase && mode == spec.CheckpointCommit {
			commit, err = git.Commit(message)
		} else {
			commit, err = git.Checkpoint(session.CheckpointRef(r.sess.ID(), name), message)
		}
		if err != nil {
			r.say("pipeline: no checkpoint %s: %v", name, err)
			return nil
		}
		_, err = r.sess.Apply(engine.Checkpointed{At: r.clock.Now(), Kind: kind, Phase: phase, Commit: commit})
		return err
	}
	id := r.sess.ID()
	if _, ok := ev.(engine.Started); ok && after.Status == engine.StatusRunning {
		if err := take(engine.CheckpointStart, -1, "00-start", fmt.Sprintf("pipeline: session %s started", id)); err != nil {
			return err
		}
	}
	for i := range after.Phases {
		if after.Phases[i].Status == engine.StatusCompleted && (i >= len(before.Phases) || before.Phases[i].Status != engine.StatusCompleted) &&
			after.Phases[i].Checkpoint == "" {
			name := after.Phases[i].Name
			if err := take(engine.CheckpointPhase, i, session.CheckpointName(i, name),
				fmt.Sprintf("pipeline: phase %s completed (session %s)", name, id)); err != nil {
				return err
			}
		}
	}
	if after.Status == engine.StatusPaused && before.Status != engine.StatusPaused && after.Phase < len(after.Phases) {
		name := after.Phases[after.Phase].Name
		if err := take(engine.CheckpointPause, after.Phase, session.CheckpointName(after.Phase, name)+"-paused",
			fmt.Sprintf("pipeline: session %s paused in phase %s", id, name)); err != nil {
			return err
		}
	}
	return nil
}

// DescribeFiring says what fired, as the paused: line shows it: the
// reason, its expression and the values it read, and the note.
func DescribeFiring(f engine.Firing) string {
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

// stepRun is the step running: it can be stopped before and after its
// process starts.
type stepRun struct {
	grace   time.Duration
	cancel  context.CancelFunc
	mu      sync.Mutex
	running *steps.Running
}

// stop ends the step gracefully, or at once.
func (s *stepRun) stop(now bool) {
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
func (r *run) prompt(step *spec.StepPlan) string {
	text := step.Prompt.Value
	if r.plan.Spec != "" {
		text += "\n\nSpec: " + r.specPath(true)
	}
	return text + "\n\n" + engine.MarkerHint
}

// specPath is the plan's spec relative to the folder where steps run (as
// the agent is told it), or absolute with no link in it (for
// PIPELINE_SPEC, which must hold wherever the step changes directory to,
// and be the same on every run).
func (r *run) specPath(relative bool) string {
	abs, err := filepath.Abs(r.plan.Spec)
	if err != nil {
		return r.plan.Spec
	}
	if !relative {
		// The same path on every run of the session, whatever link to
		// the project's folder the run was started through.
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			return real
		}
		return abs
	}
	if rel, err := filepath.Rel(r.sess.Dir(), abs); err == nil {
		return rel
	}
	return abs
}

// prepare builds the command of a step: a shell line, or a turn of an
// agent prepared by its adapter from a request.
func (r *run) prepare(a engine.StartStep, s engine.State, step *spec.StepPlan) (turn, error) {
	return r.prepareTurn(a, s, step, "")
}

// prepareTurn is prepare; a compaction prompt, when set, is sent as it is
// to the native session a names, instead of the step's prompt.
func (r *run) prepareTurn(a engine.StartStep, s engine.State, step *spec.StepPlan, compaction string) (turn, error) {
	phase := &r.plan.Phases[a.Phase]
	dir := r.sess.Dir()
	env := append(os.Environ(),
		"PIPELINE_PHASE="+phase.Name, "PIPELINE_STEP="+step.Name, fmt.Sprintf("PIPELINE_ATTEMPT=%d", a.Attempt))
	if r.plan.Spec != "" {
		env = append(env, "PIPELINE_SPEC="+r.specPath(false))
	}
	// The session's mark comes last, so that no agent env can replace it:
	// by it the step's daemons are found when the step ends.
	mark := session.StepMark(r.sess.ID())
	if step.Agent == nil {
		return turn{command: steps.Command{Args: shellCommand(step.Run), Dir: dir, Env: append(env, mark), Mark: mark}}, nil
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
		text, warning := r.sess.ResumeContext(s, a)
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
		if facts := r.sess.ProjectFacts(); facts != "" {
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
// make does: it saves starting a shell for every step.
func shellCommand(line string) []string {
	if strings.ContainsAny(line, "|&;<>()$`\\\"'*?[]#~=%{}!\n") {
		return []string{"sh", "-c", line}
	}
	words := strings.Fields(line)
	if len(words) == 0 {
		return []string{"sh", "-c", line}
	}
	if !strings.Contains(words[0], "/") {
		if _, err := exec.LookPath(words[0]); err != nil {
			// A builtin of the shell (exit 1, cd, export), or a program
			// that is not there: the shell runs the one and says the
			// other is not found.
			return []string{"sh", "-c", line}
		}
	}
	return words
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

// start runs a step in the background; its end comes back as a
// StepFinished event.
func (r *run) start(ctx context.Context, a engine.StartStep, s engine.State) *stepRun {
	phase := &r.plan.Phases[a.Phase]
	step := &phase.Steps[a.Step]
	timeLimit, tokenLimit := Limits(phase, step)
	info := StepInfo{Phase: phase.Name, PhaseIndex: a.Phase, Phases: len(r.plan.Phases), Step: step.Name,
		Attempt: a.Attempt, TimeLimit: timeLimit, TokenLimit: tokenLimit, What: "run: " + step.Run}
	if step.Agent != nil {
		info.What = "agent " + step.Agent.Value.Kind
	}
	if a.Note != "" {
		r.say("%s", a.Note)
	}
	t, err := r.prepare(a, s, step)
	var transcript *os.File
	if err == nil {
		transcript, err = r.sess.Transcript(phase.Name, a.Attempt, step.Name)
	}
	if err == nil && t.prompt != "" {
		if err := r.sess.RecordPrompt(phase.Name, a.Attempt, step.Name, t.prompt); err != nil {
			r.say("pipeline: keeping the prompt sent: %v", err)
		}
	}
	r.d.View.StepStarted(info)
	if err != nil {
		// The step could not start: it failed, as a missing program does
		// in a shell.
		r.say("cannot start step %s: %v", step.Name, err)
		result := engine.StepResult{ExitCode: 127, Output: err.Error(), Agent: t.agentName, NotStarted: true, Error: err.Error()}
		r.d.View.StepFinished(info, result)
		r.events <- engine.StepFinished{At: r.clock.Now(), Result: result}
		return nil
	}
	stepCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	current := &stepRun{grace: r.d.Grace, cancel: cancel}
	obs := r.observer(a, s, phase, step, current)
	run := steps.Step{Command: t.command, Parser: t.parser, CountTokens: step.Agent != nil && t.parser == nil,
		PromptTokens: t.promptTokens, SessionChecker: t.checker, AskedSession: t.askedSession, Transcript: transcript,
		Timeout: time.Duration(step.Timeout.Value), IdleTimeout: time.Duration(step.IdleTimeout.Value), Grace: r.d.Grace,
		Redact: func() steps.RedactStream { return r.sess.Redactor().NewStream() }}
	if step.Agent != nil {
		run.Markers = r.markers.sink(phase.Name)
	}
	git := r.sess.Git()
	headBefore, treeBefore := s.Phases[a.Phase].HeadBefore, s.Phases[a.Phase].TreeBefore
	scope := r.scope(phase, git)
	go func() {
		defer cancel()
		stepTree := ""
		if git != nil && headBefore == "" && treeBefore == "" {
			// The phase starts: files_changed counts from the work tree
			// as it is now, files already changed included. Taken before
			// the step's process starts, so that none of its writes is
			// taken for the tree before it.
			headBefore, treeBefore = git.Snapshot()
			stepTree = treeBefore
		}
		if scope != nil && stepTree == "" {
			// The write scope judges the step's own changes.
			_, stepTree = git.Snapshot()
		}
		res, err := r.executor.Execute(stepCtx, run, obs)
		notStarted := ""
		if err != nil {
			notStarted = startProblem(err, t.command.Args[0])
			r.say("cannot start step %s: %s", step.Name, notStarted)
		} else {
			r.sess.StepProcess(0)
			notStarted = shellNotFound(t.command.Args, res)
		}
		r.sess.SetLive(session.Live{})
		if err := transcript.Close(); err != nil {
			r.say("pipeline: closing the transcript: %v", err)
		}
		result := engine.StepResult{ExitCode: res.ExitCode, TimedOut: res.TimedOut, Stopped: res.Stopped,
			Tokens: res.Tokens, ContextTokens: res.ContextTokens, CostUSD: res.CostUSD, Elapsed: res.Elapsed,
			Output: res.Output, Checkpoint: res.Checkpoint, CheckpointNote: res.CheckpointNote, SessionID: res.SessionID,
			Agent: t.agentName, SessionLost: res.SessionLost, RateLimited: res.RateLimited, ResumeAfter: res.ResumeAfter,
			Error: res.Error, OutputHeld: res.OutputHeld, ContextSent: t.contextSent, ContextReplaced: t.contextReplaced}
		if notStarted != "" {
			result.NotStarted, result.Error = true, notStarted
		}
		for _, l := range res.Leftovers {
			result.Leftovers = append(result.Leftovers, l.String())
		}
		if scope != nil {
			// Before files_changed is counted: a revert undoes the change.
			result.OutOfScope, result.Reverted = r.checkScope(git, stepTree, phase, step.Name)
		}
		if git != nil {
			result.HeadBefore, result.TreeBefore = headBefore, treeBefore
			result.Head, result.Files = git.Changed(headBefore, treeBefore)
			result.FilesChanged = len(result.Files)
		}
		r.d.View.StepFinished(info, result)
		r.events <- engine.StepFinished{At: r.clock.Now(), Result: result}
	}()
	return current
}

// observer evaluates a step's pause_when triggers as its output and time
// go by: the executor tells it the live values, it tells the loop a
// trigger fired.
type observer struct {
	r       *run
	current *stepRun
	monitor *triggers.Monitor
	// What the session had used before this step.
	tokensBefore               int
	costBefore                 float64
	phaseBefore, sessionBefore time.Duration
	fired                      bool
	tailWanting                bool
}

func (r *run) observer(a engine.StartStep, s engine.State, phase *spec.PhasePlan, step *spec.StepPlan, current *stepRun) *observer {
	var list []triggers.Named
	for _, t := range phase.PauseWhen {
		if t.Expr.Compiled != nil {
			list = append(list, triggers.Named{Name: t.Name, Expr: t.Expr.Compiled})
		}
	}
	m := triggers.NewMonitor(list)
	m.Env = triggers.Env{TotalTokens: s.TotalTokens, CostUSD: s.CostUSD, PhaseElapsed: s.PhaseElapsed,
		SessionElapsed: s.SessionElapsed, Errors: s.Errors, ConsecutiveErrors: s.ConsecutiveErrors,
		Attempt: a.Attempt, Phase: phase.Name, Step: step.Name, Steps: s.Steps, FilesChanged: s.FilesChanged,
		Spec: r.plan.SpecValues}
	return &observer{r: r, current: current, monitor: m, tokensBefore: s.TotalTokens, costBefore: s.CostUSD,
		phaseBefore: s.PhaseElapsed, sessionBefore: s.SessionElapsed, tailWanting: m.Needs(triggers.VarOutput)}
}

func (o *observer) Started(running *steps.Running) {
	o.current.mu.Lock()
	o.current.running = running
	o.current.mu.Unlock()
	o.r.sess.StepProcess(running.Pid())
}

func (o *observer) Output(text []byte) { o.r.d.View.Output(text) }

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
		o.r.d.View.Progress(Progress{Elapsed: live.Elapsed, Tokens: m.Env.Tokens})
		o.r.sess.SetLive(session.Live{At: o.r.clock.Now(), Phase: m.Env.Phase, Step: m.Env.Step, Attempt: m.Env.Attempt,
			StepTokens: m.Env.Tokens, TotalTokens: m.Env.TotalTokens, CostUSD: m.Env.CostUSD,
			StepElapsed: live.Elapsed, SessionElapsed: m.Env.SessionElapsed})
	}
	if o.fired {
		return
	}
	named, err := m.Check()
	if named == nil && err == nil {
		return
	}
	o.fired = true
	f := engine.Firing{Reason: engine.ReasonExpressionError, At: o.r.clock.Now()}
	if err != nil {
		f.Note = err.Error()
	} else {
		f.Reason, f.Expression, f.Values = named.Name, named.Expr.Source, m.Env.Values(named.Expr.Reads)
		if m.Env.Checkpoint {
			f.Note = m.Env.CheckpointNote
		}
	}
	ev := engine.TriggerFired{At: f.At, Firing: f}
	// The executor holds its lock while it observes: never block it.
	select {
	case o.r.events <- ev:
	default:
		go func() { o.r.events <- ev }()
	}
}

// OutputClosed reports whether standard output or error is a pipe or
// socket whose reader is gone, or a terminal that hung up.
func OutputClosed() bool {
	fds := []unix.PollFd{{Fd: 1, Events: unix.POLLOUT}, {Fd: 2, Events: unix.POLLOUT}}
	if _, err := unix.Poll(fds, 0); err != nil {
		return false
	}
	for _, fd := range fds {
		if fd.Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
			return true
		}
	}
	return false
}
