package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// found is a session with its store and the plan it runs.
type found struct {
	st   *store.Store
	x    *store.Session
	plan *spec.Plan
	key  string
}

// findSession opens the session id, or else the latest session of the
// pipeline and spec of flags with one of statuses. The plan is loaded from
// the files the session was started with.
func findSession(flags *storeFlags, id string, statuses ...engine.Status) (*found, error) {
	st, err := flags.existing()
	if err != nil {
		return nil, err
	}
	if id == "" {
		if _, err := os.Stat(flags.file); err != nil {
			return nil, usagef("%s: %v; run this from the pipeline's folder, pass --file, or name a session (pipeline sessions lists them)",
				flags.file, errors.Unwrap(err))
		}
		plan, err := spec.Load(flags.file, flags.spec)
		if err != nil {
			return nil, err
		}
		key := planKey(flags.file, plan)
		last, err := latest(st, key, statuses...)
		if err != nil {
			return nil, err
		}
		if last == nil {
			what := "no session"
			if len(statuses) > 0 {
				what = fmt.Sprintf("no %v session", statuses)
			}
			return nil, usagef("%s of %s in %s; name one (pipeline sessions lists them)", what, flags.file, st.Root)
		}
		id = last.ID
	}
	x, err := st.Session(id)
	if err != nil {
		return nil, usageOf(err)
	}
	plan, err := spec.Load(x.Meta.File, x.Meta.Spec)
	if err != nil {
		x.Close()
		return nil, err
	}
	return &found{st: st, x: x, plan: plan, key: x.Meta.Key}, nil
}

// state rebuilds the session's state. A session marked running whose
// runner is gone (no one holds its lock) shows as paused, reason
// runner-died: resume continues it.
func (f *found) state() (engine.State, bool, error) {
	s, err := engine.LoadState(f.plan, f.x)
	if err != nil {
		return s, false, usageOf(err)
	}
	held := f.st.Held(f.key)
	crashed := (s.Status == engine.StatusRunning || s.Status == "") && !held
	if !held && (s.Status == engine.StatusCompleted || s.Status == engine.StatusFailed) {
		// The runner may have died between its last event and its
		// snapshot: make the listing say what the log says.
		if err := engine.WriteSnapshot(f.plan, f.x, s, newRedactor(f.plan).String); err != nil {
			return s, false, err
		}
	}
	return s, crashed, nil
}

// apply records events on a session that no runner holds: notes on a
// paused session, a completion by hand.
func (f *found) apply(events ...engine.Event) (engine.State, error) {
	lock, err := f.st.Lock(f.key, store.Holder{PID: pid(), Session: f.x.Meta.ID, Started: time.Now()})
	if err != nil {
		return engine.State{}, usageOf(err)
	}
	defer lock.Release()
	s, err := engine.LoadState(f.plan, f.x)
	if err != nil {
		return s, usageOf(err)
	}
	rec := engine.NewSessionRecorder(f.x, f.plan, newRedactor(f.plan).String)
	for _, ev := range events {
		s, _ = engine.Decide(f.plan, s, ev)
		if err := rec.Record(ev, s); err != nil {
			return s, err
		}
	}
	return s, rec.Close()
}
