package app

import (
	"path/filepath"
	"sync"

	"github.com/fsnotify/fsnotify"

	"github.com/pipeline-dev/pipeline/engine/store"
)

// StoreWatcher follows stores with fsnotify: each write of a store's
// index.tsv (every change of a session's state appends a line) or of a
// lock (a runner taking or letting go a session) calls OnChange with the
// store's folder. The MCP server's subscriptions and the dashboard's
// events use it.
type StoreWatcher struct {
	w        *fsnotify.Watcher
	onChange func(storeDir string)
	mu       sync.Mutex
	stores   map[string]bool
	done     chan struct{}
}

// NewStoreWatcher starts following no store yet; Add adds them.
func NewStoreWatcher(onChange func(storeDir string)) (*StoreWatcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	sw := &StoreWatcher{w: w, onChange: onChange, stores: map[string]bool{}, done: make(chan struct{})}
	go sw.loop()
	return sw, nil
}

// Add follows the store in dir (a second Add of it does nothing), and
// says whether it was new. Its locks folder is followed when it exists.
func (sw *StoreWatcher) Add(dir string) (bool, error) {
	dir = filepath.Clean(dir)
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.stores[dir] {
		return false, nil
	}
	if err := sw.w.Add(dir); err != nil {
		return false, err
	}
	sw.w.Add(filepath.Join(dir, "locks"))
	sw.stores[dir] = true
	return true, nil
}

func (sw *StoreWatcher) loop() {
	for {
		select {
		case ev, ok := <-sw.w.Events:
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
			sw.onChange(dir)
		case _, ok := <-sw.w.Errors:
			if !ok {
				return
			}
		case <-sw.done:
			return
		}
	}
}

// Close stops following; OnChange is not called after it returns but
// for a call under way.
func (sw *StoreWatcher) Close() error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	select {
	case <-sw.done:
		return nil
	default:
	}
	close(sw.done)
	return sw.w.Close()
}

// SessionState is what a change of a session is told for: its status,
// phase and pause reason, as pipeline sessions shows them.
type SessionState struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	Phase       string `json:"phase,omitempty"`
	PauseReason string `json:"pause_reason,omitempty"`
}

// SessionStates is each session's state in the store in dir, as its index
// line says and as pipeline sessions shows it: running with no runner is
// paused, runner-died. None when the store cannot be read.
func SessionStates(dir string) map[string]SessionState {
	out := map[string]SessionState{}
	st, err := store.OpenExisting(dir)
	if err != nil {
		return out
	}
	defer st.Close()
	st.Warn = nil
	list, err := ListAsShown(st)
	if err != nil {
		return out
	}
	for _, sum := range list {
		out[sum.ID] = SessionState{ID: sum.ID, Status: sum.Status, Phase: sum.Phase, PauseReason: sum.PauseReason}
	}
	return out
}
