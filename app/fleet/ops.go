//go:build temporal

package fleet

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/engine/temporal"
)

// Resume resumes a paused session (a signal), or a failed one (its
// workflow closed: a new run of it, from its last state). The pipeline
// of req.File goes with the resume when it is the session's, so that its
// edits are taken. view is given the session to follow.
func (b *Backend) Resume(ctx context.Context, req app.ResumeRequest, view app.RunView) error {
	st, err := b.resume(ctx, req)
	if err != nil {
		return err
	}
	return view.Follow(ctx, *st)
}

func (b *Backend) resume(ctx context.Context, req app.ResumeRequest) (*app.Started, error) {
	id, r, err := b.Session(ctx, req.Pipeline, req.Session, engine.StatusPaused, engine.StatusFailed)
	if err != nil {
		return nil, err
	}
	var src *temporal.PlanSource
	if s, _, err := Plan(req.Pipeline); err == nil && s.File == r.File {
		src = &s
	}
	switch r.Status {
	case string(engine.StatusPaused):
		err = b.signalResume(ctx, id, req.Notes, req.Phase, src, false)
	case string(engine.StatusFailed):
		err = b.restart(ctx, id, req, src)
	default:
		return nil, app.Usagef("session %s is %s: there is nothing to resume", id, r.Status)
	}
	if err != nil {
		return nil, err
	}
	return &app.Started{ID: id, Resumed: true, PauseReason: r.PauseReason, Since: Interventions(r), On: b}, nil
}

// restart runs a failed session's workflow again from its last state.
func (b *Backend) restart(ctx context.Context, id string, req app.ResumeRequest, src *temporal.PlanSource) error {
	h, err := b.Client.History(ctx, id)
	if err != nil {
		return err
	}
	plan := h.Plan
	if src != nil {
		plan = *src
	}
	return b.Client.Restart(ctx, h, plan, req.Notes, req.Phase, time.Now())
}

// Pause pauses a running session and waits (req.Wait) for its step to
// stop; on a paused one, its notes are left for the resume.
func (b *Backend) Pause(ctx context.Context, req app.PauseRequest) (*app.Result, error) {
	id, r, err := b.Session(ctx, req.Pipeline, req.Session, engine.StatusRunning, engine.StatusPaused)
	if err != nil {
		return nil, err
	}
	switch r.Status {
	case string(engine.StatusRunning):
		since := Interventions(r)
		if err := b.Client.Pause(ctx, id, req.Notes, ""); err != nil {
			return nil, err
		}
		err = b.await(ctx, id, req.Wait, func(r engine.StatusReport) bool { return Stopped(r) && Interventions(r) > since })
		return &app.Result{Session: id, Result: "paused"}, err
	case string(engine.StatusPaused):
		if req.Notes == "" {
			return &app.Result{Session: id, Result: "already paused"}, nil
		}
		before := len(allNotes(r))
		if err := b.Client.Pause(ctx, id, req.Notes, ""); err != nil {
			return nil, err
		}
		err = b.await(ctx, id, req.Wait, func(r engine.StatusReport) bool { return len(allNotes(r)) > before })
		return &app.Result{Session: id, Result: "paused, notes added"}, err
	}
	return nil, app.Usagef("session %s is %s: there is nothing to pause", id, r.Status)
}

func allNotes(r engine.StatusReport) []string {
	var out []string
	for _, p := range r.Phases {
		out = append(out, p.Notes...)
	}
	return out
}

// await asks the session where it stands until done says so, or wait
// has passed.
func (b *Backend) await(ctx context.Context, id string, wait time.Duration, done func(engine.StatusReport) bool) error {
	deadline := time.Now().Add(wait)
	for {
		r, err := b.Client.Status(ctx, id)
		if err == nil && done(r) {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return err
			}
			return fmt.Errorf("session %s is still %s after %s: its worker has not stopped the step yet (see pipeline status%s %s)", id, r.Status, wait, b.FlagsLine(), id)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(Poll):
		}
	}
}

// Status is where a session stands, from its status query (or its
// history, once its workflow closed).
func (b *Backend) Status(ctx context.Context, req app.StatusRequest) (*app.StatusResponse, error) {
	id, r, err := b.Session(ctx, req.Pipeline, req.Session)
	if err != nil {
		return nil, err
	}
	r.ID = id
	return &app.StatusResponse{StatusReport: r, Running: r.Status == string(engine.StatusRunning)}, nil
}

// Complete is refused: a fleet session's state is in its workflow, which
// takes no such mark.
func (b *Backend) Complete(_ context.Context, req app.CompleteRequest) (*app.CompleteResult, error) {
	return nil, app.Usagef("pipeline complete is not available on the Temporal fleet: a fleet session's state is in its workflow, which takes resume and pause only; pause it (pipeline pause%s %s) and leave it, or resume it to its end", b.FlagsLine(), req.Session)
}

