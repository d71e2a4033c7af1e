//go:build temporal

package temporal_test

import (
	"context"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/pipeline-dev/pipeline/engine/temporal"
	"github.com/pipeline-dev/pipeline/internal/syncbuf"
	"github.com/pipeline-dev/pipeline/internal/temporaltest"
)

// TestStartWorkerServesTheQueue: the worker pipeline worker starts polls
// its task queue on a real dev server, runs the workflows under the type
// names clients start them by (a RunLease workflow's first task is
// taken: its timer is set), and has registered the search attribute by
// which runs find their pipeline's sessions. Without GOGC, it collects
// garbage less often than Go's default (workerGC).
func TestStartWorkerServesTheQueue(t *testing.T) {
	t.Setenv("GOGC", "")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	srv := temporaltest.StartDevServer(t)
	target := temporal.Target{Address: srv.HostPort(), Namespace: srv.Namespace(), TaskQueue: "pipeline-assembly"}
	var warned []error
	log := &syncbuf.Buffer{}
	w, err := temporal.StartWorker(context.Background(), temporal.WorkerConfig{Target: target, MaxParallel: 2, Grace: time.Second,
		Log: log, Warn: func(err error) { warned = append(warned, err) }})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if gc := debug.SetGCPercent(100); gc != 400 {
		t.Errorf("the worker collects garbage at GOGC %d; want 400", gc)
	}
	if len(warned) > 0 {
		t.Errorf("warned: %v", warned)
	}
	c := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	attrs, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: target.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := attrs.GetCustomAttributes()[temporal.KeyAttribute]; !ok {
		t.Errorf("search attribute %s not registered: %v", temporal.KeyAttribute, attrs.GetCustomAttributes())
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "assembly-lease", TaskQueue: target.TaskQueue}, temporal.RunLeaseType)
	if err != nil {
		t.Fatal(err)
	}
	defer c.TerminateWorkflow(context.Background(), run.GetID(), run.GetRunID(), "test over")
	awaitTimerStarted(ctx, t, c, run)
	// The SDK's own lines go to Log, as pipeline worker shows them.
	if got := log.String(); !strings.Contains(got, "Started Worker") {
		t.Errorf("the SDK's start line is not in the log:\n%s", got)
	}
}

// awaitTimerStarted waits until the workflow's history shows its timer
// set: a worker took its first task and ran it.
func awaitTimerStarted(ctx context.Context, t *testing.T, c client.Client, run client.WorkflowRun) {
	t.Helper()
	for {
		iter := c.GetWorkflowHistory(ctx, run.GetID(), run.GetRunID(), true, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			event, err := iter.Next()
			if err != nil {
				t.Fatalf("the lease's history: %v", err)
			}
			if event.GetEventType() == enumspb.EVENT_TYPE_TIMER_STARTED {
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatal("no worker took the lease's first task")
		}
	}
}

// TestStartWorkerUnreachable: a worker whose server is not there says
// which server, and starts nothing.
func TestStartWorkerUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	target := temporal.Target{Address: "127.0.0.1:1", Namespace: "default", TaskQueue: "pipeline-assembly"}
	w, err := temporal.StartWorker(ctx, temporal.WorkerConfig{Target: target, MaxParallel: 1, Log: &syncbuf.Buffer{}})
	if err == nil {
		w.Stop()
		t.Fatal("a worker started with no server")
	}
	if !strings.Contains(err.Error(), "127.0.0.1:1") || !strings.Contains(err.Error(), "cannot be reached") {
		t.Errorf("err = %v", err)
	}
}
