package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// LoadState rebuilds a session's state: its last snapshot, then every
// event recorded after it, through the decision function.
func LoadState(plan *spec.Plan, x *store.Session) (engine.State, error) {
	seq, raw, err := x.ReadSnapshot()
	if err != nil {
		return engine.State{}, err
	}
	var s engine.State
	if raw != nil {
		// A phase each: decoded into room made for them, not a slice
		// grown ten times (1.2 MB for a 1,000-phase plan).
		s.Phases = make([]engine.PhaseRecord, 0, len(plan.Phases))
		if err := json.Unmarshal(raw, &s); err != nil {
			return engine.State{}, fmt.Errorf("session %s: the state is not readable: %w", x.Meta.ID, err)
		}
	}
	err = x.Events(seq, func(_ int64, typ string, payload []byte) error {
		ev, err := engine.DecodeEvent(typ, payload)
		if err != nil {
			return fmt.Errorf("session %s: %w", x.Meta.ID, err)
		}
		s, _ = engine.Decide(plan, s, ev)
		return nil
	})
	if err != nil {
		return engine.State{}, err
	}
	if err := CheckPlan(plan, s, x.Meta.ID); err != nil {
		return engine.State{}, err
	}
	return s, nil
}

// lastStatus is the status LoadState gives the session, read from its
// snapshot alone when no event follows it (a runner that ended wrote its
// last snapshot as of its last event, in state.json or on that event's
// line of the log): no replay, and no decoder of the
// whole State built by reflection for the one field that the sweep of
// the previous session's leftovers, at the start of every run, reads.
// Unlike LoadState, a plan whose phases are no longer the session's does
// not hide that the session was running.
func lastStatus(plan *spec.Plan, x *store.Session) engine.Status {
	seq, raw, err := x.ReadSnapshot()
	if err == nil && raw != nil && seq == x.Seq() {
		var s struct {
			Status engine.Status `json:"status"`
		}
		if json.Unmarshal(raw, &s) == nil {
			return s.Status
		}
	}
	s, _ := LoadState(plan, x)
	return s.Status
}

// CheckPlan is engine.CheckPlan, for the session's callers.
func CheckPlan(plan *spec.Plan, s engine.State, id string) error {
	return engine.CheckPlan(plan, s, id)
}

// Summarize is a state's line in the session index.
func Summarize(plan *spec.Plan, meta store.Meta, s engine.State, now time.Time) store.Summary {
	sum := store.Summary{ID: meta.ID, Key: meta.Key, Pipeline: meta.Pipeline, File: meta.File, Spec: meta.Spec,
		Status: string(s.Status), Tokens: s.TotalTokens, CostUSD: s.CostUSD, Created: meta.Created, Updated: now}
	if s.Phase < len(plan.Phases) {
		sum.Phase = plan.Phases[s.Phase].Name
	}
	if s.Pause != nil && s.Status == engine.StatusPaused {
		sum.PauseReason = s.Pause.Reason
	}
	if s.ReplayOf != nil {
		sum.ReplayOf = s.ReplayOf.Session
	}
	sum.ByHand = s.ByHand && s.Status == engine.StatusCompleted
	return sum
}

// Recorder records a run into a session of the store: each event
// appended as it happens (a kill -9 loses nothing recorded), the snapshot
// written at most every SnapshotEvery, at the end, and with every event
// that leaves the session not running (a pause, the end), on that event's
// line of the log when the session is short (recordStop): a run says it
// paused or completed only once its files say so, synced. Everything
// written passes through Redact first.
type Recorder struct {
	Session       *store.Session
	Plan          *spec.Plan
	Redact        func(string) string
	SnapshotEvery time.Duration

	last         engine.State
	lastSeq      int64
	lastSnapshot time.Time
	dirty        bool
	// unlisted is a summary whose snapshot was written and whose index
	// line was not (an *store.IndexError): the next snapshot, or Close,
	// tries again.
	unlisted *store.Summary
}

// NewRecorder records into x.
func NewRecorder(x *store.Session, plan *spec.Plan, redact func(string) string) *Recorder {
	if redact == nil {
		redact = func(s string) string { return s }
	}
	return &Recorder{Session: x, Plan: plan, Redact: redact, SnapshotEvery: 2 * time.Second, lastSnapshot: time.Now()}
}

// Transcript gives a step's transcript, made at its first byte.
func (r *Recorder) Transcript(phase string, attempt int, step string) (io.WriteCloser, error) {
	return r.Session.CreateTranscript(phase, attempt, step)
}

