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
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/clock"
	"github.com/pipeline-dev/pipeline/steps"
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

// CausePauseCommand is the cause said when pipeline pause asked the
// runner to pause: its SIGTERM is the messenger, not what happened.
const CausePauseCommand = "pause requested by pipeline pause"

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
	// tapFirings, set by tests, is handed each run's way to deliver a
	// firing, as the executor delivers one.
	tapFirings func(put func(engine.TriggerFired))
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
	r := d.newRun(sess)
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

// newRun prepares one call of Run on sess.
func (d *Driver) newRun(sess *session.Session) *run {
	r := &run{d: d, sess: sess, plan: sess.Plan, clock: d.Clock, events: make(chan engine.Event, 64),
		markers: markerQueue{ready: make(chan struct{}, 1)}, firings: newFiringQueue()}
	if r.clock == nil {
		r.clock = clock.Real{}
	}
	r.steps = &StepRunner{Session: sess, Plan: sess.Plan, View: d.View, Clock: r.clock, Grace: d.Grace,
		Executor: &steps.Executor{Clock: r.clock, Tick: d.Tick}, Markers: r.markers.sink, Fired: r.firings.put}
	if d.tapFirings != nil {
		d.tapFirings(r.firings.put)
	}
	return r
}

// run is one call of Driver.Run.
type run struct {
	d       *Driver
	sess    *session.Session
	plan    *spec.Plan
	clock   clock.Clock
	steps   *StepRunner
	events  chan engine.Event
	current *StepRun
	// ended: the run paused, completed or failed (its on: hooks are
	// owed), rather than asking nothing of a session that cannot move.
	ended bool
	// saidFiring is the last trigger said under Verbose.
	saidFiring *engine.Firing
	// markers are the working-set markers the running step printed and
	// the loop has not recorded yet; markersReady wakes the loop.
	markers markerQueue
	// firings are the live triggers that fired and the loop has not
	// decided yet.
	firings *firingQueue
}

func (r *run) say(format string, args ...any) { r.d.View.Say(format, args...) }

