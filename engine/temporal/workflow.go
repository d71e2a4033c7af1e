package temporal

import (
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
)

// Signals and the query of a session's workflow.
const (
	SignalPause  = "pause"  // PauseSignal: pause the session (the running step stops gracefully)
	SignalResume = "resume" // ResumeSignal: continue a paused or failed session
	// SignalRemember: RememberSignal, a human's change to the working set
	// (pipeline memory pin, task add …), taken as the next event.
	SignalRemember = "remember"
	QueryStatus    = "status" // engine.StatusReport, as status prints it
	QueryState     = "state"  // engine.State, the whole of it, for tools and tests
)

// Reasons the workflow pauses with when a worker could not run a step.
const (
	// ReasonWorkerError: the activity failed (the worker could not open
	// the session, or parse the plan): nothing ran; resume runs the step
	// again.
	ReasonWorkerError = "worker-error"
	// ReasonWorkerLost: the workers running the step were lost (heartbeat
	// timeout) MaxLost times in a row.
	ReasonWorkerLost = "worker-lost"
	// ReasonWorkerStopped: the worker running the step was stopped
	// (pipeline worker got SIGINT or SIGTERM): the step was stopped as
	// Ctrl+C stops a local one; resume runs it again.
	ReasonWorkerStopped = "worker-stopped"
)

// PauseSignal asks the session to pause, with the human's notes.
type PauseSignal struct {
	Notes string `json:"notes,omitempty"`
	// Reason is why (engine.ReasonHuman when empty; run's Ctrl+C sends
	// engine.ReasonInterrupted, as a local run records it).
	Reason string `json:"reason,omitempty"`
}

// ResumeSignal continues a paused session, with notes the next agent
// step gets in its resume context, and the phase to jump to, if any.
// Plan, when set, is phases.yaml and the spec as they are now (a spec
// edited while the session was paused): the session decides with it from
// the resume on, and its steps get it. A plan whose phases are not the
// session's is not taken (the client checks that first); the resume
// goes on with the plan the session had.
type ResumeSignal struct {
	Notes string      `json:"notes,omitempty"`
	Phase string      `json:"phase,omitempty"`
	Plan  *PlanSource `json:"plan,omitempty"`
}

// RememberSignal is a human's change to the session's working set: a
// fact pinned or unpinned, a task added or closed.
type RememberSignal struct {
	Notes []engine.MemoryNote `json:"notes"`
}

// Options tune a session's workflow; the zero value is the defaults.
type Options struct {
	// HeartbeatTimeout is how long a step's worker may be silent before
	// it is taken for lost (30s when 0): the step then runs again, as
	// after a runner that died.
	HeartbeatTimeout time.Duration `json:"heartbeat_timeout,omitempty"`
	// StepTimeout bounds one activity, heartbeats or not (24h when 0);
	// a step's own timeout: in phases.yaml ends it sooner.
	StepTimeout time.Duration `json:"step_timeout,omitempty"`
	// MaxEvents is how many events one run decides before it continues
	// as new (1000 when 0), unless the server suggests it sooner.
	MaxEvents int `json:"max_events,omitempty"`
	// MaxLost is how many lost workers in a row a step may have before
	// the session pauses (worker-lost) rather than run it again (3 when
	// 0).
	MaxLost int `json:"max_lost,omitempty"`
	// TaskQueue is where the activities run (the workflow's own when
	// empty).
	TaskQueue string `json:"task_queue,omitempty"`
}

// SessionInput starts (or continues as new) a session's workflow: the
// session, its plan, the state so far and the events to decide first, in
// order (a Started, Resumed or Recovered; after a continue-as-new, the
// events the last run had taken and not decided).
type SessionInput struct {
	SessionID string        `json:"session_id"`
	Plan      PlanSource    `json:"plan"`
	State     engine.State  `json:"state"`
	Events    []EventRecord `json:"events,omitempty"`
	Options   Options       `json:"options,omitzero"`
	// Created is when the session started (the first run's start).
	Created time.Time `json:"created,omitzero"`
	// Runs counts the runs before this one (continue-as-new).
	Runs int `json:"runs,omitempty"`
	// Lost counts the workers lost in a row on the current step.
	Lost int `json:"lost,omitempty"`
	// MemoryAfter is the event of the worker's copy of the session up to
	// which the human's memory changes were taken (see TakeMemory).
	MemoryAfter int64 `json:"memory_after,omitempty"`
	// Changes asks the run for the changes of versionAll up to this
	// version (SessionChanges) without a version marker (see
	// runVersion); 0: the run records its version in a marker.
	Changes workflow.Version `json:"changes,omitempty"`
}

