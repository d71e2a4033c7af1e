package session

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// Ref is a session found for reading: Find takes no lock and nothing is
// written, so status, sessions and logs never disturb a run.
type Ref struct {
	Store *store.Store
	X     *store.Session
	Plan  *spec.Plan
	Key   string
}

// Find opens the session o.ID, or else the latest session of the pipeline
// and spec of o.File and o.Plan with one of o.Statuses, for reading. The
// plan is loaded from the files the session was started with.
func Find(st *store.Store, o Options) (*Ref, error) {
	id := o.ID
	if id != "" {
		if err := CheckRef(id); err != nil {
			return nil, err
		}
	} else {
		last, err := Latest(st, KeyOf(st, o.File, o.Plan), o.Statuses...)
		if err != nil {
			return nil, refused("%v", err)
		}
		if last == nil {
			what := "no session"
			if len(o.Statuses) > 0 {
				what = "no " + statusWords(o.Statuses) + " session"
			}
			return nil, refused("%s of %s in %s; name one (pipeline sessions lists them)", what, o.File, st.Root)
		}
		id = last.ID
	}
	x, err := st.ReadSession(id)
	if err != nil {
		return nil, &RefusedError{Message: err.Error(), Err: err}
	}
	plan, err := spec.LoadCached(x.Meta.File, x.Meta.Spec, spec.CacheDir())
	if err != nil {
		x.Close()
		return nil, err
	}
	return &Ref{Store: st, X: x, Plan: plan, Key: x.Meta.Key}, nil
}

// statusWords writes statuses as a reader says them: "paused", "paused or
// running", "paused, running or failed" (not a Go list, [paused running]).
func statusWords(statuses []engine.Status) string {
	words := make([]string, len(statuses))
	for i, s := range statuses {
		words[i] = string(s)
	}
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// ID is the session's id.
func (r *Ref) ID() string { return r.X.Meta.ID }

// Close closes the session's files.
func (r *Ref) Close() error { return r.X.Close() }

// Running reports whether a live runner holds the session's pipeline and
// spec.
func (r *Ref) Running() bool { return r.Store.Held(r.Key) }

// State rebuilds the session's state from its files. A session marked
// running whose runner is gone (no one holds its lock) is crashed: it
// shows as engine.RunnerDied(state), and resume continues it.
//
// A runner that ends between the read of its files and the look at its
// lock would show as crashed, though it ended well: it writes its last
// events before it lets go of the lock, so a session that looks crashed
// is read once more, and is crashed only if it still looks so.
func (r *Ref) State() (s engine.State, crashed bool, err error) {
	for again := false; ; again = true {
		s, err = LoadState(r.Plan, r.X)
		if err != nil {
			return s, false, refused("%v", err)
		}
		unfinished := s.Status == engine.StatusRunning || s.Status == ""
		if unfinished && !again && betweenStateAndLock != nil {
			betweenStateAndLock()
		}
		if !unfinished || r.Running() {
			return s, false, nil
		}
		if again {
			return s, true, nil
		}
	}
}

// betweenStateAndLock, when set by a test, runs where State has read an
// unfinished session and not yet looked at its lock.
var betweenStateAndLock func()

// RequestPause asks the runner of this session to pause now, with notes
// for the next resume, and waits up to wait for it to stop. The notes are
// redacted before they reach the store.
func (r *Ref) RequestPause(ctx context.Context, notes string, wait time.Duration) error {
	holder, err := r.Store.Holder(r.Key)
	if err != nil || holder.Session != r.ID() {
		return refused("session %s is not the one running for this pipeline and spec", r.ID())
	}
	if err := r.X.WriteFile(pauseRequestFile, []byte(NewRedactor(r.Plan).String(notes))); err != nil {
		return err
	}
	if err := syscall.Kill(holder.PID, syscall.SIGTERM); err != nil {
		return fmt.Errorf("signalling the runner (pid %d): %w", holder.PID, err)
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
		wait = time.Until(deadline)
	}
	if !r.Store.WaitReleased(r.Key, wait) {
		return fmt.Errorf("session %s was asked to pause but is still running after %s", r.ID(), wait)
	}
	return nil
}
