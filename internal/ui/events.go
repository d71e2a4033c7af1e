package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"

	"github.com/fsnotify/fsnotify"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// change is one line of GET /api/events: a session whose status, phase
// or pause reason changed (or that is new).
type change struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	Phase       string `json:"phase,omitempty"`
	PauseReason string `json:"pause_reason,omitempty"`
}

// events follow the stores below the root as the MCP server's
// subscriptions do: each write of a store's index.tsv (every change of a
// session's state appends a line) or of a lock (a runner taking or
// letting go a session) reads the store's sessions again, and each one
// that changed is sent to every open stream.
type events struct {
	mu      sync.Mutex
	w       *fsnotify.Watcher
	stores  map[string]map[string]change
	streams map[chan change]bool
	done    chan struct{}
}

func newEvents(root string) (*events, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	e := &events{w: w, stores: map[string]map[string]change{}, streams: map[chan change]bool{}, done: make(chan struct{})}
	e.follow(root)
	go e.loop()
	return e, nil
}

// follow watches the stores below root not watched yet.
func (e *events) follow(root string) {
	dirs, err := app.FindStores(root)
	if err != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, dir := range dirs {
		dir = filepath.Clean(dir)
		if _, ok := e.stores[dir]; ok {
			continue
		}
		if err := e.w.Add(dir); err != nil {
			continue
		}
		e.w.Add(filepath.Join(dir, "locks"))
		e.stores[dir] = statesOf(dir)
	}
}

func (e *events) loop() {
	for {
		select {
		case ev, ok := <-e.w.Events:
			if !ok {
				return
			}
			dir := filepath.Dir(ev.Name)
			switch {
			case filepath.Base(ev.Name) == store.IndexName:
			case filepath.Base(dir) == "locks":
				dir = filepath.Dir(dir)
			default:
				continue
			}
			e.changed(dir)
		case _, ok := <-e.w.Errors:
			if !ok {
				return
			}
		case <-e.done:
			return
		}
	}
}

// changed reads the store in dir again and sends what changed.
func (e *events) changed(dir string) {
	now := statesOf(dir)
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

// statesOf is each session's state in the store in dir, as pipeline
// sessions shows it: running with no runner is paused, runner-died.
func statesOf(dir string) map[string]change {
	out := map[string]change{}
	st, err := store.OpenExisting(dir)
	if err != nil {
		return out
	}
	defer st.Close()
	st.Warn = nil
	list, err := st.List()
	if err != nil {
		return out
	}
	for _, sum := range list {
		if sum.Status == string(engine.StatusRunning) && !st.Held(sum.Key) {
			sum.Status, sum.PauseReason = string(engine.StatusPaused), engine.ReasonRunnerDied
		}
		out[sum.ID] = change{ID: sum.ID, Status: sum.Status, Phase: sum.Phase, PauseReason: sum.PauseReason}
	}
	return out
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