// Record appends the event and snapshots the state when it is due. An
// event that stops the session whose snapshot cannot be written is taken
// back out of the log: the session is left as it was before it. A stop
// of a short session carries its snapshot in the log (recordStop).
func (r *Recorder) Record(ev engine.Event, s engine.State) error {
	typ, payload, err := engine.EncodeEvent(ev)
	if err != nil {
		return err
	}
	payload = []byte(r.Redact(string(payload)))
	stops := s.Status != engine.StatusRunning
	if stops {
		if done, err := r.recordStop(typ, payload, s); done {
			return err
		}
	}
	seq, err := r.Session.Append(typ, payload)
	if err != nil {
		return err
	}
	prev, prevSeq, prevDirty := r.last, r.lastSeq, r.dirty
	r.last, r.lastSeq, r.dirty = s, seq, true
	if !stops && time.Since(r.lastSnapshot) < r.SnapshotEvery {
		return nil
	}
	err = r.Snapshot()
	var unlisted *store.IndexError
	if err == nil || errors.As(err, &unlisted) && !errors.Is(err, store.ErrRemoved) {
		// Only the listing is behind: the files say what happened.
		return nil
	}
	if stops {
		if undo := r.Session.Unappend(); undo != nil {
			return errors.Join(err, fmt.Errorf("taking the event back: %w", undo))
		}
		r.last, r.lastSeq, r.dirty = prev, prevSeq, prevDirty
	}
	return err
}

// recordStop records an event that stops the session with the state it
// leaves on one line of the log, synced (store.Session.AppendState), when
// the log is short and the session has no state.json: the snapshot
// without a file of its own. done false leaves the stop to Record's
// snapshot. A stop that fails is not in the log: AppendState took it back.
func (r *Recorder) recordStop(typ string, payload []byte, s engine.State) (done bool, err error) {
	if !r.Session.TakesState(len(payload)) {
		// A long log, or a state.json: Snapshot encodes the state, once.
		return false, nil
	}
	raw, err := s.AppendJSON(nil)
	if err != nil {
		return true, err
	}
	raw = []byte(r.Redact(string(raw)))
	if !r.Session.TakesState(len(raw) + len(payload)) {
		return false, nil
	}
	seq, err := r.Session.AppendState(typ, payload, raw)
	if err != nil {
		return true, err
	}
	sum := Summarize(r.Plan, r.Session.Meta, s, time.Now())
	err = r.Session.WriteIndex(sum)
	if errors.Is(err, store.ErrRemoved) {
		// Deleted (pipeline clean) since the line was written: the stop
		// fails as one whose state.json finds no folder does.
		return true, errors.Join(err, r.Session.Unappend())
	}
	r.last, r.lastSeq, r.dirty, r.lastSnapshot = s, seq, false, time.Now()
	r.unlisted = nil
	if err != nil {
		// Only the listing is behind: the files say what happened, and
		// the next snapshot, or Close, tries again.
		r.unlisted = &sum
	}
	return true, nil
}

// Snapshot writes the state as of the last event.
func (r *Recorder) Snapshot() error {
	if !r.dirty {
		return r.relist()
	}
	raw, err := r.last.AppendJSON(nil)
	if err != nil {
		return err
	}
	sum := Summarize(r.Plan, r.Session.Meta, r.last, time.Now())
	err = r.Session.WriteSnapshot(r.lastSeq, []byte(r.Redact(string(raw))), sum)
	var unlisted *store.IndexError
	if err == nil || errors.As(err, &unlisted) {
		r.dirty, r.lastSnapshot, r.unlisted = false, time.Now(), nil
		if err != nil {
			r.unlisted = &sum
		}
	}
	return err
}

// relist tries again to add a snapshot's summary to the index.
func (r *Recorder) relist() error {
	if r.unlisted == nil {
		return nil
	}
	if err := r.Session.WriteIndex(*r.unlisted); err != nil {
		return err
	}
	r.unlisted = nil
	return nil
}

// UpToDate tells whether the snapshot written (state.json, or the state
// a stop carried into the log, synced) holds every event of the session's
// log: none is left to write, and none was appended but through this
// recorder.
func (r *Recorder) UpToDate() bool {
	return !r.dirty && r.lastSeq > 0 && r.lastSeq == r.Session.Seq()
}

// Close writes the last snapshot, and its line in the index.
func (r *Recorder) Close() error { return r.Snapshot() }

// WriteSnapshot records s as the session's state as of its last event, and
// updates the index: after a runner died between its last event and its
// snapshot, this brings the listing up to date.
func WriteSnapshot(plan *spec.Plan, x *store.Session, s engine.State, redact func(string) string) error {
	raw, err := s.AppendJSON(nil)
	if err != nil {
		return err
	}
	if redact != nil {
		raw = []byte(redact(string(raw)))
	}
	return x.WriteSnapshot(x.Seq(), raw, Summarize(plan, x.Meta, s, time.Now()))
}
