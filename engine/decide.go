package engine

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/triggers"
)

// Decide is the heart of the engine: given the plan, the session's state
// and one event, it returns the new state and the actions to carry out. It
// has no side effects; the runner (and the distributed backend) drive it.
// An expression that fails at run time pauses the session with reason
// expression-error: it is never taken as false.
func Decide(plan *spec.Plan, s State, ev Event) (State, []Action) {
	if s.ended(ev) {
		// Late news of a step that is over (a trigger delivered after its
		// step's end): it must not reach the step running now. A copy, as
		// every decision returns: the caller may change it.
		return s.clone(), nil
	}
	before := s
	s = s.clone()
	d := decider{plan: plan, s: &s, now: ev.eventTime()}
	switch e := ev.(type) {
	case Started:
		d.start(e)
		s.PlanDigest = e.Plan
	case StepFinished:
		d.stepFinished(e.Result)
	case TriggerFired:
		d.triggerFired(e.Firing)
	case TimerExpired:
		if s.Status == StatusRunning && s.Waiting {
			s.Waiting = false
			d.startStep()
		}
	case PauseRequested:
		d.pauseRequested(e)
	case Resumed:
		d.resumed(e)
		if e.Plan != "" {
			s.PlanDigest = e.Plan
		}
	case Recovered:
		d.recovered(e.NewAttempt)
		if e.Plan != "" {
			s.PlanDigest = e.Plan
		}
	case PlanChanged:
		if e.Plan != "" {
			s.PlanDigest = e.Plan
		}
	case Compacted:
		d.compacted(e)
	case Remembered:
		d.remembered(e)
	case Noted:
		if e.Notes != "" && s.Phase < len(s.Phases) {
			d.record().Notes = append(d.record().Notes, e.Notes)
		}
	case Checkpointed:
		d.checkpointed(e)
	case Rewound:
		d.rewound(e)
		// A command's, not a run's: no runner is there to carry out
		// effects (the rewind restored the work tree itself).
		return s, d.actions
	case SpecStatusChanged:
		// A record of what the session did to its spec file: nothing to
		// decide, no effect to carry out.
		change := e.Change
		s.SpecStatus = &change
		if e.Plan != "" {
			s.PlanDigest = e.Plan
		}
		return s, nil
	case Completed:
		if s.Status != StatusCompleted {
			s.Status, s.Pause, s.StepRunning, s.Waiting, s.ByHand = StatusCompleted, nil, false, false, true
			d.do(Complete{})
		}
		// By hand, as a rewind: no runner runs hooks or keeps checkpoints.
		return s, d.actions
	}
	return s, d.withEffects(before, ev)
}

// withEffects adds to the decided actions the effects the change from
// before to the new state calls for, in the order a runner must carry
// them out: the checkpoints first (before a step that follows can
// write), the memory a human left just before each step starts, and the
// hooks just before the action that ends the run.
func (d *decider) withEffects(before State, ev Event) []Action {
	out := d.checkpoints(before, ev)
	for _, a := range d.actions {
		switch a.(type) {
		case StartStep:
			out = append(out, TakeMemory{})
		case Pause, Complete, Fail:
			if events := HookEvents(*d.s); hasHooks(d.plan, events) {
				out = append(out, RunHooks{Events: events})
			}
		}
		out = append(out, a)
	}
	return out
}

// checkpoints are the checkpoints the change from before calls for (see
// checkpoint: in phases.yaml): the session started, a phase completed,
// the session paused.
func (d *decider) checkpoints(before State, ev Event) []Action {
	mode, after := d.plan.Checkpoint.Value, d.s
	if mode == spec.CheckpointOff {
		return nil
	}
	var out []Action
	if _, ok := ev.(Started); ok && after.Status == StatusRunning {
		out = append(out, Checkpoint{Kind: CheckpointStart, Phase: -1, Name: "00-start"})
	}
	for i, rec := range after.Phases {
		if rec.Status == StatusCompleted && (i >= len(before.Phases) || before.Phases[i].Status != StatusCompleted) && rec.Checkpoint == "" {
			out = append(out, Checkpoint{Kind: CheckpointPhase, Phase: i, PhaseName: rec.Name,
				Name: CheckpointName(i, rec.Name), Commit: mode == spec.CheckpointCommit})
		}
	}
	if after.Status == StatusPaused && before.Status != StatusPaused && after.Phase < len(after.Phases) {
		name := after.Phases[after.Phase].Name
		out = append(out, Checkpoint{Kind: CheckpointPause, Phase: after.Phase, PhaseName: name,
			Name: CheckpointName(after.Phase, name) + "-paused"})
	}
	return out
}

// hasHooks reports whether the plan has on: commands for one of events,
// or notifications (notify:), which go with the hooks.
func hasHooks(plan *spec.Plan, events []string) bool {
	if len(events) > 0 && (plan.Notify.Desktop || len(plan.Notify.Webhook) > 0) {
		return true
	}
	return slices.ContainsFunc(events, func(ev string) bool { return len(plan.Hooks.For(ev)) > 0 })
}

// HookEvents are the on: events a state calls for: paused (and
// needs-human after it), failed or completed; none while it runs.
func HookEvents(s State) []string {
	switch s.Status {
	case StatusPaused:
		if s.Pause != nil && s.Pause.Reason == ReasonNeedsHuman {
			return []string{spec.HookPaused, spec.HookNeedsHuman}
		}
		return []string{spec.HookPaused}
	case StatusFailed:
		return []string{spec.HookFailed}
	case StatusCompleted:
		return []string{spec.HookCompleted}
	}
	return nil
}

