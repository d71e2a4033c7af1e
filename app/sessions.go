package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/engine/watch"
)

// SessionsRequest says which sessions to list: those of the pipeline's
// store, or with All those of every store below Root.
type SessionsRequest struct {
	Pipeline
	// All lists the sessions of every pipeline below Root ("": the
	// current folder); Pipeline.File and StateDir are not taken then.
	All  bool   `json:"all,omitempty"`
	Root string `json:"root,omitempty"`
	// The filters: only running or paused sessions; only one status;
	// only the sessions of one spec (Pipeline.Spec names no filter: a
	// store holds the sessions of every spec).
	Active     bool   `json:"active,omitempty"`
	Status     string `json:"status,omitempty"`
	SpecFilter string `json:"spec_filter,omitempty"`
	// Forks adds to each session of the pipeline's store the sessions
	// forked from it, found in the repository's other git worktrees (it
	// runs git).
	Forks bool `json:"forks,omitempty"`
}

// SessionsResponse is the list `pipeline sessions -o json` prints, newest
// first, and how many sessions there were before the filters.
type SessionsResponse struct {
	Sessions []SessionLine
	Total    int
}

// SessionLine is a session as pipeline sessions lists it.
type SessionLine struct {
	store.Summary
	// Queued: a pipeline watch will resume it when a slot is free.
	Queued bool `json:"queued,omitempty"`
	// Forks are the sessions forked from it (pipeline fork), found in
	// the repository's other git worktrees.
	Forks []ForkLine `json:"forks,omitempty"`
	// Fleet: the session runs on a Temporal fleet (status StatusOnFleet).
	Fleet *store.Fleet `json:"fleet,omitempty"`
}

// ForkLine is a session forked from another, in another worktree.
type ForkLine struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Phase  string `json:"phase,omitempty"`
	At     string `json:"at"`
	Dir    string `json:"dir"`
}

// Statuses are the statuses a session can have, as filters name them.
var Statuses = []string{string(engine.StatusRunning), string(engine.StatusPaused), string(engine.StatusCompleted), string(engine.StatusFailed)}

// Sessions lists sessions. It reads: no lock, nothing written.
func Sessions(_ context.Context, req SessionsRequest) (*SessionsResponse, error) {
	if req.Status != "" && !slices.Contains(Statuses, req.Status) {
		return nil, Usagef("--status must be running, paused, completed or failed, not %q", req.Status)
	}
	dirs := []string{req.StoreDir()}
	if req.All {
		root := req.Root
		if root == "" {
			root = "."
		}
		var err error
		if dirs, err = FindStores(root); err != nil {
			return nil, err
		}
	}
	out := &SessionsResponse{Sessions: []SessionLine{}}
	for _, dir := range dirs {
		lines, all, err := storeSessions(dir, req)
		if err != nil {
			return nil, err
		}
		out.Sessions, out.Total = append(out.Sessions, lines...), out.Total+all
	}
	if req.All {
		slices.SortStableFunc(out.Sessions, func(a, b SessionLine) int { return b.Updated.Compare(a.Updated) })
	} else if req.Forks && len(out.Sessions) > 0 {
		// Forks live in the repository's other worktrees.
		forks := forksByParent(req.file())
		for i := range out.Sessions {
			out.Sessions[i].Forks = forks[out.Sessions[i].ID]
		}
	}
	out.Sessions = redacted(environmentRedactor(), out.Sessions)
	return out, nil
}

// storeSessions lists the sessions of the store in dir that the filters
// keep, and counts all of them; none when there is no store.
func storeSessions(dir string, req SessionsRequest) (_ []SessionLine, all int, _ error) {
	var list []store.Summary
	st, err := store.OpenExisting(dir)
	switch {
	case errors.Is(err, store.ErrNoStore): // no sessions yet
	case err != nil:
		return nil, 0, StoreUnusable(err)
	default:
		defer st.Close()
		if list, err = ListAsShown(st); err != nil {
			return nil, 0, StoreUnusable(err)
		}
	}
	wantSpec := ""
	if req.SpecFilter != "" {
		wantSpec, _ = filepath.Abs(req.SpecFilter)
	}
	// Sessions a running pipeline watch has queued to run.
	var queued []string
	if st != nil && st.Held(watch.LockKey) {
		if h, err := st.Holder(watch.LockKey); err == nil {
			queued = h.Queued
		}
	}
	out := []SessionLine{}
	for _, s := range list { // none when there is no store yet
		var onFleet *store.Fleet
		switch {
		case s.Key == store.FleetKey(s.ID):
			// A fleet session's copy (its key says so): its meta says
			// where it runs, and its status here is not the session's.
			onFleet = fleetOf(st, s.ID)
			s.Status, s.PauseReason = StatusOnFleet, ""
		}
		if req.Active && s.Status != string(engine.StatusRunning) && s.Status != string(engine.StatusPaused) && onFleet == nil {
			continue
		}
		if req.Status != "" && s.Status != req.Status {
			continue
		}
		if wantSpec != "" && s.Spec != wantSpec {
			continue
		}
		out = append(out, SessionLine{Summary: s, Queued: slices.Contains(queued, s.ID), Fleet: onFleet})
	}
	return out, len(list), nil
}

// MaxStoreDepth and maxStoreFolders bound the walk of FindStores.
const (
	MaxStoreDepth   = 8
	maxStoreFolders = 20000
)

