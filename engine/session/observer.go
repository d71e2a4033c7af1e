package session

import (
	"sync/atomic"

	"github.com/pipeline-dev/pipeline/engine"
)

// Observer is told what every session of this process records, as it is
// recorded: telemetry builds its spans and metrics from it, in one place
// rather than at every call that records. Its methods run on the
// recording goroutine and must be quick; nothing they do changes the
// session.
type Observer interface {
	// Recorded: ev was recorded, and led from before to after.
	Recorded(s *Session, ev engine.Event, before, after engine.State)
	// StepEnv is what the environment of the step s is starting (its
	// StartStep recorded) gets besides pipeline's own: TRACEPARENT.
	StepEnv(s *Session) []string
	// Closed: s is closed, its last state recorded.
	Closed(s *Session)
}

var observer atomic.Pointer[Observer]

// SetObserver makes o the observer of every session recorded from now
// on in this process; nil removes it.
func SetObserver(o Observer) {
	if o == nil {
		observer.Store(nil)
		return
	}
	observer.Store(&o)
}

func observing() Observer {
	if o := observer.Load(); o != nil {
		return *o
	}
	return nil
}

// StepEnv is the environment the observer adds to the step starting.
func (s *Session) StepEnv() []string {
	if o := observing(); o != nil {
		return o.StepEnv(s)
	}
	return nil
}
