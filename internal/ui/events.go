package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// change is one line of GET /api/events: a session whose status, phase
// or pause reason changed (or that is new).
type change = app.SessionState

// events follow the stores below the root (app.StoreWatcher, as the MCP
// server's subscriptions do): on each change of a store, its sessions are
// read again, and each one that changed is sent to every open stream.
// Each store is kept open, so that reading it again reads only the lines
// its index gained (store.List): a change of one of 10,000 sessions costs
// the new lines, not the whole index.
type events struct {
	w      *app.StoreWatcher
	mu     sync.Mutex
	stores map[string]map[string]change
	// seen is the time of the newest index line read of each store.
	seen map[string]time.Time
	open map[string]*store.Store
	// gen counts the changes seen: a listing read at one generation is
	// out of date at the next.
	gen uint64
	// initial: the stores found as the server starts are being read;
	// those found later have sessions to tell.
	initial bool
	streams map[chan change]bool
	done    chan struct{}
}

func newEvents(root string) (*events, error) {
	e := &events{initial: true, stores: map[string]map[string]change{}, seen: map[string]time.Time{}, open: map[string]*store.Store{}, streams: map[chan change]bool{}, done: make(chan struct{})}
	var err error
	if e.w, err = app.NewStoreWatcher(e.changed); err != nil {
		return nil, err
	}
	e.follow(root)
	e.mu.Lock()
	e.initial = false
	e.mu.Unlock()
	go e.rescan(root)
	return e, nil
}

// storeRescan is how often the folder served is walked again for stores
// made since (a pipeline's first run): fsnotify follows the stores, not
// every folder below the root.
const storeRescan = 2 * time.Second

// rescan follows the stores made below root, until the events close.
func (e *events) rescan(root string) {
	tick := time.NewTicker(storeRescan)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			e.follow(root)
		case <-e.done:
			return
		}
	}
}

// follow watches the stores below root not watched yet.
func (e *events) follow(root string) {
	if dirs, err := app.FindStores(root); err == nil {
		e.followDirs(dirs)
	}
}

// followDirs watches the stores in dirs not watched yet.
func (e *events) followDirs(dirs []string) {
	for _, dir := range dirs {
		dir = filepath.Clean(dir)
		e.mu.Lock()
		if _, ok := e.stores[dir]; !ok {
			// Read before it is watched: a change from then on is told.
			e.stores[dir], e.seen[dir] = e.states(dir, time.Time{})
			e.gen++
			if !e.initial {
				// A store made since the server started: its sessions
				// are new to the pages.
				for _, c := range e.stores[dir] {
					e.send(c)
				}
			}
		}
		e.mu.Unlock()
		e.w.Add(dir)
	}
}

// states is the state of each session of the store in dir changed since
// (its index line written then or after, or running: its runner may have
// died since), as its index line says and as pipeline sessions shows it
// (app.ListAsShown): running with no runner is paused, runner-died; a
// fleet session's copy is on the fleet. It also returns the time of the
// newest line. None when the store cannot be read. The caller holds e.mu.
func (e *events) states(dir string, since time.Time) (map[string]change, time.Time) {
	st, ok := e.open[dir]
	if !ok {
		var err error
		if st, err = store.OpenExisting(dir); err != nil {
			return map[string]change{}, since
		}
		st.Warn = nil
		e.open[dir] = st
	}
	list, err := app.ListAsShown(st)
	if err != nil {
		// A store gone or broken is read anew next time.
		st.Close()
		delete(e.open, dir)
		return map[string]change{}, since
	}
	out, newest := map[string]change{}, since
	// Two writers may append in another order than their clocks read:
	// the lines of the moments before the newest are read again.
	since = since.Add(-appendSkew)
	for _, sum := range list {
		if sum.Updated.Before(since) && sum.Status != string(engine.StatusRunning) {
			continue
		}
		if sum.Updated.After(newest) {
			newest = sum.Updated
		}
		if sum.Key == store.FleetKey(sum.ID) {
			sum.Status, sum.PauseReason = app.StatusOnFleet, ""
		}
		out[sum.ID] = change{ID: sum.ID, Status: sum.Status, Phase: sum.Phase, PauseReason: sum.PauseReason}
	}
	return out, newest
}

// appendSkew is how much older than the newest line read a line
// appended after it may say it is.
const appendSkew = 5 * time.Second

// changed reads the store in dir again and sends what changed: only the
// sessions whose lines are new, so that a change among 10,000 sessions
// costs a scan of the listing, not a map of it.
func (e *events) changed(dir string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now, newest := e.states(dir, e.seen[dir])
	e.gen++
	e.seen[dir] = newest
	known := e.stores[dir]
	if known == nil {
		known = map[string]change{}
		e.stores[dir] = known
	}
	for id, c := range now {
		if known[id] != c {
			known[id] = c
			e.send(c)
		}
	}
}

// send gives c to every open stream; the caller holds e.mu.
func (e *events) send(c change) {
	for stream := range e.streams {
		select {
		case stream <- c:
		default: // a stream that does not read loses lines, not the server
		}
	}
}

// storeOf is the folder of the followed store that holds session id, or
// "".
func (e *events) storeOf(id string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	for dir, sessions := range e.stores {
		if _, ok := sessions[id]; ok {
			return dir
		}
	}
	return ""
}

// generation is the count of changes seen so far.
func (e *events) generation() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.gen
}

func (e *events) subscribe() chan change {
	c := make(chan change, 256)
	e.mu.Lock()
	e.streams[c] = true
	e.mu.Unlock()
	return c
}

func (e *events) unsubscribe(c chan change) {
	e.mu.Lock()
	delete(e.streams, c)
	e.mu.Unlock()
}

func (e *events) close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	select {
	case <-e.done:
		return nil
	default:
	}
	close(e.done)
	err := e.w.Close()
	for _, st := range e.open {
		st.Close()
	}
	e.open = map[string]*store.Store{}
	return err
}

// streamEvents is GET /api/events: server-sent events, a data line of a
// change object per session change, until the client goes or the server
// closes.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "this server cannot stream events")
		return
	}
	s.events.follow(s.root)
	c := s.events.subscribe()
	defer s.events.unsubscribe(c)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	// A first comment: the client knows it is following from here on.
	fmt.Fprint(w, ": following\n\n")
	flusher.Flush()
	for {
		select {
		case ch := <-c:
			line, _ := json.Marshal(ch)
			fmt.Fprintf(w, "data: %s\n\n", line)
			flusher.Flush()
		case <-r.Context().Done():
			return
		case <-s.events.done:
			return
		}
	}
}
