package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/clock"
	"github.com/pipeline-dev/pipeline/steps"
)

// RunRequest asks for a run of a pipeline: the latest paused session of
// its pipeline and spec resumed, or a new one.
type RunRequest struct {
	Pipeline
	// New starts a new session even when the latest one is paused; From
	// starts a new one at a phase (the phases before it skipped), Only
	// one that runs a phase alone.
	New  bool   `json:"new,omitempty"`
	From string `json:"from,omitempty"`
	Only string `json:"only,omitempty"`
	// NoHumanGates runs with the plan's human gates off (CI).
	NoHumanGates bool `json:"no_human_gates,omitempty"`
	// Name names the session (every command then takes it in place of
	// its id): the run continues the session of that name, or starts one.
	Name string `json:"name,omitempty"`
	// Plan is the plan RunPlan loaded of req, when the caller has it
	// (a backend that runs here loads it otherwise).
	Plan *spec.Plan `json:"-"`
}

// Opened is a session opened for a run: held by this process until it is
// closed, and the events its driver starts from.
type Opened struct {
	Session *session.Session
	Events  []engine.Event
	// Resumed says how the session that run resumed had stopped ("" for
	// a new session).
	Resumed string
	// FailedBefore is the latest session of the pipeline and spec, when a
	// new one starts after it failed.
	FailedBefore *store.Summary
}

// RunPlan loads and checks the plan a run of req runs: with the human
// gates off under NoHumanGates, its agents' adapters there, its From or
// Only a phase of it.
func RunPlan(req RunRequest) (*spec.Plan, error) {
	if req.From != "" && req.Only != "" {
		return nil, Usagef("--from and --only cannot go together: --from %s runs from that phase on, --only %s that phase alone", req.From, req.Only)
	}
	plan, err := req.LoadPlan()
	if err != nil {
		return nil, err
	}
	if req.NoHumanGates {
		plan = plan.WithoutHumanGates()
	}
	if err := CheckAdapters(plan); err != nil {
		return nil, err
	}
	if err := session.CheckPhase(plan, req.From+req.Only); err != nil {
		return nil, err
	}
	return plan, nil
}

// OpenRun opens the session a run of plan (see RunPlan) drives: the
// latest paused (or crashed) session of the pipeline and spec, resumed,
// or else a new one.
func OpenRun(ctx context.Context, req RunRequest, plan *spec.Plan) (*Opened, error) {
	st, err := req.Open()
	if err != nil {
		return nil, err
	}
	o := session.Options{File: req.file(), Plan: plan, Create: session.IfNone, Name: req.Name,
		Statuses: []engine.Status{engine.StatusPaused, engine.StatusRunning}, Say: req.Say}
	fresh := req.New || req.From != "" || req.Only != ""
	if fresh {
		o.Create = session.Always
	}
	sess, err := session.Open(ctx, st, o)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	first, err := sess.StartAt(now, req.From+req.Only, req.Only != "")
	if err != nil {
		sess.Close()
		return nil, err
	}
	out := &Opened{Session: sess, Events: []engine.Event{first}}
	if sess.Created {
		if !fresh {
			out.FailedBefore = failedBefore(st, sess)
		}
		return out, nil
	}
	out.Resumed = "paused"
	if pause := sess.State().Pause; pause != nil {
		out.Resumed += ": " + pause.Reason
	}
	if sess.Crashed {
		out.Resumed = "its runner stopped without pausing it"
	}
	events, err := sess.Resume(now, "", "")
	if err != nil {
		sess.Close()
		return nil, err
	}
	out.Events = events[len(events)-1:]
	return out, nil
}