// SessionChanges is the version of the workflow's changes (versionAll)
// a client asks a new session for in SessionInput.Changes.
const SessionChanges = versionAllHeadlineMarker

// SessionWorkflow drives one session: it decides each event with
// engine.Decide and carries out the actions, until the session completes
// or fails; it returns the final state. A paused session waits for the
// resume signal. Everything it does is deterministic: event times are
// workflow.Now, the plan is parsed from the input, steps are activities.
func SessionWorkflow(ctx workflow.Context, in SessionInput) (engine.State, error) {
	plan, err := in.Plan.Load()
	if err != nil {
		return in.State, sdktemporal.NewNonRetryableApplicationError(err.Error(), "plan", err)
	}
	if in.Created.IsZero() {
		in.Created = workflow.GetInfo(ctx).WorkflowStartTime
	}
	has, all := changes(ctx, in.Changes)
	f := &flow{ctx: ctx, plan: plan, in: in, state: in.State, lost: in.Lost,
		pauses: workflow.GetSignalChannel(ctx, SignalPause), resumes: workflow.GetSignalChannel(ctx, SignalResume),
		remembers: workflow.GetSignalChannel(ctx, SignalRemember),
		// A history recorded before the effects were Decide's actions
		// replays without them: its commands are what it recorded.
		effects: has(versionEffects),
		// Before, a step a lost worker ran ran again as the same attempt.
		lostCounts: has(versionLostAttempt),
		// Before, followers had only the status query to go by.
		headlines: has(versionHeadline),
		// Before, the headline went to the memo.
		headlineMarkers: all >= versionAllHeadlineMarker}
	for _, rec := range in.Events {
		ev, err := rec.Event()
		if err != nil {
			return in.State, sdktemporal.NewNonRetryableApplicationError(err.Error(), "event", err)
		}
		f.queue = append(f.queue, ev)
	}
	if err := workflow.SetQueryHandler(ctx, QueryStatus, f.status); err != nil {
		return in.State, err
	}
	if err := workflow.SetQueryHandler(ctx, QueryState, func() (engine.State, error) { return f.state, nil }); err != nil {
		return in.State, err
	}
	for !f.ended {
		if f.dueForNewRun() {
			return f.state, f.continueAsNew()
		}
		if len(f.queue) == 0 {
			f.publish()
			f.wait()
			continue
		}
		ev := f.queue[0]
		f.queue = f.queue[1:]
		f.decide(ev)
	}
	return f.state, nil
}

// flow is one run of a session's workflow.
type flow struct {
	ctx   workflow.Context
	plan  *spec.Plan
	in    SessionInput
	state engine.State
	// queue holds the events taken and not decided yet, in order.
	queue   []engine.Event
	decided int
	ended   bool
	// step is the activity running (a step or a compaction turn); timer
	// the back-off sleeping.
	step      workflow.Future
	stepKind  string
	execution int // the running step's (StartStep.Execution)
	stopStep  workflow.CancelFunc
	timer     workflow.Future
	stopTimer workflow.CancelFunc
	pauses    workflow.ReceiveChannel
	resumes   workflow.ReceiveChannel
	remembers workflow.ReceiveChannel
	lost      int
	// effects: this run carries out the checkpoints, hooks and memory
	// Decide asks for (see versionEffects).
	effects bool
	// lostCounts: a step a lost worker ran counts as an attempt.
	lostCounts bool
	// headlines: this run publishes where the session stands in its
	// history (see Headline); published is the last it did.
	headlines bool
	published Headline
	// headlineMarkers: the headline is published in a marker of the
	// history, not in the memo (see versionAllHeadlineMarker).
	headlineMarkers bool
	// noGit: a worker found the pipeline's folder outside git; no more
	// checkpoint is asked for until the next resume, as a local run
	// looks for git once as it opens the session.
	noGit bool
}

// versionEffects marks the workflow version from which the effects
// (engine.Checkpoint, RunHooks, TakeMemory) run as activities.
const versionEffects = "effects-as-actions"

// versionLostAttempt marks the runs in which a step a lost worker ran
// counts as an attempt.
const versionLostAttempt = "lost-worker-attempt"