// remembered changes the working set as e says, in e's phase (the
// current one when it names none).
func (d *decider) remembered(e Remembered) {
	s := d.s
	phase := e.Phase
	if phase == "" && s.Phase < len(s.Phases) {
		phase = s.Phases[s.Phase].Name
	}
	for _, n := range e.Notes {
		s.WorkingSet.Remember(n, phase, e.Source, e.At)
	}
	for i := range s.Phases {
		if s.Phases[i].Name == phase && s.WorkingSet.PhaseSummary(phase) != "" {
			s.Phases[i].Summary = s.WorkingSet.PhaseSummary(phase)
		}
	}
}

// checkpointed records the commit of a checkpoint taken.
func (d *decider) checkpointed(e Checkpointed) {
	s := d.s
	switch {
	case e.Kind == CheckpointStart:
		s.StartCheckpoint = e.Commit
	case e.Kind == CheckpointPause:
		s.PauseCheckpoint = e.Commit
	case e.Kind == CheckpointPhase && e.Phase >= 0 && e.Phase < len(s.Phases):
		s.Phases[e.Phase].Checkpoint = e.Commit
	}
}

// ended reports whether ev belongs to an execution that has ended: a
// step's (or compaction turn's) event whose number is not the running
// one's. An event without a number (recorded before they were given)
// is the running step's, as it always was.
func (s State) ended(ev Event) bool {
	var n int
	switch e := ev.(type) {
	case StepFinished:
		n = e.Execution
	case TriggerFired:
		n = e.Execution
	case Compacted:
		n = e.Execution
	}
	return n != 0 && (n != s.Execution || !s.StepRunning)
}

type decider struct {
	plan    *spec.Plan
	s       *State
	now     time.Time
	actions []Action
}

// clone copies what Decide may change; maps come back non-nil, as JSON
// leaves an empty one out and a loaded state would otherwise hold nil.
func (s State) clone() State {
	s.NativeSessions = cloneMap(s.NativeSessions)
	s.NativeAgents = cloneMap(s.NativeAgents)
	s.ForkOnly = cloneMap(s.ForkOnly)
	s.Steps = cloneMap(s.Steps)
	s.Pause, s.Stopping = cloneFiring(s.Pause), cloneFiring(s.Stopping)
	s.WorkingSet = s.WorkingSet.clone()
	s.LastContext = maps.Clone(s.LastContext)
	s.Failed = slices.Clip(slices.Clone(s.Failed))
	s.Dropped = maps.Clone(s.Dropped)
	if s.Compaction != nil {
		c := *s.Compaction
		s.Compaction = &c
	}
	if s.Parent != nil {
		parent := *s.Parent
		s.Parent = &parent
	}
	if s.ReplayOf != nil {
		of := *s.ReplayOf
		s.ReplayOf = &of
	}
	s.Phases = slices.Clone(s.Phases)
	for i := range s.Phases {
		p := &s.Phases[i]
		// Every slice, so that no append of one state reaches the spare
		// capacity of another's.
		p.ExitCodes = slices.Clip(slices.Clone(p.ExitCodes))
		p.Fired = slices.Clip(slices.Clone(p.Fired))
		p.Notes = slices.Clip(slices.Clone(p.Notes))
		p.Files = slices.Clip(slices.Clone(p.Files))
		p.NativeAtStart = maps.Clone(p.NativeAtStart)
	}
	return s
}

func cloneFiring(f *Firing) *Firing {
	if f == nil {
		return nil
	}
	c := *f
	return &c
}

func (d *decider) do(a ...Action) { d.actions = append(d.actions, a...) }

func (d *decider) phase() *spec.PhasePlan { return &d.plan.Phases[d.s.Phase] }

func (d *decider) step() *spec.StepPlan { return &d.phase().Steps[d.s.Step] }

func (d *decider) record() *PhaseRecord { return &d.s.Phases[d.s.Phase] }

func (d *decider) start(e Started) {
	s := d.s
	*s = State{Status: StatusRunning, Attempt: 1, NativeSessions: map[string]string{}, Only: e.Only}
	for _, p := range d.plan.Phases {
		s.Phases = append(s.Phases, PhaseRecord{Name: p.Name})
	}
	if e.Parent != nil {
		parent := *e.Parent
		parent.Native, parent.WorkingSet = nil, nil
		s.Parent = &parent
		if e.Parent.WorkingSet != nil {
			s.WorkingSet = e.Parent.WorkingSet.clone()
		}
		d.restoreNative(e.Parent.Native)
	}
	if e.ReplayOf != nil {
		of := *e.ReplayOf
		s.ReplayOf = &of
	}
	first := max(d.phaseIndex(e.From), 0)
	d.skip(0, first)
	if e.From != "" {
		// A phase named on the command line runs: the human chose it.
		d.startPhase(first)
		return
	}
	d.enterPhase(first)
}

// phaseIndex is the index of the named phase; -1 for none.
func (d *decider) phaseIndex(name string) int {
	if name == "" {
		return -1
	}
	return slices.IndexFunc(d.plan.Phases, func(p spec.PhasePlan) bool { return p.Name == name })
}

// skip marks the phases from..to-1 that have not completed as skipped:
// a jump went over them.
func (d *decider) skip(from, to int) {
	for i := from; i < to && i < len(d.s.Phases); i++ {
		if rec := &d.s.Phases[i]; rec.Status != StatusCompleted {
			rec.Status = StatusSkipped
		}
	}
}

// enterPhase reaches phase i: it starts the first phase from i whose
// when: holds, and skips those before it; past the last phase the session
// completes. A when: that fails pauses the session at its phase.
func (d *decider) enterPhase(i int) {
	for ; i < len(d.plan.Phases); i++ {
		run, ok := d.when(i)
		if !ok {
			return
		}
		if run {
			d.startPhase(i)
			return
		}
	}
	d.s.Status = StatusCompleted
	d.do(Complete{})
}

