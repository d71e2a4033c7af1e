//go:build temporal

package temporal_test

import (
	"context"
	"sync"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/pipeline-dev/pipeline/engine/temporal"
	"github.com/pipeline-dev/pipeline/internal/temporaltest"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// The run lease is the server's: of eight takers at once exactly one gets
// it, and the others are told whose session holds it; ended, it is taken
// again at once; a lease of another (pipeline, spec) is its own. No
// worker runs: the lease needs none.
func TestRunLeaseOneTakerAtATime(t *testing.T) {
	s := temporaltest.StartDevServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Failsafe)
	defer cancel()
	c, err := temporal.NewClient(ctx, temporal.Target{Address: s.HostPort(), TaskQueue: "q-lease"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	key := temporal.Key("/p/phases.yaml", "")
	type took struct {
		id          string
		taken, held *temporal.RunLease
		err         error
	}
	results := make(chan took, 8)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := string(rune('a' + i))
			taken, held, err := c.TakeRunLease(ctx, key, id)
			results <- took{id, taken, held, err}
		}()
	}
	wg.Wait()
	close(results)
	var winner *temporal.RunLease
	var helds []*temporal.RunLease
	for r := range results {
		switch {
		case r.err != nil:
			t.Fatalf("%s: %v", r.id, r.err)
		case r.taken != nil:
			if winner != nil {
				t.Fatalf("two took the lease: %s and %s", winner.Session, r.id)
			}
			winner = r.taken
		default:
			helds = append(helds, r.held)
		}
	}
	if winner == nil || len(helds) != 7 {
		t.Fatalf("taken by %v, refused %d times; want one taker and seven refusals", winner, len(helds))
	}
	for _, h := range helds {
		if h.Session != winner.Session {
			t.Fatalf("a refusal names %q, the lease is %q's", h.Session, winner.Session)
		}
	}
	// The lease is the server's alone: it asks no worker for anything
	// (its first workflow task is delayed past its timeout).
	it := c.C.GetWorkflowHistory(ctx, "pipeline-run-lease-"+key, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED {
			t.Fatalf("the lease's history has a %v; want its start alone, no task for a worker", ev.GetEventType())
		}
	}
	if taken, _, err := c.TakeRunLease(ctx, temporal.Key("/p/phases.yaml", "/p/other.md"), "z"); err != nil || taken == nil {
		t.Fatalf("the lease of another spec: %v, %v; want it taken", taken, err)
	}
	if err := c.ReleaseRunLease(ctx, key, helds[0]); err != nil {
		t.Fatal(err)
	}
	if taken, held, err := c.TakeRunLease(ctx, key, "next"); err != nil || taken == nil {
		t.Fatalf("after the release: taken %v, held %v, %v; want it taken", taken, held, err)
	}
	// A release of a lease ended already is no error.
	if err := c.ReleaseRunLease(ctx, key, helds[0]); err != nil {
		t.Fatalf("a second release: %v", err)
	}
}
