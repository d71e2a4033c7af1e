package mockapi

import (
	"sync"
	"time"
)

// disconnects counts the slow replies a client went away from before their
// end, and lets a test wait for them instead of polling.
type disconnects struct {
	mu      sync.Mutex
	n       int
	changed chan struct{}
}

func (d *disconnects) add() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n++
	if d.changed != nil {
		close(d.changed)
		d.changed = nil
	}
}

func (d *disconnects) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}

// await waits until there have been at least n, or timeout passed; it
// reports whether there were.
func (d *disconnects) await(n int, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		d.mu.Lock()
		if d.n >= n {
			d.mu.Unlock()
			return true
		}
		if d.changed == nil {
			d.changed = make(chan struct{})
		}
		changed := d.changed
		d.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			return d.count() >= n
		}
	}
}
