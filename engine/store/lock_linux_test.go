package store

import (
	"os"
	"sync"
	"sync/atomic"
	"testing"
)

// Issue 8: Held probed a lock by taking it, so a status, sessions or
// logs -f beside a run could make the run's Lock fail with "already
// running" (522 of 2,000 Lock calls failed). On Linux the query never
// takes the lock; elsewhere it still does (see lock_other.go).
func TestHeldNeverMakesLockFail(t *testing.T) {
	st := newStore(t)
	l, err := st.Lock("k", Holder{PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var probes, heldSeen atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if st.Held("k") {
					heldSeen.Add(1)
				}
				probes.Add(1)
			}
		})
	}
	const locks = 2000
	failures := 0
	var first error
	for range locks {
		l, err := st.Lock("k", Holder{PID: os.Getpid(), Session: "s1"})
		if err != nil {
			if first == nil {
				first = err
			}
			failures++
			continue
		}
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if failures > 0 {
		t.Errorf("%d of %d Lock calls failed beside %d Held calls; the first: %v", failures, locks, probes.Load(), first)
	}
	if probes.Load() == 0 {
		t.Error("no Held call ran beside the Lock calls")
	}
	t.Logf("%d Held calls, %d saw the lock held", probes.Load(), heldSeen.Load())
}