// versionHeadline marks the runs that publish their Headline.
const versionHeadline = "headline-memo"

// versionAll marks the runs that have every change above, known by one
// version marker. Each GetVersion of a new run records a marker and
// upserts the TemporalChangeVersion search attribute, a write of the
// server's visibility store: three of each in every session's first
// workflow task, on a server a fleet keeps busy, were one in five of its
// visibility writes. A run that recorded the changes one by one (before
// it) replays them one by one.
const versionAll = "session-changes-1"

// versionAllHeadlineMarker is the version of versionAll from which the
// headline is published in a marker of the history (a side effect), not
// in the memo: each memo upsert is a write of the server's visibility
// store besides the history's, three per session of three steps, a
// twentieth of a dev server's CPU when a hundred sessions run at once.
// A follower reads either.
const versionAllHeadlineMarker workflow.Version = 2

// changes tells, for each change, whether this run has it: all of them
// from versionAll on, else as the run recorded it; all is the version of
// versionAll the run has (DefaultVersion when none). asked is the
// version its input asks for (see runVersion).
func changes(ctx workflow.Context, asked workflow.Version) (has func(change string) bool, all workflow.Version) {
	all = runVersion(ctx, asked)
	return func(change string) bool {
		return all >= 1 || workflow.GetVersion(ctx, change, workflow.DefaultVersion, 1) >= 1
	}, all
}

// runVersion is the version of versionAll this run has. A version
// marker (GetVersion) comes with an upsert of the TemporalChangeVersion
// search attribute: an event more in the session's first workflow task,
// and a write of the server's visibility store, for every session. So a
// client asks for the version in the run's input (asked, the input's
// Changes), which the history keeps as well as a marker would, and a
// worker that knows that version takes it with no marker. A worker that
// does not (an older one, which reads no Changes, or asked is newer than
// it) records its own in a marker, as before; a replay takes the marker
// when the history has one (GetVersion records nothing in a replay):
// versionAll's, or, from a worker older than versionAll, one per change
// (then each change is as recorded); else the version asked. A worker
// older than every marker (before versionEffects) records none, and
// cannot be told from one that took the version asked: a session that a
// client of this version started on such a worker is not to move to a
// newer worker while it runs.
func runVersion(ctx workflow.Context, asked workflow.Version) workflow.Version {
	if asked < 1 || asked > versionAllHeadlineMarker {
		return workflow.GetVersion(ctx, versionAll, workflow.DefaultVersion, versionAllHeadlineMarker)
	}
	if !workflow.IsReplaying(ctx) {
		return asked
	}
	if recorded := workflow.GetVersion(ctx, versionAll, workflow.DefaultVersion, versionAllHeadlineMarker); recorded != workflow.DefaultVersion {
		return recorded
	}
	if workflow.GetVersion(ctx, versionEffects, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
		return workflow.DefaultVersion
	}
	return asked
}

// MemoHeadline is the memo field of a session's workflow that held its
// Headline in the runs from before versionAllHeadlineMarker.
const MemoHeadline = "headline"

// Headline is where a session stands, as its workflow publishes it in
// its history each time it changes, before it waits for what comes next
// (a side effect's marker, HeadlineMarker; a memo upsert, MemoHeadline,
// in runs from before versionAllHeadlineMarker). A follower reads it
// from the history the server pushes to it, so that following a session
// asks no worker anything until it stops. Interventions counts the human
// interventions (see Interventions): a resumed session has stopped again
// once it grows.
type Headline struct {
	Status        string `json:"status"`
	Phase         string `json:"phase"`
	Step          string `json:"step,omitempty"`
	Attempt       int    `json:"attempt"`
	Interventions int    `json:"interventions"`
}

// HeadlineOf is the headline of a status report.
func HeadlineOf(r engine.StatusReport) Headline {
	return Headline{Status: r.Status, Phase: r.Phase, Step: r.Step, Attempt: r.Attempt, Interventions: Interventions(r)}
}

// HeadlineMarker is the value of the side effect that publishes a
// session's Headline in its history (a MarkerRecorded event of the
// SDK's SideEffect marker, its data this).
type HeadlineMarker struct {
	Headline *Headline `json:"headline"`
}