// startPhase starts phase i at its first step.
func (d *decider) startPhase(i int) {
	s := d.s
	s.Phase, s.Step, s.Attempt = i, 0, 1
	s.Errors, s.ConsecutiveErrors, s.PhaseElapsed, s.FilesChanged = 0, 0, 0, 0
	s.Steps, s.Failed = map[string]triggers.StepVars{}, nil
	rec := d.record()
	rec.NativeAtStart = nil
	for key, id := range s.NativeSessions {
		if rec.NativeAtStart == nil {
			rec.NativeAtStart = map[string]NativeRef{}
		}
		rec.NativeAtStart[key] = NativeRef{ID: id, Agent: s.NativeAgents[key]}
	}
	d.startStep()
}

// restoreNative makes the native sessions those given, as an earlier
// phase started (a rewind, a fork): the conversations behind them have
// gone on since, so each is resumed only as a fork of that point.
func (d *decider) restoreNative(native map[string]NativeRef) {
	s := d.s
	s.NativeSessions, s.NativeAgents, s.ForkOnly = map[string]string{}, map[string]string{}, map[string]bool{}
	for key, ref := range native {
		s.NativeSessions[key], s.ForkOnly[key] = ref.ID, true
		if ref.Agent != "" {
			s.NativeAgents[key] = ref.Agent
		}
	}
}

// sessionKey names the native agent session a step uses: steps with one
// feature share a session across phases.
func sessionKey(phase *spec.PhasePlan, step *spec.StepPlan) string {
	if step.Agent != nil && step.Agent.Value.Feature != "" {
		return "feature:" + step.Agent.Value.Feature
	}
	return phase.Name + "/" + step.Name
}

func (d *decider) startStep() {
	s := d.s
	if s.Stopping != nil {
		// A pause asked for while a compaction ran takes effect here,
		// before the next step.
		f := *s.Stopping
		s.Stopping = nil
		d.pause(f)
		return
	}
	s.Status, s.StepRunning = StatusRunning, true
	rec := d.record()
	rec.Status = StatusRunning
	rec.Attempts = max(rec.Attempts, s.Attempt)
	if rec.Started.IsZero() {
		rec.Started = d.now
	}
	s.Execution++
	start := StartStep{Phase: s.Phase, Step: s.Step, Attempt: s.Attempt, Execution: s.Execution}
	if step := d.step(); step.Agent != nil {
		key := sessionKey(d.phase(), step)
		start.SessionKey = key
		// An agent step after a failure is told what failed: a retry
		// is not the same prompt again.
		start.ResumeContext = s.ResumeContext || s.FreshSession || len(s.Failed) > 0
		s.ResumeContext = false
		start.Resuming, s.Resuming = s.Resuming, nil
		start.Failed, s.Failed = s.Failed, nil
		_, had := s.NativeSessions[key]
		agent := AgentName(step.Agent.Value)
		if had && s.NativeAgents[key] != "" && s.NativeAgents[key] != agent && !s.FreshSession {
			// Another CLI (or model) never gets this session's id.
			start.Note = fmt.Sprintf("the agent is now %s, the session was made by %s: starting a fresh native session with the resume context", agent, s.NativeAgents[key])
			start.ResumeContext = true
			s.FreshSession = true
			rec.Fired = keepLast(append(rec.Fired, Firing{Reason: ReasonAgentChanged, Note: start.Note, At: d.now}))
		}
		if s.FreshSession {
			s.FreshSession = false
			if had {
				delete(s.NativeSessions, key)
				delete(s.NativeAgents, key)
				delete(s.ForkOnly, key)
				d.do(DropSession{Key: key})
			}
			s.markDropped(key)
		} else if !had && step.Agent.Value.Feature != "" && !s.Dropped[key] {
			start.Recover = true
		}
		start.SessionID = s.NativeSessions[key]
		// A session an earlier phase made (or restored as one started) is
		// branched, not continued: its conversation stays as this phase
		// found it, for a rewind to the phase or a fork at it.
		inherited := rec.NativeAtStart[key].ID == start.SessionID
		start.ForkOnly = start.SessionID != "" && s.ForkOnly[key]
		start.Fork = start.SessionID != "" && (inherited || start.ForkOnly)
	}
	d.do(start)
}

// agentName is kind/model, the identity of a native session's maker.
func AgentName(a spec.Agent) string {
	if a.Model == "" {
		return a.Kind
	}
	return a.Kind + "/" + a.Model
}

// Env is the environment expressions see after the given result.
func (d *decider) env(r StepResult) *triggers.Env {
	s := d.s
	return &triggers.Env{
		Tokens: r.Tokens, ContextTokens: r.ContextTokens, TotalTokens: s.TotalTokens, CostUSD: s.CostUSD,
		Elapsed: r.Elapsed, PhaseElapsed: s.PhaseElapsed, SessionElapsed: s.SessionElapsed,
		ExitCode: r.ExitCode, TimedOut: r.TimedOut, Checkpoint: r.Checkpoint, CheckpointNote: r.CheckpointNote,
		Output: r.Output, Errors: s.Errors, ConsecutiveErrors: s.ConsecutiveErrors, Attempt: s.Attempt,
		Phase: d.phase().Name, Step: d.step().Name, Steps: s.Steps, FilesChanged: s.FilesChanged,
		FilesOutOfScope: len(r.OutOfScope), Spec: d.plan.SpecValues,
	}
}

