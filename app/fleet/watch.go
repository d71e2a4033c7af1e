//go:build temporal

package fleet

import (
	"context"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/temporal"
	"github.com/pipeline-dev/pipeline/engine/watch"
)

// Watch is the fleet as pipeline watch's backend (engine/watch): the
// watcher lists the fleet's sessions of each pipeline and resumes them
// there, with the watch: globs, resume_after and --reasons of a local
// watch.
func (b *Backend) Watch() watch.Backend { return watchBackend{b} }

type watchBackend struct{ b *Backend }

// Latest is the newest session of each (pipeline, spec) of file on the
// fleet, with where it stands; a paused one's resume_after from its
// state.
func (w watchBackend) Latest(ctx context.Context, file string) ([]watch.Latest, error) {
	list, err := w.b.Client.List(ctx, temporal.QueueQuery(w.b.Client.Target.TaskQueue))
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []watch.Latest
	for _, s := range list { // newest first
		if s.File != file || seen[s.Key] {
			continue
		}
		seen[s.Key] = true
		r, err := w.b.Client.Status(ctx, s.ID)
		if err != nil {
			return nil, err
		}
		l := watch.Latest{ID: s.ID, Key: s.Key, Spec: s.Spec, Status: engine.Status(r.Status), Reason: r.PauseReason, Updated: s.Started}
		if l.Status == engine.StatusPaused && l.Reason == engine.ReasonRateLimit {
			if st, err := w.b.state(ctx, s.ID); err == nil && st.Pause != nil {
				l.ResumeAfter = st.Pause.ResumeAfter
			}
		}
		out = append(out, l)
	}
	return out, nil
}

// state is the open session's state, as its workflow holds it.
func (b *Backend) state(ctx context.Context, id string) (engine.State, error) {
	var s engine.State
	v, err := b.Client.C.QueryWorkflow(ctx, id, "", temporal.QueryState)
	if err != nil {
		return s, err
	}
	return s, v.Get(&s)
}

// Changed reports whether the session's plan source differs from the
// files of plan as they are now.
func (w watchBackend) Changed(ctx context.Context, id string, plan *spec.Plan) (bool, error) {
	src, err := temporal.ReadPlanSource(plan.File, plan.Spec)
	if err != nil {
		return false, err
	}
	h, err := w.b.Client.History(ctx, id)
	if err != nil {
		return false, err
	}
	_, changed := changeNotes(h.Plan, src)
	return changed, nil
}

// Resume resumes the paused session with the files of plan as they are
// now (how they changed in its notes) and waits until it stops again.
func (w watchBackend) Resume(ctx context.Context, id string, plan *spec.Plan) (engine.State, error) {
	running := engine.State{Status: engine.StatusRunning}
	src, err := temporal.ReadPlanSource(plan.File, plan.Spec)
	if err != nil {
		return running, err
	}
	h, err := w.b.Client.History(ctx, id)
	if err != nil {
		return running, err
	}
	r, err := w.b.Client.Status(ctx, id)
	if err != nil {
		return running, err
	}
	since := Interventions(r)
	notes, _ := changeNotes(h.Plan, src)
	if err := w.b.signalResume(ctx, id, notes, "", &src, true); err != nil {
		return running, err
	}
	for wait := Poll; ; wait = min(wait*3/2, PollMax) {
		select {
		case <-ctx.Done():
			return running, ctx.Err()
		case <-time.After(wait):
		}
		if r, err = w.b.Client.Status(ctx, id); err == nil && Stopped(r) && Interventions(r) > since {
			return w.b.stoppedState(ctx, id, r), nil
		}
	}
}

// stoppedState is the state of a session that stopped: its workflow's
// while it is open (a paused session's, with resume_after), else what
// its report says.
func (b *Backend) stoppedState(ctx context.Context, id string, r engine.StatusReport) engine.State {
	if s, err := b.state(ctx, id); err == nil && s.Status == engine.Status(r.Status) {
		return s
	}
	s := engine.State{Status: engine.Status(r.Status), FailReason: r.FailReason}
	if s.Status == engine.StatusPaused {
		s.Pause = &engine.Firing{Reason: r.PauseReason, Note: r.PauseNote}
	}
	return s
}
