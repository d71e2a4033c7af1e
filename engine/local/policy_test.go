package local_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/internal/clock"
	"github.com/pipeline-dev/pipeline/internal/policytest"
)

// backoffView records the back-offs a run sleeps.
type backoffView struct {
	*testView
	mu       sync.Mutex
	backoffs []time.Duration
}

func (v *backoffView) Backoff(d time.Duration, _ int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.backoffs = append(v.backoffs, d)
}

func (v *backoffView) Stopping() {}

// TestPolicyTable runs the policy paths every driver shares (the
// Temporal workflow runs the same table) with real processes, real git
// and the fake clock: a case that resumes is run again from its first
// pause, after its pin is made as pipeline memory pin makes it.
func TestPolicyTable(t *testing.T) {
	for _, c := range policytest.Cases {
		t.Run(c.Name, func(t *testing.T) {
			fake := clock.NewFake(time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC))
			h := newHarness(t, c.YAML, fake)
			if err := policytest.SetUp(h.dir, c); err != nil {
				t.Fatal(err)
			}
			view := &backoffView{testView: h.view}
			h.driver.View = view
			s := awaitAdvancing(t, fake, h.start())
			if c.Resume && s.Status == engine.StatusPaused {
				if c.Pin != "" {
					if err := policytest.Pin(filepath.Join(h.dir, ".pipeline"), h.sess.ID(), c.Pin, fake.Now()); err != nil {
						t.Fatal(err)
					}
				}
				s = awaitAdvancing(t, fake, h.resume())
			}
			refs, err := policytest.Refs(h.dir, h.sess.ID())
			if err != nil {
				t.Fatal(err)
			}
			view.mu.Lock()
			defer view.mu.Unlock()
			seen := policytest.Seen{Backoffs: view.backoffs, Refs: refs, Hooks: policytest.Hooks(h.dir), PinSeen: policytest.PinSeen(h.dir, c.Pin)}
			if diff := c.Check(s, seen); diff != "" {
				t.Fatalf("%s\n%s", diff, h.view.saidText())
			}
		})
	}
}

// resume runs the session the harness started again, resumed, in the
// background.
func (h *harness) resume() <-chan engine.State {
	done := make(chan engine.State, 1)
	go func() {
		s, err := h.driver.Run(context.Background(), h.sess, engine.Resumed{At: h.clock.Now()})
		if err != nil {
			h.t.Errorf("resume: %v", err)
		}
		done <- s
	}()
	return done
}

var _ local.WaitView = (*backoffView)(nil)
