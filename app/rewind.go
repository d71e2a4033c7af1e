package app

import (
	"context"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
)

// RewindRequest names a paused, failed or completed session (by id, or
// the latest of the pipeline and spec) and the phase to run again.
type RewindRequest struct {
	Pipeline
	Session string `json:"session,omitempty"`
	To      string `json:"to"`
	// Force rewinds even when the work tree holds changes in no
	// checkpoint of the session, keeping them under
	// refs/pipeline/<session>/rescued-<n> first.
	Force bool `json:"force,omitempty"`
}

// RewindResponse is `pipeline rewind -o json`: the session and where it
// was set back to.
type RewindResponse struct {
	Session string `json:"session"`
	session.Rewinding
}

// Rewind restores the work tree to the checkpoint taken before req.To
// and sets the session back to the start of that phase as a new attempt;
// a resume then runs it. Nothing recorded is deleted.
func Rewind(ctx context.Context, req RewindRequest) (*RewindResponse, error) {
	if req.To == "" {
		return nil, Usagef("rewind needs --to PHASE")
	}
	st, err := req.Existing()
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if err := refuseOnFleet(st, req.Session, "status", whyRewind); err != nil {
		return nil, err
	}
	o, err := req.SessionOptions(req.Session, engine.StatusPaused, engine.StatusFailed, engine.StatusCompleted)
	if err != nil {
		return nil, err
	}
	sess, err := session.Open(ctx, st, o)
	if err != nil {
		return nil, req.elsewhere(req.Session, err)
	}
	r, err := sess.Rewind(time.Now(), req.To, req.Force)
	if closeErr := sess.Close(); err == nil && closeErr != nil {
		err = StoreWriteFailed(closeErr)
	}
	if err != nil {
		return nil, err
	}
	out := redacted(sess.Redactor(), RewindResponse{Session: sess.ID(), Rewinding: r})
	return &out, nil
}