// isCheck reports whether the current step is read by the phase's
// done_when: its exit code is judged there, not by the retry policy.
func (d *decider) isCheck() bool {
	done := d.phase().DoneWhen
	if done == nil || done.Value.Program() == nil {
		return false
	}
	name := d.step().Name
	return slices.ContainsFunc(done.Value.Program().StepRefs, func(r triggers.StepRef) bool { return r.Name == name })
}

func (d *decider) stepFinished(r StepResult) {
	s := d.s
	if !s.StepRunning {
		return
	}
	s.StepRunning = false
	step, rec := d.step(), d.record()
	s.TotalTokens += r.Tokens
	s.CostUSD += r.CostUSD
	s.SessionElapsed += r.Elapsed
	s.PhaseElapsed += r.Elapsed
	s.FilesChanged = r.FilesChanged
	rec.Tokens += r.Tokens
	rec.CostUSD += r.CostUSD
	rec.Duration += r.Elapsed
	rec.ExitCodes = keepLast(append(rec.ExitCodes, r.ExitCode))
	if r.ContextSent > 0 {
		rec.Contexts++
		rec.ContextTokens += r.ContextSent
		rec.ReplacedTokens += r.ContextReplaced
	}
	if r.ContextTokens > 0 && step.Agent != nil {
		if s.LastContext == nil {
			s.LastContext = map[string]int{}
		}
		s.LastContext[sessionKey(d.phase(), step)] = r.ContextTokens
	}
	if r.SessionID != "" && step.Agent != nil {
		key := sessionKey(d.phase(), step)
		if s.NativeAgents == nil {
			s.NativeAgents = map[string]string{}
		}
		s.NativeSessions[key] = r.SessionID
		delete(s.Dropped, key)
		s.NativeAgents[key] = AgentName(step.Agent.Value)
		if r.SessionID != s.Phases[s.Phase].NativeAtStart[key].ID {
			delete(s.ForkOnly, key)
		}
		rec.NativeSession = r.SessionID
	}
	if rec.HeadBefore == "" {
		rec.HeadBefore = r.HeadBefore
	}
	if rec.TreeBefore == "" {
		rec.TreeBefore = r.TreeBefore
	}
	if r.Head != "" {
		rec.HeadAfter = r.Head
	}
	if r.Files != nil || r.TreeBefore != "" {
		// With a snapshot, no files is news too: a change undone.
		rec.Files = r.Files
	}
	if summary := summarize(r); summary != "" && step.Agent != nil {
		s.WorkingSet.Remember(MemoryNote{Kind: NoteSummary, Text: summary}, rec.Name, SourcePhase, d.now)
		// The agent's own [SUMMARY] of the phase, when it printed one,
		// stands over its last line.
		rec.Summary = s.WorkingSet.PhaseSummary(rec.Name)
	}
	if len(r.Files) > 0 {
		s.WorkingSet.Touch(r.Files, rec.Name, d.now)
	}
	s.Steps[step.Name] = triggers.StepVars{ExitCode: r.ExitCode, TimedOut: r.TimedOut, Tokens: r.Tokens,
		CostUSD: r.CostUSD, Elapsed: r.Elapsed, Output: r.Output, Ran: true}

	if r.SessionLost && step.Agent != nil {
		// The CLI no longer has the session it was asked to resume: the
		// work goes on in a fresh one, with the resume context. Not an
		// error of the step.
		key := sessionKey(d.phase(), step)
		delete(s.NativeSessions, key)
		delete(s.NativeAgents, key)
		delete(s.ForkOnly, key)
		rec.Fired = keepLast(append(rec.Fired, Firing{Reason: ReasonSessionLost,
			Note: "the agent's native session could not be resumed; a fresh one starts with the resume context", At: d.now}))
		s.ResumeContext = true
		s.Stopping = nil
		d.startStep()
		return
	}
	if r.RateLimited && s.Stopping == nil {
		f := Firing{Reason: ReasonRateLimit, Note: r.Error, At: d.now}
		if !r.ResumeAfter.IsZero() {
			after := r.ResumeAfter
			f.ResumeAfter = &after
		}
		d.pause(f)
		return
	}
	if len(r.OutOfScope) > 0 {
		f := Firing{Reason: ReasonOutOfScope, Note: outOfScopeNote(d.phase(), step.Name, r), At: d.now,
			Values: map[string]any{"files_out_of_scope": len(r.OutOfScope)}}
		if !r.Reverted {
			// Before a live trigger's pause: this one says what to look at.
			s.Stopping = nil
			d.pause(f)
			return
		}
		f.Reason = ReasonOutOfScopeReverted
		rec.Fired = keepLast(append(rec.Fired, f))
	}
	if s.Stopping != nil {
		// A live trigger or a human stopped the step: pause at it, and
		// run it again on resume.
		firing := *s.Stopping
		s.Stopping = nil
		d.pause(firing)
		return
	}

	if r.NotStarted {
		// A missing program stays missing: no retry, no back-off.
		s.Errors++
		s.ConsecutiveErrors++
		d.fail(fmt.Sprintf("phase %q, step %q could not start: %s", d.phase().Name, step.Name, r.Error))
		return
	}
	check := d.isCheck()
	failed := (r.ExitCode != 0 || r.TimedOut) && !check
	if failed {
		s.Errors++
		s.ConsecutiveErrors++
	} else if !check {
		s.ConsecutiveErrors = 0
	}
	if d.compactDue(r, d.env(r)) {
		return
	}
	d.decideAfterStep(r)
}

