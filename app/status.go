package app

import (
	"context"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// StatusRequest names a session: by id, or the latest of the pipeline
// and spec.
type StatusRequest struct {
	Pipeline
	Session string `json:"session,omitempty"`
}

// StatusResponse is `pipeline status -o json`: the session's report and,
// while a step runs, its live progress.
type StatusResponse struct {
	engine.StatusReport
	Live *LiveReport `json:"live,omitempty"`
	// Running: a live runner holds the session now.
	Running bool `json:"-"`
	// Fleet: the session runs on a Temporal fleet (status StatusOnFleet);
	// where it stands is known there.
	Fleet *store.Fleet `json:"fleet,omitempty"`
}

// LiveReport is the running step's progress.
type LiveReport struct {
	Updated       time.Time `json:"updated"`
	Step          string    `json:"step"`
	StepTokens    int       `json:"step_tokens"`
	StepElapsed   string    `json:"step_elapsed"`
	StepElapsedMS int64     `json:"step_elapsed_ms"`
}

// Status is where a session stands. It reads: no lock, nothing written.
func Status(_ context.Context, req StatusRequest) (*StatusResponse, error) {
	ref, s, crashed, err := req.readState(req.Session)
	if err != nil {
		return nil, err
	}
	defer ref.Store.Close()
	defer ref.Close()
	r := StatusResponse{StatusReport: StatusReport(ref.X.Meta, ref.Plan, s), Running: ref.Running()}
	if f := ref.X.Meta.OnFleet(); f != nil {
		r.Status, r.PauseReason, r.Fleet = StatusOnFleet, "", f
		return ptr(redactedOwned(session.NewRedactor(ref.Plan), r)), nil
	}
	if live, ok := ref.Live(); ok && s.StepRunning && !crashed {
		r.withLive(live)
	}
	// The report is made from a state read for it alone.
	r = redactedOwned(session.NewRedactor(ref.Plan), r)
	return &r, nil
}

func ptr[T any](v T) *T { return &v }

// StatusReport is what status prints of a session's state.
func StatusReport(meta store.Meta, plan *spec.Plan, s engine.State) engine.StatusReport {
	r := engine.Report(plan, s)
	r.ID, r.Pipeline, r.File, r.Spec, r.Created = meta.ID, meta.Pipeline, meta.File, meta.Spec, meta.Created
	r.Name = meta.Name
	return r
}

// withLive makes the report's totals the live ones.
func (r *StatusResponse) withLive(l session.Live) {
	r.Phase, r.Step, r.Attempt = l.Phase, l.Step, l.Attempt
	r.Tokens, r.CostUSD = l.TotalTokens, l.CostUSD
	r.Elapsed, r.ElapsedMS = l.SessionElapsed.Round(time.Second).String(), l.SessionElapsed.Milliseconds()
	r.Live = &LiveReport{Updated: l.At, Step: l.Step, StepTokens: l.StepTokens,
		StepElapsed: l.StepElapsed.Round(time.Second).String(), StepElapsedMS: l.StepElapsed.Milliseconds()}
}

// SessionReport is the report of a session a runner holds, as run and
// resume print it at the end: redacted by the session's own redactor, as
// its in-memory state still holds what the request gave it (a note).
func SessionReport(sess *session.Session, s engine.State) engine.StatusReport {
	return redacted(sess.Redactor(), StatusReport(sess.X.Meta, sess.Plan, s))
}
