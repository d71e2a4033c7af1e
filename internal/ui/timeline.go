package ui

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// timeline is what GET /api/sessions/{id}/timeline answers: the
// session's phases, their attempts and the steps of each on the wall
// clock, and its pauses, read from its event log through the engine's
// decision function (as status rebuilds its state), so that each step
// finished is placed in the phase, step and attempt it ran as.
type timeline struct {
	Session string    `json:"session"`
	Start   time.Time `json:"start"`
	// End is the last event's time, or now while a step runs.
	End    time.Time       `json:"end"`
	Status string          `json:"status"`
	Phases []timelinePhase `json:"phases"`
	Pauses []timelinePause `json:"pauses"`
}

type timelinePhase struct {
	Name     string            `json:"name"`
	Status   string            `json:"status"`
	Attempts []timelineAttempt `json:"attempts"`
}

// timelineAttempt is one try of a phase; Retry: it follows a failed or
// undone one (a retry, a restart, done_when false).
type timelineAttempt struct {
	Number int            `json:"number"`
	Retry  bool           `json:"retry"`
	Start  time.Time      `json:"start"`
	End    time.Time      `json:"end"`
	Steps  []timelineStep `json:"steps"`
}

// timelineStep is one run of a step: Running while it has not finished.
type timelineStep struct {
	Name      string         `json:"name"`
	Execution int            `json:"execution,omitempty"`
	Start     time.Time      `json:"start"`
	End       time.Time      `json:"end"`
	Running   bool           `json:"running,omitempty"`
	ExitCode  int            `json:"exit_code"`
	Stopped   bool           `json:"stopped,omitempty"`
	TimedOut  bool           `json:"timed_out,omitempty"`
	Tokens    int            `json:"tokens"`
	CostUSD   float64        `json:"cost_usd"`
	Fired     []timelineFire `json:"fired,omitempty"`
	Error     string         `json:"error,omitempty"`
	Checkpt   bool           `json:"checkpoint,omitempty"`
	ElapsedMS int64          `json:"elapsed_ms"`
}

// timelineFire is a trigger that fired while a step ran.
type timelineFire struct {
	At         time.Time `json:"at"`
	Reason     string    `json:"reason"`
	Expression string    `json:"expression,omitempty"`
	Values     string    `json:"values,omitempty"`
	Note       string    `json:"note,omitempty"`
}

// timelinePause is a time the session stood paused (End zero: it still
// is), and why.
type timelinePause struct {
	Phase  string       `json:"phase"`
	Start  time.Time    `json:"start"`
	End    time.Time    `json:"end"`
	Reason string       `json:"reason"`
	Fired  timelineFire `json:"fired"`
}