// FindStores finds the stores (.pipeline folders) below root: not inside
// .git or node_modules, at most MaxStoreDepth folders below root, among
// the first maxStoreFolders folders. Links are not followed. Every
// surface that lists the stores of a folder uses it.
func FindStores(root string) ([]string, error) {
	var stores []string
	seen := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root {
				return err
			}
			return fs.SkipDir // a folder that cannot be read is not ours
		}
		if !d.IsDir() {
			return nil
		}
		if seen++; seen > maxStoreFolders {
			return fs.SkipAll
		}
		switch d.Name() {
		case ".pipeline":
			stores = append(stores, path)
			return fs.SkipDir
		case ".git", "node_modules":
			return fs.SkipDir
		}
		if rel, err := filepath.Rel(root, path); err == nil && path != root && strings.Count(filepath.ToSlash(rel), "/") >= MaxStoreDepth {
			return fs.SkipDir
		}
		return nil
	})
	return stores, err
}

// forksByParent finds the sessions forked from the sessions of the
// pipeline at file, in the repository's other git worktrees, by the
// session they were forked from.
func forksByParent(file string) map[string][]ForkLine {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil
	}
	git := session.GitFor(filepath.Dir(abs))
	if git == nil {
		return nil
	}
	root := git.Root()
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		return nil
	}
	forks := map[string][]ForkLine{}
	for _, tree := range git.Worktrees() {
		if tree == root {
			continue
		}
		st, err := store.OpenExisting(Pipeline{File: filepath.Join(tree, rel)}.StoreDir())
		if err != nil {
			continue
		}
		forks = forksIn(st, tree, forks)
		st.Close()
	}
	return forks
}

func forksIn(st *store.Store, tree string, forks map[string][]ForkLine) map[string][]ForkLine {
	list, err := st.List()
	if err != nil {
		return forks
	}
	for _, s := range list {
		ref, err := session.Find(st, session.Options{ID: s.ID})
		if err != nil {
			continue
		}
		state, _, err := ref.State()
		ref.Close()
		if err != nil || state.Parent == nil {
			continue
		}
		forks[state.Parent.Session] = append(forks[state.Parent.Session],
			ForkLine{ID: s.ID, Status: s.Status, Phase: s.Phase, At: state.Parent.Phase, Dir: tree})
	}
	return forks
}

// NoneMatch says why a list is empty, for the text output.
func (r *SessionsResponse) NoneMatch(all bool, runLine string) string {
	switch {
	case len(r.Sessions) > 0:
		return ""
	case r.Total > 0:
		return fmt.Sprintf("none of the %d sessions matches; pipeline sessions%s lists them all\n", r.Total, map[bool]string{true: " --all"}[all])
	case all:
		return "no sessions below this folder; start one with: pipeline run FILE\n"
	}
	return fmt.Sprintf("no sessions yet; start one with: %s\n", runLine)
}

// FindInStores finds session id (a whole id, or a unique start or end of
// one) in the stores at dirs: the store's folder and the session's meta.
// None is store.ErrNotFound; an id that names sessions in more than one
// place is a *store.AmbiguousError listing them all. It is the lookup of
// every surface that looks through several stores (diff, the MCP server).
func FindInStores(dirs []string, id string) (dir string, meta store.Meta, err error) {
	var matches []string
	add := func(ids ...string) {
		for _, m := range ids {
			if !slices.Contains(matches, m) {
				matches = append(matches, m)
			}
		}
	}
	for _, d := range dirs {
		st, err := store.OpenExisting(d)
		if err != nil {
			continue
		}
		m, err := st.Find(id)
		st.Close()
		var ambiguous *store.AmbiguousError
		switch {
		case errors.As(err, &ambiguous):
			add(ambiguous.Matches...)
		case err == nil && !slices.Contains(matches, m.ID):
			dir, meta = d, m
			add(m.ID)
		}
	}
	switch len(matches) {
	case 0:
		return "", store.Meta{}, fmt.Errorf("%w %q", store.ErrNotFound, id)
	case 1:
		return dir, meta, nil
	}
	slices.Sort(matches)
	return "", store.Meta{}, &store.AmbiguousError{ID: id, Matches: matches}
}

// fleetOf is where session id, a fleet session's copy, runs.
func fleetOf(st *store.Store, id string) *store.Fleet {
	if meta, err := st.Find(id); err == nil && meta.OnFleet() != nil {
		return meta.OnFleet()
	}
	return &store.Fleet{}
}

// ListAsShown lists the store's sessions as pipeline sessions and the web
// UI show them: one listed running whose lock nobody holds is paused,
// runner-died. A runner that ended after the index was read looks so too,
// though it ended well: it appends its last line before it lets go of its
// lock, so when one looks so the index is read once more, and only a
// session still running with no runner is shown as died.
func ListAsShown(st *store.Store) ([]store.Summary, error) {
	list, err := st.List()
	if err != nil {
		return nil, err
	}
	if betweenListAndLock != nil {
		betweenListAndLock()
	}
	runnerGone := func(s store.Summary) bool {
		return s.Status == string(engine.StatusRunning) && !st.Held(s.Key)
	}
	if !slices.ContainsFunc(list, runnerGone) {
		return list, nil
	}
	if list, err = st.List(); err != nil {
		return nil, err
	}
	for i := range list {
		if runnerGone(list[i]) {
			list[i].Status, list[i].PauseReason = string(engine.StatusPaused), engine.ReasonRunnerDied
		}
	}
	return list, nil
}

// betweenListAndLock, when set by a test, runs where ListAsShown has read
// the index and not yet looked at the locks.
var betweenListAndLock func()