// publish records the session's headline in its history when it
// changed: a marker, or, in a run from before versionAllHeadlineMarker,
// a memo upsert. Either is a command of the workflow task under way: no
// task more.
func (f *flow) publish() {
	if !f.headlines {
		return
	}
	r, _ := f.status()
	h := HeadlineOf(r)
	if h == f.published {
		return
	}
	if f.headlineMarkers {
		workflow.SideEffect(f.ctx, func(workflow.Context) any { return HeadlineMarker{Headline: &h} })
		f.published = h
		return
	}
	if err := workflow.UpsertMemo(f.ctx, map[string]any{MemoHeadline: h}); err != nil {
		workflow.GetLogger(f.ctx).Warn("the session's headline cannot be published", "error", err.Error())
		return
	}
	f.published = h
}

func (f *flow) now() time.Time { return workflow.Now(f.ctx) }

func (f *flow) status() (engine.StatusReport, error) {
	r := engine.Report(f.plan, f.state)
	r.ID, r.Pipeline, r.File, r.Spec, r.Created = f.in.SessionID, f.plan.Name.Value, f.plan.File, f.plan.Spec, f.in.Created
	return r, nil
}

// decide runs Decide on one event and carries out its actions.
func (f *flow) decide(ev engine.Event) {
	state, actions := engine.Decide(f.plan, f.state, ev)
	f.state = state
	f.decided++
	log := workflow.GetLogger(f.ctx)
	for _, a := range actions {
		switch a := a.(type) {
		case engine.Checkpoint:
			f.checkpoint(a)
		case engine.TakeMemory:
			f.takeMemory()
		case engine.RunHooks:
			f.runHooks(a)
		case engine.StartStep:
			f.startStep(a)
		case engine.Compact:
			f.startCompaction(a)
		case engine.StopStep:
			if f.stopStep != nil {
				f.stopStep()
			}
		case engine.Sleep:
			ctx, cancel := workflow.WithCancel(f.ctx)
			f.timer, f.stopTimer = workflow.NewTimer(ctx, a.Duration), cancel
		case engine.DropSession:
			log.Info("restart: the agent's native session is dropped", "key", a.Key)
		case engine.Pause:
			if f.stopTimer != nil {
				f.stopTimer()
				f.timer, f.stopTimer = nil, nil
			}
			log.Info("paused", "reason", a.Firing.Reason, "note", a.Firing.Note)
		case engine.Complete, engine.Fail:
			f.ended = true
		}
	}
}

func (f *flow) activityContext() (workflow.Context, workflow.CancelFunc) {
	o := f.in.Options
	heartbeat, timeout := o.HeartbeatTimeout, o.StepTimeout
	if heartbeat <= 0 {
		heartbeat = 30 * time.Second
	}
	if timeout <= 0 {
		timeout = 24 * time.Hour
	}
	ctx := workflow.WithActivityOptions(f.ctx, workflow.ActivityOptions{
		TaskQueue:           o.TaskQueue,
		StartToCloseTimeout: timeout,
		HeartbeatTimeout:    heartbeat,
		// The step's end is wanted, stopped: the activity returns it.
		WaitForCancellation: true,
		// Retries are phases.yaml's, through Decide: one attempt here.
		RetryPolicy: &sdktemporal.RetryPolicy{MaximumAttempts: 1},
	})
	return workflow.WithCancel(ctx)
}

func (f *flow) startStep(a engine.StartStep) {
	ctx, cancel := f.activityContext()
	f.step, f.stopStep, f.stepKind = workflow.ExecuteActivity(ctx, ActivityRunStep,
		StepInput{SessionID: f.in.SessionID, Plan: f.in.Plan, State: f.state, Start: a}), cancel, ActivityRunStep
	f.execution = a.Execution
}

func (f *flow) startCompaction(a engine.Compact) {
	ctx, cancel := f.activityContext()
	f.step, f.stopStep, f.stepKind = workflow.ExecuteActivity(ctx, ActivityCompact,
		CompactInput{SessionID: f.in.SessionID, Plan: f.in.Plan, State: f.state, Compact: a}), cancel, ActivityCompact
	f.execution = a.Execution
}

