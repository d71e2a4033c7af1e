//go:build temporal

package temporal_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/temporal"
	"github.com/pipeline-dev/pipeline/internal/policytest"
	"github.com/pipeline-dev/pipeline/internal/temporaltest"
)

// TestEffectsOnADevServer runs the policy table's effect cases on a real
// Temporal dev server with two workers in this process: the checkpoints
// land under refs/pipeline/<session>/ of the pipeline's repository, the
// hooks run, a pin made in the worker's copy while the session stands
// paused reaches the next step's prompt, and a change outside writes is
// put back; every activity goes through the server, its inputs and
// outputs encoded as a fleet encodes them.
func TestEffectsOnADevServer(t *testing.T) {
	srv := temporaltest.StartDevServer(t)
	c := srv.Client(t)
	queue := "pipeline-effects"
	for range 2 {
		w := worker.New(c, queue, worker.Options{})
		w.RegisterWorkflow(temporal.SessionWorkflow)
		w.RegisterActivity(&temporal.Activities{Grace: time.Second, HeartbeatEvery: time.Second})
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
	}
	for _, pc := range policytest.Cases {
		if !pc.Git && !pc.Resume {
			continue // no effect of its own: the test environment runs it
		}
		t.Run(pc.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			src := sourceIn(t, pc.YAML)
			dir := filepath.Dir(src.File)
			if err := policytest.SetUp(dir, pc); err != nil {
				t.Fatal(err)
			}
			id := session.NewSessionID(time.Now())
			in := temporal.SessionInput{SessionID: id, Plan: src,
				Events:  []temporal.EventRecord{temporal.MustRecord(engine.Started{At: time.Now().UTC()})},
				Options: temporal.Options{HeartbeatTimeout: 10 * time.Second}}
			run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "pipeline-" + id, TaskQueue: queue}, temporal.SessionWorkflow, in)
			if err != nil {
				t.Fatal(err)
			}
			if pc.Resume {
				if err := awaitStatus(ctx, c, run.GetID(), string(engine.StatusPaused)); err != nil {
					t.Fatal(err)
				}
				if pc.Pin != "" {
					if err := policytest.Pin(filepath.Join(dir, ".pipeline"), id, pc.Pin, time.Now()); err != nil {
						t.Fatal(err)
					}
				}
				if err := c.SignalWorkflow(ctx, run.GetID(), "", temporal.SignalResume, temporal.ResumeSignal{}); err != nil {
					t.Fatal(err)
				}
			}
			var s engine.State
			if err := run.Get(ctx, &s); err != nil {
				t.Fatal(err)
			}
			refs, err := policytest.Refs(dir, id)
			if err != nil {
				t.Fatal(err)
			}
			seen := policytest.Seen{Refs: refs, Hooks: policytest.Hooks(dir), PinSeen: policytest.PinSeen(dir, pc.Pin)}
			if diff := pc.Check(s, seen); diff != "" {
				t.Fatal(diff)
			}
		})
	}
}
