//go:build temporal

package temporal_test

import (
	"context"
	"io"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/internal/temporaltest"
	"github.com/pipeline-dev/pipeline/internal/testwait"

	"github.com/pipeline-dev/pipeline/engine/temporal"
)

// serverDefaultTaskTimeout is the workflow task timeout a server gives a
// workflow started without one.
const serverDefaultTaskTimeout = 10 * time.Second

// A workflow task the server records as started and never delivers (as a
// busy server now and then does) costs the session SessionTaskTimeout,
// not the server's default 10s: the test takes the first task of a
// session a client started with a poll of its own and drops it, as the
// lost answer to a poll would; a worker then gets the task once it timed
// out, and the session completes. The history says when the task timed
// out, on the server's clock.
func TestALostWorkflowTaskCostsTheSessionTaskTimeout(t *testing.T) {
	if temporal.SessionTaskTimeout >= serverDefaultTaskTimeout {
		t.Fatalf("SessionTaskTimeout %v is not under the server's default %v", temporal.SessionTaskTimeout, serverDefaultTaskTimeout)
	}
	s := temporaltest.StartDevServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Failsafe)
	defer cancel()
	const queue = "q-lost-task"
	target := temporal.Target{Address: s.HostPort(), TaskQueue: queue}
	c, err := temporal.NewClient(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	src := sourceIn(t, keyYAML)
	id := "s-lost-task"
	in := temporal.SessionInput{SessionID: id, Plan: src, Changes: temporal.SessionChanges,
		Events: []temporal.EventRecord{temporal.MustRecord(engine.Started{At: time.Now().UTC()})}}
	if err := c.Start(ctx, in, temporal.Memo{File: src.File, Key: temporal.Key(src.File, src.Spec)}); err != nil {
		t.Fatal(err)
	}
	lost, err := c.C.WorkflowService().PollWorkflowTaskQueue(ctx, &workflowservice.PollWorkflowTaskQueueRequest{
		Namespace: s.Namespace(), Identity: "a poll whose answer is lost",
		TaskQueue: &taskqueuepb.TaskQueue{Name: queue, Kind: enumspb.TASK_QUEUE_KIND_NORMAL}})
	if err != nil {
		t.Fatal(err)
	}
	if got := lost.GetWorkflowExecution().GetWorkflowId(); got != id {
		t.Fatalf("the poll took a task of %q, want the session's first", got)
	}
	w, err := temporal.StartWorker(ctx, temporal.WorkerConfig{Target: target.WithDefaults(), MaxParallel: 1, Grace: time.Second, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := c.C.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
		t.Fatalf("the session did not complete: %v", err)
	}
	events := history(t, ctx, c, id)
	if got := events[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowTaskTimeout().AsDuration(); got != temporal.SessionTaskTimeout {
		t.Errorf("the session's workflow task timeout is %v, want %v", got, temporal.SessionTaskTimeout)
	}
	took := lostTaskTimeout(t, events)
	if took < temporal.SessionTaskTimeout || took >= serverDefaultTaskTimeout {
		t.Errorf("the lost task timed out %v after it started, want SessionTaskTimeout (%v), under the server's default %v", took, temporal.SessionTaskTimeout, serverDefaultTaskTimeout)
	}
}

func history(t *testing.T, ctx context.Context, c *temporal.Client, id string) []*historypb.HistoryEvent {
	t.Helper()
	var events []*historypb.HistoryEvent
	it := c.C.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
	}
	return events
}

// lostTaskTimeout is how long after its start the one workflow task of
// the history that timed out did, on the server's clock.
func lostTaskTimeout(t *testing.T, events []*historypb.HistoryEvent) time.Duration {
	t.Helper()
	started := map[int64]time.Time{}
	var out []time.Duration
	for _, ev := range events {
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			started[ev.GetEventId()] = ev.GetEventTime().AsTime()
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
			a := ev.GetWorkflowTaskTimedOutEventAttributes()
			if a.GetTimeoutType() != enumspb.TIMEOUT_TYPE_START_TO_CLOSE {
				t.Errorf("a workflow task timed out %v, want start to close", a.GetTimeoutType())
			}
			out = append(out, ev.GetEventTime().AsTime().Sub(started[a.GetStartedEventId()]))
		}
	}
	if len(out) != 1 {
		t.Fatalf("%d workflow tasks timed out, want the one lost", len(out))
	}
	return out[0]
}