func (r *run) loop(ctx context.Context, first engine.Event, interrupts *interrupts) (engine.State, error) {
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
			r.current.Stop(false)
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
		// now is the work tree as the step that just ended left it: the
		// snapshot of its last look, handed on to the checkpoints that
		// follow it (see session.WorkTree), unless the session itself
		// wrote the work tree since (its spec's status).
		var now seenTree
		if finished, ok := ev.(engine.StepFinished); ok {
			now = r.steps.leftBy(finished.Execution)
		}
		state, actions := engine.Decide(r.plan, before, ev)
		// Stopping a step cannot wait for the record: it is the latency
		// from a trigger to the interrupt.
		for _, a := range actions {
			if _, ok := a.(engine.StopStep); ok && r.current != nil {
				r.current.Stop(false)
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
		r.saySkipped(before, state)
		for _, a := range actions {
			switch a := a.(type) {
			case engine.Checkpoint:
				var err error
				if now, err = r.checkpoint(a, now); err != nil {
					return recordFailed(err)
				}
				state = r.sess.State()
			case engine.TakeMemory, engine.RunHooks:
				if err := r.effect(a); err != nil {
					return recordFailed(err)
				}
				state = r.sess.State()
			case engine.StartStep:
				if done := r.plan.Phases[a.Phase].DoneWhen; done != nil && doneWhenFalse(ev, before, state, a) {
					r.say("done_when is false (%s): phase %s runs again (attempt %d)",
						done.Value.Source, r.plan.Phases[a.Phase].Name, a.Attempt)
				}
				r.current = r.steps.Start(ctx, a, state, func(res engine.StepResult) {
					r.events <- engine.StepFinished{At: r.clock.Now(), Result: res, Execution: a.Execution}
				})
			case engine.Sleep:
				r.say("retrying in %s (attempt %d)", a.Duration, state.Attempt)
				if w, ok := r.d.View.(WaitView); ok {
					w.Backoff(a.Duration, state.Attempt)
				}
				stopSleep = r.clock.AfterFunc(a.Duration, func() { r.events <- engine.TimerExpired{At: r.clock.Now()} })
			case engine.Compact:
				r.current = r.steps.Compact(ctx, a, state, func(ev engine.Compacted) { r.events <- ev })
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
				r.say("%s", engine.CompletedLine(state))
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
	// interrupted carries out a request to pause, and reports whether
	// the run has ended.
	interrupted := func(in Interrupt) bool {
		switch {
		case in.Cause == "" || (state().Stopping != nil && r.current != nil):
		case r.current != nil && !in.Kill:
			r.say("%s: stopping the step, then pausing (interrupt again to kill it now)", in.Cause)
		default:
			r.say("%s: pausing", in.Cause)
		}
		if in.Kill {
			if state().Stopping == nil && pause(in) {
				return true
			}
			if r.current != nil && !forced {
				forced = true
				r.say("killing the step now")
				r.current.Stop(true)
			}
			return false
		}
		if state().Stopping != nil && r.current != nil && !forced {
			forced = true
			r.say("interrupted again: killing the step now")
			r.current.Stop(true)
			return false
		}
		return pause(in)
	}
	for {
		select {
		case <-r.markers.ready:
			if ev, ok := r.markers.take(r.clock.Now()); ok && handle(ev) {
				return state(), recordErr
			}
		case <-r.firings.ready:
			if r.handleAll(r.firings.take(), handle) {
				return state(), recordErr
			}
		case ev := <-r.events:
			switch ev.(type) {
			case engine.StepFinished, engine.Compacted:
				// A trigger that fired before the step's end is decided
				// before it, as it happened.
				if r.handleAll(r.firings.take(), handle) {
					return state(), recordErr
				}
				r.current = nil
				// What the step printed is the step's: recorded before
				// its end.
				if marks, ok := r.markers.take(r.clock.Now()); ok && handle(marks) {
					return state(), recordErr
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
			r.plan, r.steps.Plan = plan, plan
			r.say("%s changed: this session follows it from its next step", plan.File)
		case <-cancelled:
			cancelled = nil // a closed channel is always ready
			if state().Stopping == nil && pause(Interrupt{}) {
				return state(), recordErr
			}
		case in := <-interrupts.requests:
			if interrupted(in) {
				return state(), recordErr
			}
		case sig := <-interrupts.signals:
			if in, ok := interrupts.fromSignal(sig); ok && interrupted(in) {
				return state(), recordErr
			}
		}
	}
}

// handleAll decides the firings in order, and reports whether the run
// has ended.
func (r *run) handleAll(firings []engine.TriggerFired, handle func(engine.Event) bool) bool {
	for _, ev := range firings {
		if handle(ev) {
			return true
		}
	}
	return false
}

// saySkipped says each phase a false when: skipped between two states.
func (r *run) saySkipped(before, after engine.State) {
	for i, rec := range after.Phases {
		f := engine.SkippedBy(rec)
		if f == nil || (i < len(before.Phases) && engine.SkippedBy(before.Phases[i]) != nil) {
			continue
		}
		read := ""
		if values := engine.FlatValues(f.Values); len(values) > 0 {
			read = ", with " + strings.Join(values, ", ")
		}
		r.say("phase %s skipped: when (%s) is false%s", rec.Name, f.Expression, read)
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

// effect carries out an effect Decide asked for; it comes before the
// step that follows, in the order Decide gave. An error is the record's.
func (r *run) effect(a engine.Action) error {
	switch a.(type) {
	case engine.TakeMemory:
		return r.takeMemory()
	case engine.RunHooks:
		// Run as Run returns, the session recorded, with signals still
		// caught: a hook is bounded by its timeout.
		r.ended = true
	}
	return nil
}

// checkpoint keeps the work tree in git as a asks (checkpoint: in
// phases.yaml), and records it as a Checkpointed event. now, when not
// zero, is a snapshot of the work tree as it is; the checkpoint returns
// the snapshot it kept, for what follows it. A checkpoint git could not
// make is said, and the run goes on without it; an error is the
// record's.
func (r *run) checkpoint(a engine.Checkpoint, now seenTree) (seenTree, error) {
	git := r.sess.Git()
	if git == nil {
		if a.Kind == engine.CheckpointStart {
			r.say("pipeline: %s is not in a git work tree (or git ignores it): this session keeps no checkpoints (rewind and fork need them)", r.sess.Dir())
		}
		return seenTree{}, nil
	}
	kept := seenTree{writes: r.sess.WorkTreeWrites()}
	commit, tree, err := TakeCheckpoint(git, r.sess.ID(), a, now.still(r.sess))
	kept.now = tree
	if err != nil {
		r.say("pipeline: no checkpoint %s: %v", a.Name, err)
		return kept, nil
	}
	_, err = r.sess.Apply(engine.Checkpointed{At: r.clock.Now(), Kind: a.Kind, Phase: a.Phase, Commit: commit})
	return kept, err
}

// TakeCheckpoint makes the commit a asks for in git, for session id: on
// the branch (a.Commit), or under refs/pipeline/<session>/, of now when
// now is a snapshot of the work tree as it is. It returns the snapshot
// the checkpoint kept (zero after a commit on the branch, which moved
// HEAD). Every driver takes checkpoints with it: the local loop, and the
// fleet's worker.
func TakeCheckpoint(git *session.Git, id string, a engine.Checkpoint, now session.WorkTree) (string, session.WorkTree, error) {
	if a.Commit {
		commit, err := git.Commit(a.Message(id))
		return commit, session.WorkTree{}, err
	}
	return git.CheckpointOf(session.CheckpointRef(id, a.Name), a.Message(id), now)
}

// takeMemory records the changes to the working set a human left while
// the session ran (pipeline memory pin …), before the next step starts.
// Only a record that failed is an error; requests that cannot be listed
// or read wait for the next step (a session folder deleted meanwhile
// fails the record of the step's end, which pauses as store-error).
func (r *run) takeMemory() error {
	err := r.sess.TakeMemoryRequests(r.say)
	if err == nil {
		return nil
	}
	if broken := r.sess.StoreFailed(); broken != nil {
		return broken
	}
	r.say("pipeline: the memory changes left for the session cannot be read now (%v): they wait for the next step", err)
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