// decideAfterStep applies the policies to a step's result: escalation,
// restart, retry, pause_when, then the next step or the phase's end. It
// runs when the step has ended, or when the compaction that fired after
// it has.
func (d *decider) decideAfterStep(r StepResult) {
	s := d.s
	check := d.isCheck()
	failed := (r.ExitCode != 0 || r.TimedOut) && !check
	env := d.env(r)
	phase := d.phase()
	step := d.step()
	failure := StepFailure{Step: step.Name, ExitCode: r.ExitCode, TimedOut: r.TimedOut, Error: r.Error, Output: failureTail(r.Output)}
	switch {
	case failed:
		d.s.Failed = append(slices.DeleteFunc(d.s.Failed, func(f StepFailure) bool { return f.Step == step.Name }), failure)
	case !check:
		d.s.Failed = slices.DeleteFunc(d.s.Failed, func(f StepFailure) bool { return f.Step == step.Name })
	}
	retries := d.retries()
	if failed && retries && d.escalate(env, failureNote(failure)) {
		return
	}
	if !d.restart(env) {
		return
	}
	if !check && retries && phase.Retry.When.Value != nil {
		retry, ok := d.condition(phase.Retry.When, env)
		if !ok {
			return
		}
		if retry {
			d.retry(env, failureNote(failure))
			return
		}
	}
	if firing, ok := d.firstTrigger(phase.PauseWhen, env); !ok {
		return
	} else if firing != nil {
		// A pause on a failed step ends its attempt.
		s.AttemptEnded = failed
		d.pause(*firing)
		return
	}
	if failed {
		why := "no policy retried it or paused"
		if !retries {
			why = "a run: step is not retried unless retry.when is written for its phase (the built-in retry is for agent steps)"
		}
		d.fail(fmt.Sprintf("phase %q, step %q failed (exit code %d%s): %s",
			phase.Name, step.Name, r.ExitCode, map[bool]string{true: ", timed out"}[r.TimedOut], why))
		return
	}
	if s.Step+1 < len(phase.Steps) {
		s.Step++
		d.startStep()
		return
	}
	d.phaseEnd(env)
}

// retries reports whether the retry policy (retry.when, its back-off and
// its escalation) applies to the current step's failure: always to an
// agent step, and to a run: step only when a file wrote retry.when. A
// failing test suite fails at once, as in make or a CI job, rather than
// after the built-in back-offs that give an agent another go.
func (d *decider) retries() bool {
	return d.step().Agent != nil || d.phase().Retry.When.From.Layer != spec.LayerDefault
}

// phaseEnd runs after the last step of a phase: done_when decides between
// a new attempt and the next phase.
func (d *decider) phaseEnd(env *triggers.Env) {
	s, phase := d.s, d.phase()
	if phase.DoneWhen != nil {
		done, ok := d.condition(*phase.DoneWhen, env)
		if !ok {
			return
		}
		if !done {
			// Not done counts as an error of the phase, so escalation
			// and restart policies bound a phase that never gets there.
			s.Errors++
			s.ConsecutiveErrors++
			env.Errors, env.ConsecutiveErrors = s.Errors, s.ConsecutiveErrors
			// What failed is the attempt's failed steps, checks included.
			s.Failed = d.failedSteps()
			note := d.notDoneNote()
			if d.escalate(env, note) {
				if s.AttemptEnded {
					// The resume runs the phase again, from its first step.
					s.Step = 0
				}
				return
			}
			if !d.restart(env) {
				return
			}
			s.Attempt++
			s.Step = 0
			if d.hasAgentStep() && s.Resuming == nil {
				s.ResumeContext = true
				s.Resuming = &Resumption{Phase: phase.Name,
					Firing: Firing{Reason: ReasonNotDone, Expression: phase.DoneWhen.Value.Source, Note: note, At: d.now}}
			}
			d.startStep()
			return
		}
	}
	rec := d.record()
	rec.Status, rec.Ended = StatusCompleted, d.now
	if s.Only {
		d.skip(s.Phase+1, len(d.plan.Phases))
	}
	last := s.Phase+1 == len(d.plan.Phases) || s.Only
	if !phase.AutoAdvance.Value {
		// A human gate stands after the phase whatever follows it: the
		// next phase, or the session's end (a final sign-off).
		if last {
			// The session stays at its last phase, completed: the resume
			// that signs it off completes the session (see resumed).
			d.pause(Firing{Reason: ReasonPhaseComplete, At: d.now,
				Note: fmt.Sprintf("phase %q is done, the last to run; auto_advance is false: resume completes the session", phase.Name)})
			return
		}
		d.pause(Firing{Reason: ReasonPhaseComplete, Note: fmt.Sprintf("phase %q is done; auto_advance is false", phase.Name), At: d.now})
		// Resume starts the next phase.
		s.Phase++
		s.Step, s.Attempt, s.Errors, s.ConsecutiveErrors, s.PhaseElapsed, s.FilesChanged = 0, 1, 0, 0, 0, 0
		s.Steps, s.Failed = map[string]triggers.StepVars{}, nil
		return
	}
	if last {
		s.Status = StatusCompleted
		d.do(Complete{})
		return
	}
	d.enterPhase(s.Phase + 1)
}

// signedOff reports whether the session is paused at its final gate: the
// phase it stands at completed, and nothing after it is to run (see
// phaseEnd).
func (s *State) signedOff() bool {
	return s.Status == StatusPaused && s.Phase < len(s.Phases) && s.Phases[s.Phase].Status == StatusCompleted
}

// escalate pauses for a human when retry.escalate_when is true, with
// what failed as the pause's note (what the human is paged with); it
// reports whether it did (or an expression failed, which pauses too).
func (d *decider) escalate(env *triggers.Env, failed string) bool {
	when := d.phase().Retry.EscalateWhen
	if when.Value == nil {
		return false
	}
	yes, ok := d.condition(when, env)
	if !ok {
		return true
	}
	if yes {
		f := d.firing(ReasonNeedsHuman, when.Value, env)
		if failed != "" {
			f.Note = failed
		}
		d.s.AttemptEnded = true
		d.pause(f)
	}
	return yes
}

