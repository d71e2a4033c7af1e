package app

import (
	"context"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
)

// PauseRequest names a running or paused session (by id, or the latest
// of the pipeline and spec) and the notes for its next resume.
type PauseRequest struct {
	Pipeline
	Session string `json:"session,omitempty"`
	Notes   string `json:"notes,omitempty"`
	// Wait bounds how long a running session gets to stop (the command
	// line's default is a minute).
	Wait time.Duration `json:"-"`
}

// Result is what an operation on one session did, as `-o json` prints
// it: {"session": ..., "result": "paused"}.
type Result struct {
	Session string `json:"session"`
	Result  string `json:"result"`
}

// Pause stops a running session's step gracefully and records the pause
// with the notes; on a paused session it adds the notes.
func Pause(ctx context.Context, req PauseRequest) (*Result, error) {
	f, err := req.FindSession(req.Session, engine.StatusRunning, engine.StatusPaused)
	if err != nil {
		return nil, err
	}
	st := f.Store
	defer st.Close()
	if err := onFleet(f.X.Meta, "pause", whyPause); err != nil {
		f.Close()
		return nil, err
	}
	id := f.ID()
	if f.Running() {
		err := f.RequestPause(ctx, req.Notes, req.Wait)
		if err != nil {
			f.Close()
			return nil, err
		}
		// A run that was ending as the signal came ends as it would
		// have (it drops a signal after its last step): say how.
		s, _, err := f.State()
		f.Close()
		if err == nil && s.Status != engine.StatusPaused && s.Status != engine.StatusRunning && s.Status != "" {
			return &Result{Session: id, Result: string(s.Status)}, nil
		}
		return &Result{Session: id, Result: "paused"}, nil
	}
	s, crashed, err := f.State()
	f.Close()
	if err != nil {
		return nil, err
	}
	if s.Status != engine.StatusPaused && !crashed {
		return nil, Usagef("session %s is %s: there is nothing to pause", id, s.Status)
	}
	if req.Notes == "" {
		return &Result{Session: id, Result: "already paused"}, nil
	}
	sess, err := session.Open(ctx, st, session.Options{ID: id, Say: req.Say})
	if err != nil {
		return nil, err
	}
	err = sess.Note(time.Now(), req.Notes)
	if closeErr := sess.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return nil, StoreWriteFailed(err)
	}
	return &Result{Session: id, Result: "paused, notes added"}, nil
}

// CompleteRequest names a paused or failed session. Force completes its
// spec's LeanSpec status even with unchecked checklist items.
type CompleteRequest struct {
	Pipeline
	Session string `json:"session,omitempty"`
	Force   bool   `json:"force,omitempty"`
}

// CompleteResult is a session completed by hand, and what became of its
// spec's status (nil when the spec has none to move).
type CompleteResult struct {
	Result
	SpecStatus *engine.SpecStatusChange `json:"spec_status,omitempty"`
}

// Complete marks a paused or failed session as completed by hand, and
// its spec complete (see session.Session.CompleteForced).
func Complete(ctx context.Context, req CompleteRequest) (*CompleteResult, error) {
	st, err := req.Existing()
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if err := refuseOnFleet(st, req.Session, "status", whyComplete); err != nil {
		return nil, err
	}
	o, err := req.SessionOptions(req.Session, engine.StatusPaused, engine.StatusFailed)
	if err != nil {
		return nil, err
	}
	sess, err := session.Open(ctx, st, o)
	if err != nil {
		return nil, req.elsewhere(req.Session, err)
	}
	before := sess.State().SpecStatus
	if req.Force {
		err = sess.CompleteForced(time.Now())
	} else {
		err = sess.Complete(time.Now())
	}
	after := sess.State().SpecStatus
	if closeErr := sess.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return nil, StoreWriteFailed(err)
	}
	r := &CompleteResult{Result: Result{Session: sess.ID(), Result: "completed"}}
	if after != before {
		r.SpecStatus = after
	}
	return r, nil
}
