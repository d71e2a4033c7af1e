package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"

	"github.com/pipeline-dev/pipeline/app"
)

// change is one line of GET /api/events: a session whose status, phase
// or pause reason changed (or that is new).
type change = app.SessionState

// events follow the stores below the root (app.StoreWatcher, as the MCP
// server's subscriptions do): on each change of a store, its sessions are
// read again, and each one that changed is sent to every open stream.
type events struct {
	w       *app.StoreWatcher
	mu      sync.Mutex
	stores  map[string]map[string]change
	streams map[chan change]bool
	done    chan struct{}
}

func newEvents(root string) (*events, error) {
	e := &events{stores: map[string]map[string]change{}, streams: map[chan change]bool{}, done: make(chan struct{})}
	var err error
	if e.w, err = app.NewStoreWatcher(e.changed); err != nil {
		return nil, err
	}
	e.follow(root)
	return e, nil
}

// follow watches the stores below root not watched yet.
func (e *events) follow(root string) {
	dirs, err := app.FindStores(root)
	if err != nil {
		return
	}
	for _, dir := range dirs {
		dir = filepath.Clean(dir)
		// Read before it is watched: a change from then on is told.
		states := app.SessionStates(dir)
		e.mu.Lock()
		if _, ok := e.stores[dir]; !ok {
			e.stores[dir] = states
		}
		e.mu.Unlock()
		e.w.Add(dir)
	}
}

// changed reads the store in dir again and sends what changed.
func (e *events) changed(dir string) {
	now := app.SessionStates(dir)
	e.mu.Lock()
	defer e.mu.Unlock()
	before := e.stores[dir]
	e.stores[dir] = now
	for id, c := range now {
		if before[id] == c {
			continue
		}
		for stream := range e.streams {
			select {
			case stream <- c:
			default: // a stream that does not read loses lines, not the server
			}
		}
	}
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
	return e.w.Close()
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