// failedBefore is the session before sess of its pipeline and spec, when
// it failed.
func failedBefore(st *store.Store, sess *session.Session) *store.Summary {
	// The two newest are all it needs: OpenOf keeps them. Open listed
	// them as it looked for a session to continue (the one before sess
	// is the newest of that list): the index is not read again.
	list, looked := sess.Listed()
	if !looked {
		var err error
		if list, err = st.OpenOf(sess.Key); err != nil {
			return nil
		}
	}
	for _, b := range list {
		if b.ID == sess.ID() {
			continue
		}
		if b.Status == string(engine.StatusFailed) {
			sum := st.Summary(b)
			return &sum
		}
		return nil
	}
	return nil
}

// ResumeRequest names a paused, running (crashed) or failed session to
// continue, with notes for the agent and optionally at another phase.
type ResumeRequest struct {
	Pipeline
	Session      string `json:"session,omitempty"`
	Notes        string `json:"notes,omitempty"`
	Phase        string `json:"phase,omitempty"`
	NoHumanGates bool   `json:"no_human_gates,omitempty"`
}

// OpenResume opens the session a resume continues, and records the
// resume.
func OpenResume(ctx context.Context, req ResumeRequest) (*Opened, error) {
	st, err := req.Existing()
	if err != nil {
		return nil, err
	}
	if err := refuseOnFleet(st, req.Session, "resume", whyResume); err != nil {
		st.Close()
		return nil, err
	}
	o, err := req.SessionOptions(req.Session, engine.StatusPaused, engine.StatusRunning, engine.StatusFailed)
	if err != nil {
		return nil, err
	}
	if o.Plan != nil {
		if err := CheckAdapters(o.Plan); err != nil {
			return nil, err
		}
	}
	sess, err := session.Open(ctx, st, o)
	if err != nil {
		return nil, req.elsewhere(req.Session, err)
	}
	if err := CheckAdapters(sess.Plan); err != nil {
		sess.Close()
		return nil, err
	}
	events, err := sess.Resume(time.Now(), req.Notes, req.Phase)
	if err == nil && req.NoHumanGates {
		// Once the session is known to resume: recorded as a change of
		// plan, so that the session's digest names the plan it decides
		// with from now on, and the events carry it.
		if err = sess.SetPlan(time.Now(), sess.Plan.WithoutHumanGates()); err == nil {
			events, err = sess.Resume(time.Now(), req.Notes, req.Phase)
		}
	}
	if err != nil {
		sess.Close()
		return nil, err
	}
	return &Opened{Session: sess, Events: events, Resumed: "resumed"}, nil
}

// CheckAdapters refuses, before anything runs, a plan with an agent kind
// whose adapter is not available.
func CheckAdapters(plan *spec.Plan) error {
	var problems []spec.Problem
	for _, phase := range plan.Phases {
		for _, step := range phase.Steps {
			if step.Agent == nil {
				continue
			}
			if _, err := steps.AdapterFor(step.Agent.Value.Kind); err != nil {
				problems = append(problems, spec.Problem{Position: step.Agent.From.Position,
					Message: fmt.Sprintf("phase %q, step %q: %v", phase.Name, step.Name, err)})
			}
		}
	}
	if problems != nil {
		return &spec.Error{Problems: problems}
	}
	return nil
}

// DriveOptions are how a session is driven in this process.
type DriveOptions struct {
	// View is told what the run does.
	View local.View
	// Grace is the time a stopped step gets to exit before it is killed.
	Grace time.Duration
	// Signals: Ctrl+C and SIGTERM pause the run (a second Ctrl+C kills
	// the step at once).
	Signals bool
	// KeepSignals leaves the signals caught when the run ends, for a
	// process that ends with its run and asks nothing after it (see
	// local.KeepSignalsCaught): a signal after the run is dropped.
	KeepSignals bool
	// Verbose says each trigger that fired, with its values.
	Verbose bool
}