// wait blocks until something happens: the step's end, the timer, a
// signal; and queues what it means as events.
func (f *flow) wait() {
	sel := workflow.NewSelector(f.ctx)
	if f.step != nil {
		sel.AddFuture(f.step, func(fut workflow.Future) { f.stepEnded(fut) })
	}
	if f.timer != nil {
		sel.AddFuture(f.timer, func(fut workflow.Future) {
			f.timer, f.stopTimer = nil, nil
			if fut.Get(f.ctx, nil) == nil {
				f.queue = append(f.queue, engine.TimerExpired{At: f.now()})
			}
		})
	}
	sel.AddReceive(f.pauses, func(c workflow.ReceiveChannel, _ bool) {
		var p PauseSignal
		c.Receive(f.ctx, &p)
		f.paused(p)
	})
	sel.AddReceive(f.resumes, func(c workflow.ReceiveChannel, _ bool) {
		var r ResumeSignal
		c.Receive(f.ctx, &r)
		f.resumed(r)
	})
	sel.AddReceive(f.remembers, func(c workflow.ReceiveChannel, _ bool) {
		var r RememberSignal
		c.Receive(f.ctx, &r)
		f.remembered(r)
	})
	sel.Select(f.ctx)
}

// remembered queues a human's change to the working set: decided as it
// comes, it reaches the next step's prompt.
func (f *flow) remembered(r RememberSignal) {
	if len(r.Notes) > 0 {
		f.queue = append(f.queue, engine.Remembered{At: f.now(), Source: engine.SourceHuman, Notes: r.Notes})
	}
}

// paused queues what a pause signal means: a pause request; on a session
// that is paused already, its notes for the next resume (as pipeline
// pause --notes does locally).
func (f *flow) paused(p PauseSignal) {
	if f.state.Status == engine.StatusPaused && len(f.queue) == 0 && !f.state.StepRunning {
		if p.Notes != "" {
			f.queue = append(f.queue, engine.Noted{At: f.now(), Notes: p.Notes})
		}
		return
	}
	reason := p.Reason
	if reason == "" {
		reason = engine.ReasonHuman
	}
	f.queue = append(f.queue, engine.PauseRequested{At: f.now(), Reason: reason, Notes: p.Notes})
}

// resumed queues a resume; with a plan, a paused session switches to it
// first (PlanChanged, as pipeline watch records a changed phases.yaml).
func (f *flow) resumed(r ResumeSignal) {
	f.noGit = false // the human may have made it a repository meanwhile
	resumable := (f.state.Status == engine.StatusPaused || f.state.Status == engine.StatusFailed) && len(f.queue) == 0 && !f.state.StepRunning
	if r.Plan != nil && resumable {
		plan, err := r.Plan.Load()
		if err == nil {
			err = engine.CheckPlan(plan, f.state, f.in.SessionID)
		}
		if err != nil {
			workflow.GetLogger(f.ctx).Warn("the resume's plan is not taken; the session goes on with its own", "error", err.Error())
		} else {
			f.plan, f.in.Plan = plan, *r.Plan
			f.queue = append(f.queue, engine.PlanChanged{At: f.now(), Plan: plan.Digest})
		}
	}
	f.queue = append(f.queue, engine.Resumed{At: f.now(), Notes: r.Notes, Phase: r.Phase, Plan: f.plan.Digest})
}

