package local

import (
	"strings"
	"sync"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/steps"
)

// markerQueue carries the working-set markers a step prints from the
// executor's goroutines (which must not block) to the run's loop, in the
// order they were printed: the loop records them as Remembered events as
// they come, so that a runner killed mid-step has kept them.
type markerQueue struct {
	ready   chan struct{}
	mu      sync.Mutex
	phase   string
	pending []engine.MemoryNote
}

// sink is the steps.Step.Markers of a step of phase.
func (q *markerQueue) sink(phase string) func(steps.Marker) {
	return func(m steps.Marker) {
		q.mu.Lock()
		q.phase = phase
		q.pending = append(q.pending, MarkerNote(m))
		q.mu.Unlock()
		select {
		case q.ready <- struct{}{}:
		default:
		}
	}
}

// MarkerNote is the working-set change a marker line asks for: the
// marker's kind ([DECISION] → decision) and its text.
func MarkerNote(m steps.Marker) engine.MemoryNote {
	return engine.MemoryNote{Kind: strings.ToLower(m.Kind), Text: m.Text}
}

// take returns the markers not recorded yet as one event.
func (q *markerQueue) take(now time.Time) (engine.Event, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) == 0 {
		return nil, false
	}
	ev := engine.Remembered{At: now, Phase: q.phase, Source: engine.SourceAgent, Notes: q.pending}
	q.pending = nil
	return ev, true
}
