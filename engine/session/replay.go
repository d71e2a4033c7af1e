package session

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// ReplayCuesFile holds, in a replay's folder, the original session's
// human interventions (Cues) and what the replay changed: every run of
// the replay (pipeline replay, then pipeline resume) gives each cue when
// the replay stops at its point.
const ReplayCuesFile = "replay-cues.json"

// Point is where a session stopped and a human took it on: the n-th stop
// of the session at one phase and step for one reason. Reason is the
// pause's (a trigger's name, checkpoint, needs-human, phase-complete,
// out-of-scope, expression-error …), or "failed" for a failure that a
// resume retried. Phase and Step are where the session stood: for
// phase-complete (auto_advance: false), the phase the resume starts.
// N counts from 1 the stops of the session with the same phase, step
// and reason, so that a checkpoint the agent prints at every attempt is
// told apart by its number.
//
// The stops a replay cannot meet are no points: a human's pause or
// Ctrl+C (paused-by-human, interrupted), a rate limit, a store error,
// conflicts a human left, a rewind, a runner that died.
type Point struct {
	Phase  string `json:"phase"`
	Step   string `json:"step"`
	Reason string `json:"reason"`
	N      int    `json:"n"`
}

func (p Point) String() string {
	return fmt.Sprintf("the %s stop at %s/%s (%s)", ordinal(p.N), p.Phase, p.Step, p.Reason)
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// Cue is what a human did to the original session at a point: the notes
// given before the resume (pause --notes, notes on the paused session),
// the working-set changes (memory pin, task add …), and the resume
// itself (its --notes, its --phase). A human's notes and memory changes
// at a stop that is no point (a pause by hand, say) go with the next
// cue: the replay cannot stop where the original was stopped by hand.
type Cue struct {
	Point       Point               `json:"point"`
	Notes       []string            `json:"notes,omitempty"`
	Memory      []engine.MemoryNote `json:"memory,omitempty"`
	ResumeNotes string              `json:"resume_notes,omitempty"`
	Phase       string              `json:"phase,omitempty"`
}

// Cues are the original's interventions a replay gives, and what it did
// after its last point (given nowhere: the replay says so).
type Cues struct {
	Of       string `json:"of"`
	Model    string `json:"model,omitempty"`
	Agent    string `json:"agent,omitempty"`
	Cues     []Cue  `json:"cues"`
	Unplaced Cue    `json:"unplaced,omitzero"`
}

// replayable reports whether a replay can stop for reason too.
func replayable(reason string) bool {
	switch reason {
	case engine.ReasonHuman, engine.ReasonInterrupted, engine.ReasonRateLimit, engine.ReasonStoreError,
		engine.ReasonConflicts, engine.ReasonRewound, engine.ReasonRunnerDied, "":
		return false
	}
	return true
}

func stopped(s engine.State) bool {
	return s.Status == engine.StatusPaused || s.Status == engine.StatusFailed
}

// pointWalk follows a session's events through Decide and keeps the
// point the session stands at.
type pointWalk struct {
	plan   *spec.Plan
	state  engine.State
	counts map[Point]int
	at     *Point
}

func newPointWalk(plan *spec.Plan) *pointWalk {
	return &pointWalk{plan: plan, counts: map[Point]int{}}
}

func (w *pointWalk) step(ev engine.Event) {
	before := w.state
	w.state, _ = engine.Decide(w.plan, w.state, ev)
	s := w.state
	if !stopped(s) {
		w.at = nil
		return
	}
	if stopped(before) && before.Status == s.Status && sameStop(before.Pause, s.Pause) {
		return // notes, memory, a checkpoint: the same stop
	}
	w.at = nil
	reason := engine.ResumedFromFailure
	if s.Status == engine.StatusPaused {
		reason = ""
		if s.Pause != nil {
			reason = s.Pause.Reason
		}
	}
	if !replayable(reason) {
		return
	}
	p := Point{Reason: reason}
	if s.Phase < len(w.plan.Phases) {
		p.Phase = w.plan.Phases[s.Phase].Name
		if s.Step < len(w.plan.Phases[s.Phase].Steps) {
			p.Step = w.plan.Phases[s.Phase].Steps[s.Step].Name
		}
	}
	w.counts[p]++
	p.N = w.counts[p]
	w.at = &p
}

func sameStop(a, b *engine.Firing) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Reason == b.Reason && a.At.Equal(b.At) && a.Note == b.Note && a.Expression == b.Expression
}