// Drive runs an opened session with the local driver from its events
// until it pauses, fails or completes. A replay goes on past the points
// where its original was resumed by a human, with what they gave.
func Drive(ctx context.Context, sess *session.Session, events []engine.Event, o DriveOptions) (engine.State, error) {
	if o.Signals && o.KeepSignals {
		local.KeepSignalsCaught()
	}
	driver := &local.Driver{View: o.View, Clock: clock.Real{}, Grace: o.Grace, Signals: o.Signals, Verbose: o.Verbose}
	state, err := driver.Run(ctx, sess, events...)
	for err == nil && sess.StoreFailed() == nil &&
		(state.Status == engine.StatusPaused || state.Status == engine.StatusFailed) {
		var next []engine.Event
		if next = giveCue(sess, o.View, state); next == nil {
			break
		}
		state, err = driver.Run(ctx, sess, next...)
	}
	return state, err
}

// giveCue is the next resume of a replay that stopped where its original
// was resumed by a human: with the original's notes, memory changes and
// resume there. nil: the session is no replay, or its original did not
// stop here.
func giveCue(sess *session.Session, view local.View, state engine.State) []engine.Event {
	cue, point, ok, err := sess.NextCue()
	if err != nil {
		view.Say("replay: the original's interventions cannot be read (%v): the session stays %s", err, state.Status)
		return nil
	}
	if !ok {
		if pending, err := sess.PendingCues(); err == nil && len(pending) > 0 {
			view.Say("replay: the original did not stop here; %d of its interventions are still to give, at %s%s: pipeline resume gives them there",
				len(pending), pending[0].Point, map[bool]string{true: " and later"}[len(pending) > 1])
		}
		return nil
	}
	view.Say("replay: the original was resumed by a human at %s; resuming with what they gave%s", point, describeCue(cue))
	events, err := sess.GiveCue(time.Now(), cue)
	if err != nil {
		view.Say("replay: %v", err)
		return nil
	}
	return events
}

// describeCue says what a cue gives, for the run's output.
func describeCue(c session.Cue) string {
	var parts []string
	for _, n := range c.Notes {
		parts = append(parts, fmt.Sprintf("note %q", n))
	}
	if len(c.Memory) > 0 {
		parts = append(parts, fmt.Sprintf("%d memory change(s)", len(c.Memory)))
	}
	if c.ResumeNotes != "" {
		parts = append(parts, fmt.Sprintf("resume notes %q", c.ResumeNotes))
	}
	if c.Phase != "" {
		parts = append(parts, "resume --phase "+c.Phase)
	}
	if len(parts) == 0 {
		return " (a resume without notes)"
	}
	return ": " + strings.Join(parts, ", ")
}

// PreviewResponse is `pipeline resume --dry-run -o json`: what a resume
// would send, with nothing sent, started or written. (Fields in the order
// of their keys.)
type PreviewResponse struct {
	AgentPhase    string `json:"agent_phase"`
	AgentStep     string `json:"agent_step"`
	Attempt       int    `json:"attempt"`
	DryRun        bool   `json:"dry_run"`
	Phase         string `json:"phase"`
	ResumeContext string `json:"resume_context"`
	Session       string `json:"session"`
	Step          string `json:"step"`
	// Warning says what the context had to leave out.
	Warning string `json:"-"`
}

// PreviewResume is what a resume would send: the step, and the resume
// context before the first agent prompt. It reads the session as status
// does: no lock, nothing written.
func PreviewResume(_ context.Context, req ResumeRequest) (*PreviewResponse, error) {
	ref, err := req.FindSession(req.Session, engine.StatusPaused, engine.StatusRunning)
	if err != nil {
		return nil, err
	}
	defer ref.Store.Close()
	defer ref.Close()
	if err := onFleet(ref.X.Meta, "resume", whyResume); err != nil {
		return nil, err
	}
	p, err := session.PreviewResume(ref, time.Now(), req.Notes, req.Phase)
	if err != nil {
		return nil, err
	}
	out := redacted(session.NewRedactor(ref.Plan), PreviewResponse{Session: ref.ID(), DryRun: true, Phase: p.Phase, Step: p.Step,
		Attempt: p.Attempt, AgentPhase: p.AgentPhase, AgentStep: p.AgentStep, ResumeContext: p.Context, Warning: p.Warning})
	return &out, nil
}