// stepEnded turns the activity's end into events: what the step said
// (markers, the trigger that stopped it), then its end. A worker lost
// mid-step is a runner that died: Recovered runs the step again.
func (f *flow) stepEnded(fut workflow.Future) {
	kind, execution := f.stepKind, f.execution
	f.step, f.stopStep, f.stepKind = nil, nil, ""
	now := f.now()
	remember := func(phase string, notes []engine.MemoryNote) {
		if len(notes) > 0 {
			f.queue = append(f.queue, engine.Remembered{At: now, Phase: phase, Source: engine.SourceAgent, Notes: notes})
		}
	}
	var err error
	if kind == ActivityCompact {
		var out CompactOutput
		if err = fut.Get(f.ctx, &out); err == nil {
			f.lost = 0
			remember(out.Phase, out.Markers)
			out.Compacted.At, out.Compacted.Execution = now, execution
			f.queue = append(f.queue, out.Compacted)
			return
		}
	} else {
		var out StepOutput
		if err = fut.Get(f.ctx, &out); err == nil {
			f.lost = 0
			remember(out.Phase, out.Markers)
			if out.Fired != nil {
				f.queue = append(f.queue, engine.TriggerFired{At: now, Firing: *out.Fired, Execution: execution})
			}
			f.queue = append(f.queue, engine.StepFinished{At: now, Result: out.Result, Execution: execution})
			return
		}
	}
	var timeout *sdktemporal.TimeoutError
	var canceled *sdktemporal.CanceledError
	switch {
	case errors.As(err, &canceled):
		// Stopped before the step's end could be had: stopped all the
		// same.
		f.lost = 0
		f.stepGone(kind, execution, now, engine.StepResult{Stopped: true, ExitCode: -1, Error: "the step was stopped"}, "the compaction turn was stopped before it answered: the working set is its markers and the phase summaries")
	case errors.As(err, &timeout) && timeout.TimeoutType() != enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START:
		var p Progress
		if timeout.HasLastHeartbeatDetails() && timeout.LastHeartbeatDetails(&p) == nil {
			remember(p.Phase, p.Markers)
		}
		f.lost++
		if f.lost > f.maxLost() {
			f.lost = 0
			f.queue = append(f.queue, engine.TriggerFired{At: now, Execution: execution, Firing: engine.Firing{Reason: ReasonWorkerLost, At: now,
				Note: fmt.Sprintf("the worker running the step was lost %d times in a row (%v)", f.maxLost()+1, timeout.TimeoutType())}})
			f.stepGone(kind, execution, now, engine.StepResult{Stopped: true, ExitCode: -1, Error: "the worker was lost"}, "the worker was lost")
			return
		}
		f.queue = append(f.queue, engine.Recovered{At: now, Plan: f.plan.Digest, NewAttempt: f.lostCounts && kind != ActivityCompact})
	default:
		f.lost = 0
		f.queue = append(f.queue, engine.TriggerFired{At: now, Execution: execution, Firing: engine.Firing{Reason: ReasonWorkerError, At: now,
			Note: "the worker could not run the step: " + err.Error()}})
		f.stepGone(kind, execution, now, engine.StepResult{Stopped: true, ExitCode: -1, Error: err.Error()}, "the compaction turn could not run: "+err.Error())
	}
}

// stepGone queues the end of a step or a compaction that returned no
// result of its own.
func (f *flow) stepGone(kind string, execution int, now time.Time, r engine.StepResult, fallback string) {
	if kind == ActivityCompact {
		f.queue = append(f.queue, engine.Compacted{At: now, Fallback: fallback, Execution: execution})
		return
	}
	f.queue = append(f.queue, engine.StepFinished{At: now, Result: r, Execution: execution})
}

func (f *flow) maxLost() int {
	if f.in.Options.MaxLost > 0 {
		return f.in.Options.MaxLost
	}
	return 3
}

func (f *flow) maxEvents() int {
	if f.in.Options.MaxEvents > 0 {
		return f.in.Options.MaxEvents
	}
	return 1000
}

// dueForNewRun: the history has grown enough to continue as new, and
// nothing is in flight (no activity, no timer, no signal not taken) that
// the new run could not take over.
func (f *flow) dueForNewRun() bool {
	if f.step != nil || f.timer != nil || f.ended {
		return false
	}
	if f.decided < f.maxEvents() && !workflow.GetInfo(f.ctx).GetContinueAsNewSuggested() {
		return false
	}
	if f.decided == 0 {
		return false
	}
	// Signals not taken yet become events of this run first.
	for {
		var p PauseSignal
		if !f.pauses.ReceiveAsync(&p) {
			break
		}
		f.queue = append(f.queue, engine.PauseRequested{At: f.now(), Reason: engine.ReasonHuman, Notes: p.Notes})
	}
	for {
		var r ResumeSignal
		if !f.resumes.ReceiveAsync(&r) {
			break
		}
		f.queue = append(f.queue, engine.Resumed{At: f.now(), Notes: r.Notes, Phase: r.Phase, Plan: f.plan.Digest})
	}
	for {
		var r RememberSignal
		if !f.remembers.ReceiveAsync(&r) {
			break
		}
		f.remembered(r)
	}
	return true
}

// continueAsNew carries the state and the events not decided yet to a
// new run.
func (f *flow) continueAsNew() error {
	next := f.in
	next.State, next.Events, next.Runs, next.Lost = f.state, nil, f.in.Runs+1, f.lost
	// A new run has every change, as GetVersion would give it, with no
	// marker (see runVersion).
	next.Changes = SessionChanges
	next.MemoryAfter = f.in.MemoryAfter
	for _, ev := range f.queue {
		rec, err := Record(ev)
		if err != nil {
			return err
		}
		next.Events = append(next.Events, rec)
	}
	return workflow.NewContinueAsNewError(f.ctx, SessionWorkflow, next)
}