// CuesOf finds the human interventions of a session, from its events
// decided with plan, each at the point it answered.
func CuesOf(plan *spec.Plan, events []engine.Event) Cues {
	var out Cues
	w := newPointWalk(plan)
	var pending Cue
	for _, ev := range events {
		switch e := ev.(type) {
		case engine.PauseRequested:
			if e.Notes != "" {
				pending.Notes = append(pending.Notes, e.Notes)
			}
		case engine.Noted:
			if e.Notes != "" {
				pending.Notes = append(pending.Notes, e.Notes)
			}
		case engine.Remembered:
			if e.Source == engine.SourceHuman {
				pending.Memory = append(pending.Memory, e.Notes...)
			}
		case engine.Resumed:
			if w.at != nil && stopped(w.state) {
				cue := pending
				cue.Point, cue.ResumeNotes, cue.Phase = *w.at, e.Notes, e.Phase
				out.Cues = append(out.Cues, cue)
				pending = Cue{}
			} else if e.Notes != "" {
				pending.Notes = append(pending.Notes, e.Notes)
			}
		}
		w.step(ev)
	}
	if len(pending.Notes) > 0 || len(pending.Memory) > 0 {
		out.Unplaced = pending
	}
	return out
}

// PointOf is the point a session stands at after events (decided with
// plan), and whether it stands at one: it is paused or failed, for a
// reason a replay can meet.
func PointOf(plan *spec.Plan, events []engine.Event) (Point, bool) {
	w := newPointWalk(plan)
	for _, ev := range events {
		w.step(ev)
	}
	if w.at == nil {
		return Point{}, false
	}
	return *w.at, true
}

// Find returns the cue for point p, if any.
func (c Cues) Find(p Point) (Cue, bool) {
	i := slices.IndexFunc(c.Cues, func(cue Cue) bool { return cue.Point == p })
	if i < 0 {
		return Cue{}, false
	}
	return c.Cues[i], true
}

// Events reads every event of a session, in order.
func Events(x *store.Session) ([]engine.Event, error) {
	var events []engine.Event
	err := x.Events(0, func(_ int64, typ string, payload []byte) error {
		ev, err := engine.DecodeEvent(typ, payload)
		if err != nil {
			return fmt.Errorf("session %s: %w", x.Meta.ID, err)
		}
		events = append(events, ev)
		return nil
	})
	return events, err
}

// ReadCues reads a session's replay cues; nil for a session that is no
// replay.
func ReadCues(x *store.Session) (*Cues, error) {
	content, err := x.ReadFile(ReplayCuesFile)
	if err != nil || content == nil {
		return nil, err
	}
	var c Cues
	if err := json.Unmarshal(content, &c); err != nil {
		return nil, fmt.Errorf("session %s: %s is not readable: %w", x.Meta.ID, ReplayCuesFile, err)
	}
	return &c, nil
}

// WriteCues keeps the cues of the replay this session is, before it
// starts; the notes were redacted when the original recorded them, and
// are again with this session's secrets.
func (s *Session) WriteCues(c Cues) error {
	content, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return s.X.WriteFile(ReplayCuesFile, []byte(s.Redactor().String(string(content))))
}

// NextCue is the original's intervention at the point this replay stands
// at now (paused or failed); false when the session is no replay, does
// not stand at a point, or the original did nothing there.
func (s *Session) NextCue() (Cue, Point, bool, error) {
	c, err := ReadCues(s.X)
	if err != nil || c == nil || !stopped(s.state) {
		return Cue{}, Point{}, false, err
	}
	events, err := Events(s.X)
	if err != nil {
		return Cue{}, Point{}, false, err
	}
	p, ok := PointOf(s.Plan, events)
	if !ok {
		return Cue{}, Point{}, false, nil
	}
	cue, ok := c.Find(p)
	return cue, p, ok, nil
}

// PendingCues are the cues of this replay whose point it has not passed
// yet (its events hold no resume from that point).
func (s *Session) PendingCues() ([]Cue, error) {
	c, err := ReadCues(s.X)
	if err != nil || c == nil {
		return nil, err
	}
	events, err := Events(s.X)
	if err != nil {
		return nil, err
	}
	passed := CuesOf(s.Plan, events)
	var pending []Cue
	for _, cue := range c.Cues {
		if _, ok := passed.Find(cue.Point); !ok {
			pending = append(pending, cue)
		}
	}
	return pending, nil
}

// GiveCue returns the events that give the original's intervention at
// the point the session stands at: the notes, the working-set changes,
// then the resume with its notes (and its jump).
func (s *Session) GiveCue(now time.Time, cue Cue) ([]engine.Event, error) {
	var events []engine.Event
	for _, n := range cue.Notes {
		events = append(events, engine.Noted{At: now, Notes: n})
	}
	if len(cue.Memory) > 0 {
		events = append(events, engine.Remembered{At: now, Source: engine.SourceHuman, Notes: cue.Memory})
	}
	resume, err := s.Resume(now, cue.ResumeNotes, cue.Phase)
	if err != nil {
		return nil, err
	}
	return append(events, resume...), nil
}

// ReplayPlan is plan as a replay runs it: the model and agent kind it
// was given over every agent step.
func ReplayPlan(plan *spec.Plan, kind, model string) *spec.Plan {
	return plan.WithAgent(kind, model)
}

// planForSession is plan with the overrides of the replay x is, if it
// is one.
func planForSession(plan *spec.Plan, x *store.Session) *spec.Plan {
	c, err := ReadCues(x)
	if err != nil || c == nil {
		return plan
	}
	return ReplayPlan(plan, c.Agent, c.Model)
}
