// Package clock is the source of time of the runner and the step executor:
// the wall clock, or a fake one that tests move by hand, so that back-off,
// time limits and idle timeouts are tested without sleeping.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock is the runner's source of time: the real one, or a fake that tests
// move by hand so back-off, time limits and idle timeouts run without
// sleeping.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d; stop cancels it.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// Real is the wall clock.
type Real struct{}

// Now is time.Now.
func (Real) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// Fake moves only when Advance is called.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	pending []*fakeTimer
	// waiters are told when a timer is set, so a test can wait for the
	// runner to arm one before it moves the clock.
	armed chan struct{}
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

// NewFake starts a fake clock at t.
func NewFake(t time.Time) *Fake {
	return &Fake{now: t, armed: make(chan struct{}, 1024)}
}

// Now returns the fake time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc arms a timer that fires when Advance passes its time.
func (c *Fake) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	t := &fakeTimer{at: c.now.Add(d), f: f}
	c.pending = append(c.pending, t)
	c.mu.Unlock()
	select {
	case c.armed <- struct{}{}:
	default:
	}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// Armed is signalled each time a timer is set.
func (c *Fake) Armed() <-chan struct{} { return c.armed }

// AdvanceToNext moves the clock to the earliest pending timer, if any, and
// runs it.
func (c *Fake) AdvanceToNext() {
	c.mu.Lock()
	var next *fakeTimer
	for _, t := range c.pending {
		if !t.stopped && (next == nil || t.at.Before(next.at)) {
			next = t
		}
	}
	c.mu.Unlock()
	if next != nil {
		c.Advance(next.at.Sub(c.Now()))
	}
}

// Advance moves the clock by d and runs, in order and in this goroutine,
// every timer that falls due.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	for {
		sort.SliceStable(c.pending, func(i, j int) bool { return c.pending[i].at.Before(c.pending[j].at) })
		if len(c.pending) == 0 || c.pending[0].at.After(end) {
			break
		}
		t := c.pending[0]
		c.pending = c.pending[1:]
		if t.stopped {
			continue
		}
		t.stopped = true
		c.now = t.at
		c.mu.Unlock()
		t.f()
		c.mu.Lock()
	}
	c.now = end
	c.mu.Unlock()
}