// failedSteps are the steps of the current phase whose last result
// failed, in the phase's order.
func (d *decider) failedSteps() []StepFailure {
	var failed []StepFailure
	for _, step := range d.phase().Steps {
		if v, ok := d.s.Steps[step.Name]; ok && v.Ran && (v.ExitCode != 0 || v.TimedOut) {
			failed = append(failed, StepFailure{Step: step.Name, ExitCode: v.ExitCode, TimedOut: v.TimedOut, Output: failureTail(v.Output)})
		}
	}
	return failed
}

// hasAgentStep reports whether the current phase has an agent step.
func (d *decider) hasAgentStep() bool {
	return slices.ContainsFunc(d.phase().Steps, func(st spec.StepPlan) bool { return st.Agent != nil })
}

// notDoneNote says why a phase is not done: its done_when, false, and
// the steps that failed in the attempt.
func (d *decider) notDoneNote() string {
	note := fmt.Sprintf("done_when (%s) is false after attempt %d", d.phase().DoneWhen.Value.Source, d.s.Attempt)
	for _, f := range d.failedSteps() {
		note += "; " + failureNote(f)
	}
	return note
}

// failureLines and failureBytes bound the output a StepFailure keeps:
// its last lines say what went wrong, and it goes into prompts.
const (
	failureLines = 20
	failureBytes = 2000
)

// failureTail is the last lines of a step's output a StepFailure keeps.
func failureTail(output string) string {
	output = strings.TrimRight(output, " \t\r\n")
	lines := strings.Split(output, "\n")
	if len(lines) > failureLines {
		lines = lines[len(lines)-failureLines:]
	}
	tail := strings.Join(lines, "\n")
	if len(tail) > failureBytes {
		tail = tail[len(tail)-failureBytes:]
		for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
			tail = tail[1:]
		}
		tail = "…" + tail
	}
	return tail
}

// failureNote says how a step failed in one line: its name, its exit
// code (or its time-out) and its last error line.
func failureNote(f StepFailure) string {
	how := fmt.Sprintf("exit code %d", f.ExitCode)
	if f.TimedOut {
		how = "timed out"
	}
	note := fmt.Sprintf("step %q failed (%s)", f.Step, how)
	if line := errorLine(f.Error, f.Output); line != "" {
		note += ": " + line
	}
	return note
}

// errorLine is the line that says best what went wrong: the agent's own
// error, or else the last line of output that is not blank, at most 200
// characters.
func errorLine(errText, output string) string {
	line := lastLine(errText)
	if line == "" {
		line = lastLine(output)
	}
	if runes := []rune(line); len(runes) > 200 {
		line = string(runes[:200]) + "…"
	}
	return line
}

// lastLine is the last line of text that is not blank, trimmed.
func lastLine(text string) string {
	text = strings.TrimRight(text, " \t\r\n")
	return strings.TrimSpace(text[strings.LastIndexByte(text, '\n')+1:])
}

// restart drops the native session when a restart_when trigger is true.
// It reports false when an expression failed and the session paused.
func (d *decider) restart(env *triggers.Env) bool {
	firing, ok := d.firstTrigger(d.phase().RestartWhen, env)
	if !ok {
		return false
	}
	if firing != nil {
		d.s.FreshSession = true
		rec := d.record()
		rec.Restarts++
		rec.Fired = keepLast(append(rec.Fired, *firing))
	}
	return true
}

// retry runs the current step again as a new attempt, after its
// back-off; the agent of an agent step is told what failed (note).
func (d *decider) retry(env *triggers.Env, note string) {
	s, phase := d.s, d.phase()
	var wait time.Duration
	if backoff := phase.Retry.Backoff.Value; backoff != nil && backoff.Program() != nil {
		var err error
		if wait, err = backoff.Program().EvalDuration(env); err != nil {
			d.expressionError(err)
			return
		}
	}
	s.Attempt++
	d.record().Retries++
	if d.step().Agent != nil && s.Resuming == nil {
		s.ResumeContext = true
		s.Resuming = &Resumption{Phase: phase.Name,
			Firing: Firing{Reason: ReasonRetry, Expression: phase.Retry.When.Value.Source, Note: note, At: d.now}}
	}
	if wait <= 0 {
		d.startStep()
		return
	}
	s.Waiting = true
	d.do(Sleep{Duration: wait})
}

// condition evaluates one expression; ok is false when it failed and the
// session paused with reason expression-error.
func (d *decider) condition(setting spec.Setting[*spec.Expr], env *triggers.Env) (value, ok bool) {
	if setting.Value == nil || setting.Value.Program() == nil {
		return false, true
	}
	value, err := setting.Value.Program().Eval(env)
	if err != nil {
		// An error placed in the file already names the expression and
		// where it was written.
		if placed := (*triggers.EvalError)(nil); !errors.As(err, &placed) || placed.Place == "" {
			err = fmt.Errorf("%s (%s): %w", setting.Value.Source, setting.From, err)
		}
		d.expressionError(err)
		return false, false
	}
	return value, true
}

// firstTrigger returns the first trigger of list that is true.
func (d *decider) firstTrigger(list []spec.TriggerPlan, env *triggers.Env) (*Firing, bool) {
	for _, t := range list {
		yes, ok := d.condition(spec.Setting[*spec.Expr]{Value: t.Expr, From: t.From}, env)
		if !ok {
			return nil, false
		}
		if yes {
			f := d.firing(t.Name, t.Expr, env)
			return &f, true
		}
	}
	return nil, true
}