// effectContext runs an effect's activity: bounded by timeout, tried
// attempts times.
func (f *flow) effectContext(timeout time.Duration, attempts int32) workflow.Context {
	return workflow.WithActivityOptions(f.ctx, workflow.ActivityOptions{
		TaskQueue:           f.in.Options.TaskQueue,
		StartToCloseTimeout: timeout,
		RetryPolicy:         &sdktemporal.RetryPolicy{MaximumAttempts: attempts},
	})
}

// localEffect runs a short effect (a checkpoint, the memory intake) as a
// local activity: on the worker that runs this workflow task, in the
// pipeline's folder there, without a round trip through the server's
// task queues (about 100 ms each on a busy dev server, and there is one
// before every step). Tried three times within two minutes.
func (f *flow) localEffect(name string, in, out any) error {
	ctx := workflow.WithLocalActivityOptions(f.ctx, workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: 2 * time.Minute,
		RetryPolicy:            &sdktemporal.RetryPolicy{MaximumAttempts: 3},
	})
	return workflow.ExecuteLocalActivity(ctx, name, in).Get(f.ctx, out)
}

func (f *flow) effectInput() EffectInput {
	return EffectInput{SessionID: f.in.SessionID, Plan: f.in.Plan}
}

// apply decides an event that answers an effect (Checkpointed,
// Remembered): it changes the state, before the step that follows starts.
func (f *flow) apply(ev engine.Event) {
	f.state, _ = engine.Decide(f.plan, f.state, ev)
	f.decided++
}

// checkpoint keeps the work tree in git on a worker, in the step's
// folder, before the next step starts; one git cannot make is logged, and
// the session goes on without it, as a local run does.
func (f *flow) checkpoint(a engine.Checkpoint) {
	if !f.effects || f.noGit {
		return
	}
	log := workflow.GetLogger(f.ctx)
	var out CheckpointOutput
	err := f.localEffect(ActivityCheckpoint, CheckpointInput{EffectInput: f.effectInput(), Checkpoint: a}, &out)
	switch {
	case err != nil:
		log.Warn("no checkpoint", "name", a.Name, "error", err.Error())
	case out.NoGit:
		f.noGit = true
		log.Info("the pipeline's folder is not in a git work tree: this session keeps no checkpoints")
	case out.Problem != "":
		log.Warn("no checkpoint", "name", a.Name, "problem", out.Problem)
	default:
		f.apply(engine.Checkpointed{At: f.now(), Kind: a.Kind, Phase: a.Phase, Commit: out.Commit})
	}
}

// takeMemory decides the changes to the working set a human made since
// the last it took, before the next step starts: its prompt has them.
func (f *flow) takeMemory() {
	if !f.effects {
		return
	}
	var out MemoryOutput
	err := f.localEffect(ActivityTakeMemory, MemoryInput{EffectInput: f.effectInput(), After: f.in.MemoryAfter}, &out)
	if err != nil {
		workflow.GetLogger(f.ctx).Warn("the memory changes left for the session cannot be taken now: they wait for the next step", "error", err.Error())
		return
	}
	f.in.MemoryAfter = max(f.in.MemoryAfter, out.Last)
	for _, ev := range out.Remembered {
		f.apply(ev)
	}
}

// runHooks runs the on: commands on a worker as the run stops; each is
// bounded by engine.HookTimeout, and a hook that fails is logged.
func (f *flow) runHooks(a engine.RunHooks) {
	if !f.effects {
		return
	}
	lines := 0
	for _, ev := range a.Events {
		lines += len(f.plan.Hooks.For(ev))
	}
	timeout := time.Duration(lines)*engine.HookTimeout + time.Minute
	// Once: a hook tells somebody, and twice would tell them twice.
	err := workflow.ExecuteActivity(f.effectContext(timeout, 1), ActivityRunHooks,
		HooksInput{EffectInput: EffectInput{SessionID: f.in.SessionID, Plan: f.in.Plan, State: f.state}, Events: a.Events}).Get(f.ctx, nil)
	if err != nil {
		workflow.GetLogger(f.ctx).Warn("the on: hooks could not run", "events", a.Events, "error", err.Error())
	}
}
