package local_test

import (
	"sync"
	"testing"
	"time"

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
// Temporal workflow runs the same table) with real processes and the
// fake clock.
func TestPolicyTable(t *testing.T) {
	for _, c := range policytest.Cases {
		t.Run(c.Name, func(t *testing.T) {
			fake := clock.NewFake(time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC))
			h := newHarness(t, c.YAML, fake)
			view := &backoffView{testView: h.view}
			h.driver.View = view
			s := awaitAdvancing(t, fake, h.start())
			view.mu.Lock()
			defer view.mu.Unlock()
			if diff := c.Check(s, view.backoffs); diff != "" {
				t.Fatalf("%s\n%s", diff, h.view.saidText())
			}
		})
	}
}

var _ local.WaitView = (*backoffView)(nil)