func (d *decider) firing(reason string, e *spec.Expr, env *triggers.Env) Firing {
	f := Firing{Reason: reason, Expression: e.Source, At: d.now}
	if e.Program() != nil {
		f.Values = env.Values(e.Program().Reads)
	}
	if reason == "checkpoint" || env.Checkpoint {
		f.Note = env.CheckpointNote
	}
	return f
}

func (d *decider) expressionError(err error) {
	d.pause(Firing{Reason: ReasonExpressionError, Note: err.Error(), At: d.now})
}

func (d *decider) pause(f Firing) {
	s := d.s
	s.Status, s.Waiting, s.StepRunning = StatusPaused, false, false
	s.Pause = &f
	if s.Phase < len(s.Phases) {
		rec := d.record()
		if rec.Status == StatusRunning {
			rec.Status = StatusPaused
		}
		rec.Fired = keepLast(append(rec.Fired, f))
	}
	d.do(Pause{Firing: f})
}

func (d *decider) fail(reason string) {
	d.s.Status, d.s.FailReason = StatusFailed, reason
	d.record().Status = StatusFailed
	d.do(Fail{Reason: reason})
}

func (d *decider) triggerFired(f Firing) {
	s := d.s
	if s.Status != StatusRunning || !s.StepRunning || s.Stopping != nil {
		return
	}
	s.Stopping = &f
	d.do(StopStep{Reason: f.Reason})
}

func (d *decider) pauseRequested(e PauseRequested) {
	s := d.s
	reason := e.Reason
	if reason == "" {
		reason = ReasonHuman
	}
	f := Firing{Reason: reason, Note: e.Notes, At: d.now}
	if e.Notes != "" && s.Phase < len(s.Phases) && (s.Status == StatusRunning) {
		d.record().Notes = append(d.record().Notes, e.Notes)
	}
	switch {
	case s.Status != StatusRunning:
		return
	case s.StepRunning:
		if s.Stopping == nil {
			s.Stopping = &f
			d.record().Human++
			d.do(StopStep{Reason: reason})
		}
	default:
		// Sleeping through a back-off: pause now; resume retries.
		d.record().Human++
		d.pause(f)
	}
}

func (d *decider) resumed(e Resumed) {
	s := d.s
	if s.Status != StatusPaused && s.Status != StatusFailed {
		return
	}
	if len(e.Conflicts) > 0 {
		// The human left a merge half done: the agent must not build on
		// it. The session stays paused, and says where.
		rec := d.record()
		if e.Notes != "" {
			rec.Notes = append(rec.Notes, e.Notes)
		}
		d.pause(Firing{Reason: ReasonConflicts, At: d.now,
			Note: "conflict markers (<<<<<<<) in " + strings.Join(e.Conflicts, ", ") + ": resolve them, then resume"})
		return
	}
	if s.signedOff() && e.Phase == "" {
		// The final gate (auto_advance: false on the last phase): the
		// human's resume is the sign-off, and nothing is left to run.
		rec := d.record()
		rec.Human++
		if e.Notes != "" {
			rec.Notes = append(rec.Notes, e.Notes)
		}
		s.Status, s.Pause, s.ResumeContext, s.Resuming = StatusCompleted, nil, false, nil
		d.do(Complete{})
		return
	}
	failed := s.Status == StatusFailed
	from := &Resumption{Phase: d.phase().Name, Changed: slices.Clone(e.Changed), Notes: e.Notes}
	switch {
	case s.Pause != nil:
		from.Firing = *s.Pause
	case failed:
		from.Firing = Firing{Reason: ResumedFromFailure, Note: s.FailReason}
	}
	i := d.phaseIndex(e.Phase)
	if i >= 0 {
		from.JumpedTo = e.Phase
		d.jump(i, failed)
	} else if failed || s.AttemptEnded {
		// The step that failed runs again, as a new attempt of its phase
		// (with its own transcript).
		s.Attempt++
	}
	s.AttemptEnded = false
	rec := d.record()
	rec.Human++
	if e.Notes != "" {
		rec.Notes = append(rec.Notes, e.Notes)
	}
	if rec.HeadBefore == "" && rec.TreeBefore == "" && e.Tree != "" {
		// The phase starts now: from the work tree as the resume found it.
		rec.HeadBefore, rec.TreeBefore = e.Head, e.Tree
	}
	s.ResumeContext = true
	if failed || (s.Pause != nil && s.Pause.Reason == ReasonNeedsHuman) {
		// The human has looked: the streak of errors starts again, the
		// attempt count (and so escalate_when) does not.
		s.ConsecutiveErrors = 0
	}
	s.Pause, s.FailReason, s.Resuming = nil, "", from
	if i < 0 && rec.Attempts == 0 && d.phase().When != nil {
		// The phase is reached only now (past a gate, or after its
		// when: failed): its when: decides whether it runs.
		d.enterPhase(s.Phase)
		return
	}
	d.startStep()
}

// jump moves a resumed session to phase i (resume --phase), skipping the
// phases between; the phase it leaves, when it failed, stays failed in
// the history.
func (d *decider) jump(i int, failed bool) {
	s := d.s
	d.skip(s.Phase, i)
	if failed && i != s.Phase {
		d.record().Status = StatusFailed
	}
	s.Phase, s.Step, s.Attempt, s.Errors, s.ConsecutiveErrors, s.PhaseElapsed, s.FilesChanged = i, 0, 1, 0, 0, 0, 0
	s.Steps, s.Failed = map[string]triggers.StepVars{}, nil
}

