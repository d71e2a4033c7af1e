package watch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/engine/spec"
)

// Backend is where the watched sessions live and run when it is not
// here: a Temporal fleet. The watcher lists their latest sessions and
// resumes them there, and runs nothing itself; what it does with a
// change (the watch: globs, resume_after, Reasons, the events) is the
// same. nil (Options.Backend): the local stores of Options.Pipelines,
// each session run in this process by the local driver.
type Backend interface {
	// Latest is the latest session of each (pipeline, spec) of the
	// pipeline at file (absolute), as it stands now.
	Latest(ctx context.Context, file string) ([]Latest, error)
	// Changed reports whether session id's plan or spec differ from
	// plan (the files as they are now): what was changed while no
	// watcher ran, or a save that changed nothing.
	Changed(ctx context.Context, id string, plan *spec.Plan) (bool, error)
	// Resume resumes session id with plan, and returns once it stopped
	// again (paused, completed or failed), with how. ctx ending stops
	// the wait, not the session: the state is then running.
	Resume(ctx context.Context, id string, plan *spec.Plan) (engine.State, error)
}

// Latest is a session of a Backend as the watcher tracks it.
type Latest struct {
	ID, Key, Spec string
	Status        engine.Status
	// Reason is why it is paused; ResumeAfter when a rate limit says to
	// come back.
	Reason      string
	ResumeAfter *time.Time
	Updated     time.Time
}

// BackendPoll is how often the watcher asks a Backend for its sessions:
// no file tells it, as a store's index does.
const BackendPoll = 2 * time.Second

// scanBackend brings the tracked sessions up to date from the backend.
func (w *watcher) scanBackend() error {
	seen := map[string]bool{}
	for _, p := range w.pipes {
		list, err := w.o.Backend.Latest(w.ctx, p.file)
		if err != nil {
			return err
		}
		for _, l := range list {
			if seen[l.Key] || (len(w.o.Keys) > 0 && !contains(w.o.Keys, l.Key)) {
				continue
			}
			seen[l.Key] = true
			w.trackBackend(p, l)
		}
	}
	w.forget(seen)
	return nil
}

// trackBackend takes in what the backend says of one session.
func (w *watcher) trackBackend(p *pipe, l Latest) {
	t := w.sessions[l.Key]
	if t != nil && t.run != nil {
		return // ours: the resume tells its state
	}
	if t == nil || t.id != l.ID {
		if t != nil && t.cancelDue != nil {
			t.cancelDue()
		}
		t = &tracked{id: l.ID, key: l.Key, spec: l.Spec, pipe: p}
		w.sessions[l.Key] = t
		w.planFor(t)
		if w.ready {
			w.followed = append(w.followed, Event{Event: EventFollowed, File: rel(t.spec), Session: t.id, Status: string(l.Status)})
		}
	}
	t.listed, t.status, t.reason = l.Updated, l.Status, l.Reason
	t.elsewhere = l.Status == engine.StatusRunning
	if t.status != engine.StatusPaused || t.reason != engine.ReasonRateLimit || l.ResumeAfter == nil {
		if t.cancelDue != nil {
			t.cancelDue()
			t.cancelDue = nil
		}
		return
	}
	if t.cancelDue == nil {
		t.resumeAfter = *l.ResumeAfter
		t.cancelDue = w.clock.AfterFunc(max(t.resumeAfter.Sub(w.clock.Now()), 0), func() { w.due <- t })
	}
}

// forget drops the keys with no session left.
func (w *watcher) forget(seen map[string]bool) {
	for key, t := range w.sessions {
		if !seen[key] && t.run == nil && !t.queued {
			if t.cancelDue != nil {
				t.cancelDue()
			}
			delete(w.sessions, key)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// changedOnBackend is catchUp's and specSeen.unchanged's question to the
// backend: whether t's plan or spec changed since it paused.
func (w *watcher) changedOnBackend(t *tracked, plan *spec.Plan) bool {
	changed, err := w.o.Backend.Changed(w.ctx, t.id, plan)
	if err != nil {
		w.report(Event{Event: EventError, Session: t.id, Reason: oneLine(err.Error())})
		return false
	}
	return changed
}

// startOnBackend resumes t on the backend and waits for it in the
// background, as a local run is.
func (w *watcher) startOnBackend(t *tracked, plan *spec.Plan, file, change string) {
	t.run = &running{plans: make(chan *spec.Plan, 1), interrupts: make(chan local.Interrupt, 2), digest: plan.Digest}
	w.active++
	reason := t.reason
	t.status, t.reason = engine.StatusRunning, ""
	w.report(Event{Event: EventResumed, File: rel(file), Change: change, Session: t.id, Status: string(t.status), Reason: reason})
	ctx := w.runs
	go func() {
		state, err := w.o.Backend.Resume(ctx, t.id, plan)
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			err = fmt.Errorf("no longer waiting: the session goes on on its backend")
		}
		w.done <- finished{t: t, state: state, err: err}
	}()
}

// pollBackend ticks every BackendPoll when the sessions are a
// backend's; never for the local stores, whose index tells.
func (w *watcher) pollBackend() (<-chan time.Time, func()) {
	if w.o.Backend == nil {
		return nil, func() {}
	}
	tick := time.NewTicker(BackendPoll)
	return tick.C, tick.Stop
}