// Sessions lists the sessions' workflows of the task queue, each with
// where it stands.
func (b *Backend) Sessions(ctx context.Context, req app.SessionsRequest) (*app.SessionsResponse, error) {
	list, err := b.Client.List(ctx, temporal.QueueQuery(b.Client.Target.TaskQueue))
	if err != nil {
		return nil, err
	}
	wantSpec := ""
	if req.SpecFilter != "" {
		wantSpec, _ = filepath.Abs(req.SpecFilter)
	}
	lines := b.lines(ctx, list)
	out := []app.SessionLine{}
	for _, l := range lines {
		if req.Active && l.Status != "running" && l.Status != "paused" {
			continue
		}
		if (req.Status != "" && l.Status != req.Status) || (wantSpec != "" && l.Spec != wantSpec) {
			continue
		}
		out = append(out, l)
	}
	return &app.SessionsResponse{Sessions: out, Total: len(list)}, nil
}

// lines asks each listed session where it stands, eight at a time.
func (b *Backend) lines(ctx context.Context, list []temporal.Summary) []app.SessionLine {
	lines := make([]app.SessionLine, len(list))
	var wg sync.WaitGroup
	limit := make(chan struct{}, 8)
	for i, s := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			limit <- struct{}{}
			defer func() { <-limit }()
			line := app.SessionLine{Summary: store.Summary{ID: s.ID, Key: s.Key, Pipeline: s.Pipeline, File: s.File, Spec: s.Spec,
				Status: s.Execution, Created: s.Started, Updated: s.Started}}
			if !s.Closed.IsZero() {
				line.Updated = s.Closed
			}
			if r, err := b.Client.Status(ctx, s.ID); err == nil {
				line.Status, line.Phase, line.PauseReason, line.Tokens, line.CostUSD = r.Status, r.Phase, r.PauseReason, r.Tokens, r.CostUSD
			} else {
				line.Status = "unknown (" + s.Execution + ": " + err.Error() + ")"
			}
			lines[i] = line
		}()
	}
	wg.Wait()
	return lines
}

// ResumeChanged resumes the paused sessions of the pipeline at file
// whose plan source is not the files as they are now, with the spec's
// diff in the notes (what pipeline watch does on the fleet). say tells
// what it did.
func (b *Backend) ResumeChanged(ctx context.Context, file string, say func(string, ...any)) error {
	src, key, err := Plan(app.Pipeline{File: file})
	if err != nil {
		say("%s: invalid, not applied:\n%v", file, err)
		return nil
	}
	live, err := b.Client.Live(ctx, key)
	if err != nil {
		return err
	}
	for _, s := range live {
		r, err := b.Client.Status(ctx, s.ID)
		if err != nil {
			return err
		}
		if r.Status != string(engine.StatusPaused) {
			continue
		}
		h, err := b.Client.History(ctx, s.ID)
		if err != nil {
			return err
		}
		notes, changed := changeNotes(h.Plan, src)
		if !changed {
			continue
		}
		if err := b.signalResume(ctx, s.ID, notes, "", &src, true); err != nil {
			say("%s: session %s skipped: %v", file, s.ID, err)
			continue
		}
		say("%s changed: session %s resumed (it was paused: %s)", file, s.ID, r.PauseReason)
	}
	return nil
}

// changeNotes says how the pipeline changed from old to now, for the
// resume's notes; changed is false when it did not.
func changeNotes(old, now temporal.PlanSource) (notes string, changed bool) {
	if bytes.Equal(old.YAML, now.YAML) && bytes.Equal(old.SpecText, now.SpecText) {
		return "", false
	}
	if diff := engine.SpecDiff(filepath.Base(now.Spec), string(old.SpecText), string(now.SpecText)); now.Spec != "" && diff != "" {
		return "The spec changed while the session was paused:\n" + diff, true
	}
	return "phases.yaml changed while the session was paused.", true
}

// Transcripts is where a session's steps' transcripts are: the folders
// (each worker's store, or one shared) with the workers that wrote
// there, in the order the steps ran; and the plan the session decides
// with.
type Transcripts struct {
	ID      string
	Dirs    []string
	Workers map[string][]string
	Plan    *spec.Plan
}

// Transcripts finds where session id's transcripts are (the latest
// session of p when id is "").
func (b *Backend) Transcripts(ctx context.Context, p app.Pipeline, id string) (*Transcripts, error) {
	id, _, err := b.Session(ctx, p, id)
	if err != nil {
		return nil, err
	}
	h, err := b.Client.History(ctx, id)
	if err != nil {
		return nil, err
	}
	plan, err := h.Plan.Load()
	if err != nil {
		return nil, err
	}
	dirs, workers := h.TranscriptDirs()
	return &Transcripts{ID: id, Dirs: dirs, Workers: workers, Plan: plan}, nil
}