func (s *Server) sessionTimeline(w http.ResponseWriter, r *http.Request) {
	p, meta, err := s.pipelineOf(r.PathValue("id"))
	if err != nil {
		writeFailure(w, err)
		return
	}
	st, err := store.OpenExisting(p.StateDir)
	if err != nil {
		writeFailure(w, err)
		return
	}
	defer st.Close()
	ref, err := session.Find(st, session.Options{ID: meta.ID})
	if err != nil {
		writeFailure(w, err)
		return
	}
	defer ref.Close()
	if ref.Plan == nil {
		writeError(w, http.StatusConflict, fmt.Sprintf("session %s: its plan cannot be read, so its steps cannot be placed", meta.ID))
		return
	}
	t, err := buildTimeline(ref, time.Now())
	if err != nil {
		writeFailure(w, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// timelineBuilder folds a session's events into its timeline.
type timelineBuilder struct {
	plan   *spec.Plan
	redact func(string) string
	t      timeline
	state  engine.State
	// running is the step started and not finished yet, by execution.
	running map[int]*timelineStep
	lastAt  time.Time
}

// buildTimeline replays the session's log from its first event.
func buildTimeline(ref *session.Ref, now time.Time) (*timeline, error) {
	red := session.NewRedactor(ref.Plan)
	b := &timelineBuilder{plan: ref.Plan, redact: red.String, running: map[int]*timelineStep{},
		t: timeline{Session: ref.ID(), Phases: []timelinePhase{}, Pauses: []timelinePause{}}}
	for _, p := range ref.Plan.Phases {
		b.t.Phases = append(b.t.Phases, timelinePhase{Name: p.Name, Status: "pending", Attempts: []timelineAttempt{}})
	}
	err := ref.X.Events(0, func(_ int64, typ string, payload []byte) error {
		ev, err := engine.DecodeEvent(typ, payload)
		if err != nil {
			return fmt.Errorf("session %s: %w", ref.ID(), err)
		}
		b.apply(ev)
		return nil
	})
	if err != nil {
		return nil, err
	}
	b.finish(ref.Running(), now)
	return &b.t, nil
}

// apply places one event: the step it finished or the trigger it fired
// in the state before it, then what the engine started and paused after
// it.
func (b *timelineBuilder) apply(ev engine.Event) {
	at := eventAt(ev)
	if b.t.Start.IsZero() {
		b.t.Start = at
	}
	b.lastAt = at
	switch e := ev.(type) {
	case engine.StepFinished:
		b.finished(e)
	case engine.TriggerFired:
		if step := b.runningStep(e.Execution); step != nil {
			step.Fired = append(step.Fired, b.fire(e.Firing))
		}
	case engine.Resumed, engine.Recovered, engine.Completed:
		b.endPause(at)
	}
	wasPaused := b.state.Status == engine.StatusPaused
	var acts []engine.Action
	b.state, acts = engine.Decide(b.plan, b.state, ev)
	for _, a := range acts {
		if start, ok := a.(engine.StartStep); ok {
			b.started(start, at)
		}
	}
	if b.state.Status == engine.StatusPaused && !wasPaused && b.state.Pause != nil {
		b.t.Pauses = append(b.t.Pauses, timelinePause{Phase: b.phaseName(b.state.Phase), Start: at,
			Reason: b.state.Pause.Reason, Fired: b.fire(*b.state.Pause)})
	}
}

// started opens the step the engine started, in its attempt of its
// phase.
func (b *timelineBuilder) started(s engine.StartStep, at time.Time) {
	if s.Phase >= len(b.t.Phases) || s.Step >= len(b.plan.Phases[s.Phase].Steps) {
		return
	}
	phase := &b.t.Phases[s.Phase]
	n := len(phase.Attempts)
	if n == 0 || phase.Attempts[n-1].Number != s.Attempt {
		phase.Attempts = append(phase.Attempts, timelineAttempt{Number: s.Attempt, Retry: s.Attempt > 1, Start: at, Steps: []timelineStep{}})
		n++
	}
	attempt := &phase.Attempts[n-1]
	attempt.Steps = append(attempt.Steps, timelineStep{Name: b.plan.Phases[s.Phase].Steps[s.Step].Name, Execution: s.Execution,
		Start: at, Running: true})
	b.running[s.Execution] = &attempt.Steps[len(attempt.Steps)-1]
}

// runningStep is the step of execution e (0: the one running, in a log
// from before executions were numbered).
func (b *timelineBuilder) runningStep(e int) *timelineStep {
	if e == 0 {
		e = b.state.Execution
	}
	return b.running[e]
}

// finished closes the step the event ends: it ran the Elapsed before
// the event.
func (b *timelineBuilder) finished(e engine.StepFinished) {
	step := b.runningStep(e.Execution)
	if step == nil {
		return
	}
	delete(b.running, step.Execution)
	r := e.Result
	step.Running, step.End = false, e.At
	if start := e.At.Add(-r.Elapsed); r.Elapsed > 0 && start.After(step.Start) {
		step.Start = start
	}
	step.ExitCode, step.Stopped, step.TimedOut = r.ExitCode, r.Stopped, r.TimedOut
	step.Tokens, step.CostUSD, step.Checkpt = r.Tokens, r.CostUSD, r.Checkpoint
	step.Error = b.redact(r.Error)
	step.ElapsedMS = step.End.Sub(step.Start).Milliseconds()
}

// finish closes what is still open: a step still running ends now, one
// whose runner died where its log ends; the phases get their status and
// their attempts their spans.
func (b *timelineBuilder) finish(runnerLives bool, now time.Time) {
	b.t.End = b.lastAt
	b.t.Status = string(b.state.Status)
	for _, step := range b.running {
		step.End = b.lastAt
		if runnerLives {
			step.End = now
			b.t.End = now
		} else {
			step.Running = false
			step.Error = "the runner stopped while the step ran"
		}
		step.ElapsedMS = step.End.Sub(step.Start).Milliseconds()
	}
	for i := range b.t.Phases {
		phase := &b.t.Phases[i]
		if i < len(b.state.Phases) && b.state.Phases[i].Status != "" {
			phase.Status = string(b.state.Phases[i].Status)
		}
		for j := range phase.Attempts {
			a := &phase.Attempts[j]
			if len(a.Steps) > 0 {
				// The step's own start: the attempt began when its
				// first step did, not at the event that asked for it.
				a.Start = a.Steps[0].Start
			}
			for _, step := range a.Steps {
				if step.End.After(a.End) {
					a.End = step.End
				}
			}
		}
	}
}

// endPause ends the pause still open.
func (b *timelineBuilder) endPause(at time.Time) {
	if n := len(b.t.Pauses); n > 0 && b.t.Pauses[n-1].End.IsZero() {
		b.t.Pauses[n-1].End = at
	}
}

func (b *timelineBuilder) phaseName(i int) string {
	if i < len(b.plan.Phases) {
		return b.plan.Phases[i].Name
	}
	return ""
}

// fire is a firing as the timeline shows it, redacted.
func (b *timelineBuilder) fire(f engine.Firing) timelineFire {
	keys := make([]string, 0, len(f.Values))
	for k := range f.Values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	values := make([]string, len(keys))
	for i, k := range keys {
		values[i] = fmt.Sprintf("%s=%v", k, f.Values[k])
	}
	return timelineFire{At: f.At, Reason: f.Reason, Expression: b.redact(f.Expression),
		Values: b.redact(strings.Join(values, ", ")), Note: b.redact(f.Note)}
}

// eventAt is when an event happened: every event has its time in At
// (the engine keeps its accessor to itself).
func eventAt(ev engine.Event) time.Time {
	v := reflect.ValueOf(ev)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() == reflect.Struct {
		if f := v.FieldByName("At"); f.IsValid() {
			if at, ok := f.Interface().(time.Time); ok {
				return at
			}
		}
	}
	return time.Time{}
}
