package local

import (
	"sync"

	"github.com/pipeline-dev/pipeline/engine"
)

// firingQueue carries the live triggers that fire in a step, from the
// executor's goroutine (which holds its lock and must not block) to the
// run's loop. It never blocks and starts no goroutine: a firing waits in
// it until the loop takes it, and nothing of it outlives the loop.
type firingQueue struct {
	ready   chan struct{}
	mu      sync.Mutex
	pending []engine.TriggerFired
}

func newFiringQueue() *firingQueue { return &firingQueue{ready: make(chan struct{}, 1)} }

// put queues a firing and wakes the loop.
func (q *firingQueue) put(ev engine.TriggerFired) {
	q.mu.Lock()
	q.pending = append(q.pending, ev)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default: // the loop is woken already: it takes them all
	}
}

// take returns the firings queued, oldest first, and empties the queue.
func (q *firingQueue) take() []engine.TriggerFired {
	q.mu.Lock()
	defer q.mu.Unlock()
	taken := q.pending
	q.pending = nil
	return taken
}
