//go:build temporal

package temporal_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/encoding/protojson"

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
// outputs encoded as a fleet encodes them. Each session's history then
// replays through the workflow; with PIPELINE_TEMPORAL_RECORD_EFFECTS
// set it is written to testdata, for TestReplayRecordedHistories to
// replay against later versions.
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
			replayHistory(t, c, run, "effects-"+slug(pc.Name))
		})
	}
}

// replayHistory replays the history of run through SessionWorkflow, and
// keeps it in testdata as name.json when PIPELINE_TEMPORAL_RECORD_EFFECTS
// is set.
func replayHistory(t *testing.T, c client.Client, run client.WorkflowRun, name string) {
	t.Helper()
	var hist historypb.History
	it := c.GetWorkflowHistory(context.Background(), run.GetID(), run.GetRunID(), false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		hist.Events = append(hist.Events, ev)
	}
	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflow(temporal.SessionWorkflow)
	if err := replayer.ReplayWorkflowHistory(nil, &hist); err != nil {
		t.Fatalf("the history does not replay: %v", err)
	}
	if os.Getenv("PIPELINE_TEMPORAL_RECORD_EFFECTS") == "" {
		return
	}
	out, err := protojson.MarshalOptions{Indent: "  "}.Marshal(&hist)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", name+".json"), append(out, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// slug is a case's name as a file name: its first words, lower case,
// joined by -.
func slug(name string) string {
	words := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return (r < 'a' || r > 'z') && (r < '0' || r > '9') })
	return strings.Join(words[:min(len(words), 4)], "-")
}