// rewound sets the session back to the start of a phase, paused, as a
// new attempt of it: the phases from it on are to run again. What they
// recorded stays, but for their checkpoints, which no longer stand for
// the work tree. The agent's native sessions go back to what they were
// as the phase started, resumed as forks where the CLI can (otherwise a
// fresh session); the next agent step gets the resume context. A phase
// recorded before its sessions were (NativeAtStart) starts fresh.
func (d *decider) rewound(e Rewound) {
	s := d.s
	i := d.phaseIndex(e.Phase)
	if i < 0 || s.Status == StatusRunning || s.Status == "" {
		return
	}
	rewound := map[string]bool{}
	for j := i; j < len(s.Phases); j++ {
		rec := &s.Phases[j]
		rec.Status, rec.Checkpoint = "", ""
		rec.HeadBefore, rec.TreeBefore, rec.HeadAfter, rec.Files = "", "", "", nil
		// A summary says where work stands that the rewind undid.
		rec.Summary = ""
		rewound[rec.Name] = true
	}
	s.WorkingSet.Summary = slices.DeleteFunc(s.WorkingSet.Summary, func(m MemoryItem) bool { return rewound[m.Phase] })
	rec := &s.Phases[i]
	s.Phase, s.Step, s.Attempt = i, 0, rec.Attempts+1
	s.Errors, s.ConsecutiveErrors, s.PhaseElapsed, s.FilesChanged = 0, 0, 0, 0
	s.Steps, s.Failed, s.AttemptEnded = map[string]triggers.StepVars{}, nil, false
	s.Only, s.ByHand, s.FailReason, s.Stopping, s.Waiting, s.StepRunning = false, false, "", nil, false, false
	s.PauseCheckpoint = ""
	d.restoreNative(rec.NativeAtStart)
	s.FreshSession, s.ResumeContext = false, true
	rec.Human++
	note := "the work tree was restored to the checkpoint before phase " + e.Phase
	if e.Checkpoint != "" {
		note += " (" + shortCommit(e.Checkpoint) + ")"
	}
	if e.Rescued != "" {
		note += "; what no checkpoint held is kept under " + e.Rescued
	}
	f := Firing{Reason: ReasonRewound, Note: note + "; resume runs the phase again", At: d.now}
	rec.Fired = keepLast(append(rec.Fired, f))
	s.Status, s.Pause = StatusPaused, &f
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// recovered continues after the runner died: the step it ran (or was
// about to retry) runs again, with the resume context.
func (d *decider) recovered(newAttempt bool) {
	s := d.s
	if s.Status != StatusRunning {
		return
	}
	wasRunning := s.StepRunning
	s.StepRunning, s.Waiting, s.Stopping = false, false, nil
	if c := s.Compaction; c != nil {
		// The runner died in the compaction turn: it runs again.
		s.StepRunning = true
		s.Execution++
		d.do(Compact{Phase: s.Phase, Step: s.Step, Attempt: s.Attempt, Execution: s.Execution, SessionKey: c.SessionKey, SessionID: c.SessionID})
		return
	}
	s.ResumeContext = true
	s.Resuming = &Resumption{Firing: Firing{Reason: ReasonRunnerDied, At: d.now}, Phase: d.phase().Name}
	if newAttempt && wasRunning {
		s.Attempt++
	}
	d.startStep()
}

// summarize keeps what a step said last: its checkpoint note, or its last
// line of output.
func summarize(r StepResult) string {
	if r.CheckpointNote != "" {
		return r.CheckpointNote
	}
	out := strings.TrimRight(r.Output, "\n ")
	// The last line that is not a working-set marker (its text is in the
	// working set already) nor empty.
	for {
		i := strings.LastIndexByte(out, '\n')
		line := strings.TrimSpace(out[i+1:])
		if i < 0 || (line != "" && !isMarkerLine(line)) {
			out = line
			break
		}
		out = strings.TrimRight(out[:i], "\n ")
	}
	if runes := []rune(strings.TrimSpace(out)); len(runes) > 200 {
		return string(runes[:200]) + "…"
	}
	return strings.TrimSpace(out)
}

// isMarkerLine reports whether a line starts with a working-set marker.
func isMarkerLine(line string) bool {
	line = strings.TrimLeft(line, "-*+> \t")
	for _, m := range []string{"[DECISION]", "[FACT]", "[TODO]", "[DONE]", "[SUMMARY]"} {
		if strings.HasPrefix(line, m) {
			return true
		}
	}
	return false
}

// historyLength bounds the exit codes and firings a phase record keeps:
// the latest tell the story, and a state that grows with every attempt
// would make every decision (and a resume) slower than the last.
const historyLength = 32

func keepLast[T any](list []T) []T {
	if len(list) > historyLength {
		return list[len(list)-historyLength:]
	}
	return list
}

func cloneMap[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return maps.Clone(m)
}

// outOfScopeNote names the files a step changed outside its phase's
// writes globs (the first 20), and what was done with them.
func outOfScopeNote(phase *spec.PhasePlan, step string, r StepResult) string {
	scope := "[] (read-only)"
	if phase.Writes != nil && len(phase.Writes.Value) > 0 {
		scope = "[" + strings.Join(phase.Writes.Value, ", ") + "]"
	}
	files := r.OutOfScope
	more := ""
	if len(files) > 20 {
		files, more = files[:20], fmt.Sprintf(" and %d more", len(r.OutOfScope)-20)
	}
	done := "review them, then resume (the step runs again)"
	if r.Reverted {
		done = "put back as they were before the step"
	}
	return fmt.Sprintf("step %q changed %d file(s) outside writes %s: %s%s; %s",
		step, len(r.OutOfScope), scope, strings.Join(files, ", "), more, done)
}
