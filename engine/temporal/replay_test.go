package temporal_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
)

// TestReplayRecordedHistories replays the histories recorded from real
// runs on a Temporal dev server (testdata/*.json, made by
// TestRecordHistories) through today's SessionWorkflow: a change to the
// workflow, or to Decide, that would decide a recorded session otherwise
// fails here, as it would fail the sessions running on a fleet.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded history in testdata (%v)", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			replayer := worker.NewWorkflowReplayer()
			replayer.RegisterWorkflow(temporal.SessionWorkflow)
			if err := replayer.ReplayWorkflowHistoryFromJSONFile(nil, file); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// recorded are the sessions TestRecordHistories runs: a plan, and what
// the test does while it runs.
var recorded = []struct {
	name string
	yaml string
	// drive signals the workflow while it runs.
	drive func(ctx context.Context, c client.Client, id string) error
}{
	{name: "retry-backoff", yaml: `version: 1
defaults:
  retry:
    when: exit_code != 0
    backoff: duration("1s") * consecutive_errors
    escalate_when: attempt > 5
phases:
  - name: build
    steps:
      - run: '[ "$PIPELINE_ATTEMPT" -ge 3 ]'
  - name: test
    steps:
      - run: echo "[DECISION] keep it" && echo ok
`},
	{name: "checkpoint-resume", yaml: `version: 1
phases:
  - name: design
    steps:
      - run: 'test -f checkpointed || { touch checkpointed; echo "[CHECKPOINT] halfway"; }'
`, drive: func(ctx context.Context, c client.Client, id string) error {
		if err := awaitStatus(ctx, c, id, "paused"); err != nil {
			return err
		}
		return c.SignalWorkflow(ctx, id, "", temporal.SignalResume, temporal.ResumeSignal{Notes: "go on"})
	}},
	{name: "pause-during-step", yaml: `version: 1
phases:
  - name: build
    steps:
      - run: 'test -f stopped && exit 0; touch stopped; sleep 30'
`, drive: func(ctx context.Context, c client.Client, id string) error {
		time.Sleep(2 * time.Second)
		if err := c.SignalWorkflow(ctx, id, "", temporal.SignalPause, temporal.PauseSignal{Notes: "lunch"}); err != nil {
			return err
		}
		if err := awaitStatus(ctx, c, id, "paused"); err != nil {
			return err
		}
		return c.SignalWorkflow(ctx, id, "", temporal.SignalResume, temporal.ResumeSignal{})
	}},
}

func awaitStatus(ctx context.Context, c client.Client, id, status string) error {
	for ctx.Err() == nil {
		if v, err := c.QueryWorkflow(ctx, id, "", temporal.QueryStatus); err == nil {
			var r engine.StatusReport
			if v.Get(&r) == nil && r.Status == status {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s never %s", id, status)
}

// TestRecordHistories runs sessions on a real Temporal server, with a
// worker in this process, and writes their histories to testdata for
// TestReplayRecordedHistories. It runs only when PIPELINE_TEMPORAL_RECORD
// names the server (HOST:PORT of a dev server).
func TestRecordHistories(t *testing.T) {
	host := os.Getenv("PIPELINE_TEMPORAL_RECORD")
	if host == "" {
		t.Skip("set PIPELINE_TEMPORAL_RECORD=HOST:PORT of a Temporal dev server to record the replay histories")
	}
	c, err := client.Dial(client.Options{HostPort: host})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	queue := "pipeline-record"
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflow(temporal.SessionWorkflow)
	w.RegisterActivity(&temporal.Activities{Grace: time.Second, HeartbeatEvery: time.Second})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, r := range recorded {
		t.Run(r.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			id := session.NewSessionID(time.Now())
			in := temporal.SessionInput{SessionID: id, Plan: sourceIn(t, r.yaml),
				Events:  []temporal.EventRecord{temporal.MustRecord(engine.Started{At: time.Now().UTC()})},
				Options: temporal.Options{HeartbeatTimeout: 10 * time.Second}}
			run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "pipeline-" + id, TaskQueue: queue}, temporal.SessionWorkflow, in)
			if err != nil {
				t.Fatal(err)
			}
			if r.drive != nil {
				if err := r.drive(ctx, c, run.GetID()); err != nil {
					t.Fatal(err)
				}
			}
			var s engine.State
			if err := run.Get(ctx, &s); err != nil {
				t.Fatal(err)
			}
			if s.Status != engine.StatusCompleted {
				t.Fatalf("%s: %s %+v", r.name, s.Status, s.Pause)
			}
			t.Logf("%s: %s, phases %+v", r.name, s.Status, s.Phases)
			var hist historypb.History
			it := c.GetWorkflowHistory(ctx, run.GetID(), run.GetRunID(), false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for it.HasNext() {
				ev, err := it.Next()
				if err != nil {
					t.Fatal(err)
				}
				hist.Events = append(hist.Events, ev)
			}
			out, err := protojson.MarshalOptions{Indent: "  "}.Marshal(&hist)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join("testdata", r.name+".json"), append(out, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
}
