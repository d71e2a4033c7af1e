//go:build temporal

package temporal_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/grpc"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/temporal"
	"github.com/pipeline-dev/pipeline/internal/temporaltest"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// TestWatch follows sessions with a Watch against a real dev server and
// a worker in this process that counts the status queries it answers.
func TestWatch(t *testing.T) {
	s := temporaltest.StartDevServer(t)
	t.Run("progress asks no worker while the session runs, and sees each step", func(t *testing.T) { progressAsksNoWorker(t, s) })
	t.Run("the output follow shares the watch's reading", func(t *testing.T) { followThroughTheWatch(t, s) })
	t.Run("a paused session's report is the workflow's, asked once", func(t *testing.T) { pausedReportAskedOnce(t, s) })
	t.Run("a session this client started is followed and reported from its history alone", func(t *testing.T) { reportFromTheHistoryRead(t, s) })
}

// callCounter counts a client's calls to the server by method; reads
// counts the history reads that are not long polls.
type callCounter struct {
	mu    sync.Mutex
	calls map[string]int
	reads int
}

func (c *callCounter) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	c.mu.Lock()
	name := method[strings.LastIndexByte(method, '/')+1:]
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[name]++
	if r, ok := req.(*workflowservice.GetWorkflowExecutionHistoryRequest); ok && !r.GetWaitNewEvent() {
		c.reads++
	}
	c.mu.Unlock()
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (c *callCounter) count(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[method]
}

// reportFromTheHistoryRead: a session started by a client and followed
// by its Watch until it completes costs that client no describe, no
// query and no second reading of the history: the watch reads the run
// it started, and the report of the closed workflow is the one its
// history holds (its result, decided with its plan).
func reportFromTheHistoryRead(t *testing.T, s *temporaltest.DevServer) {
	f, counter := startCountingFleet(t, s)
	calls := &callCounter{}
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Failsafe)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{HostPort: f.client.Target.Address, Namespace: f.client.Target.Namespace,
		Logger:            temporal.QuietLogger(nil),
		ConnectionOptions: client.ConnectionOptions{DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(calls.intercept)}}})
	if err != nil {
		t.Fatal(err)
	}
	counted := &temporal.Client{C: c, Target: f.client.Target}
	defer counted.Close()
	id, _ := (&fleet{client: counted}).session(t, watchedPlan)
	counted.Watch(id)
	var r engine.StatusReport
	for {
		if r, err = counted.Progress(ctx, id); err == nil && temporal.Stopped(r) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the session did not stop: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // a follower's pace, faster
	}
	if err := counted.AwaitEnd(ctx, id); err != nil {
		t.Fatal(err)
	}
	final, err := counted.Progress(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range []engine.StatusReport{r, final} {
		if got.Status != string(engine.StatusCompleted) || len(got.Phases) != 2 || got.ID != id || got.Created.IsZero() {
			t.Fatalf("want the completed report of %s with its 2 phases and its start, got %+v", id, got)
		}
	}
	if n := calls.count("DescribeWorkflowExecution"); n != 0 {
		t.Fatalf("%d describes, want none: the watch reads the run the client started", n)
	}
	if calls.reads != 0 || calls.count("QueryWorkflow") != 0 || counter.status.Load() != 0 {
		t.Fatalf("%d history reads besides the long polls and %d status queries, want none: the report is the history's", calls.reads, calls.count("QueryWorkflow"))
	}
	t.Logf("calls to the server: %v", calls.calls)
}

const watchedPlan = `version: 1
phases:
  - name: build
    steps:
      - {name: compile, run: "sleep 0.5; echo compiled"}
      - {name: link, run: "sleep 0.5; echo linked"}
  - name: test
    steps: [{name: unit, run: "sleep 0.5; echo tested"}]
`

// queryCounter counts the status queries the worker's workflows answer.
type queryCounter struct {
	interceptor.WorkerInterceptorBase
	status atomic.Int64
}

func (q *queryCounter) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &countingInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, q: q}
}

type countingInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	q *queryCounter
}

func (c *countingInbound) HandleQuery(ctx workflow.Context, in *interceptor.HandleQueryInput) (any, error) {
	if in.QueryType == temporal.QueryStatus {
		c.q.status.Add(1)
	}
	return c.Next.HandleQuery(ctx, in)
}

// startCountingFleet is startFleet with a worker that counts the status
// queries; the client is closed (its watches stopped) at the test's end.
func startCountingFleet(t *testing.T, s *temporaltest.DevServer) (*fleet, *queryCounter) {
	t.Helper()
	target := temporal.Target{Address: s.HostPort(), TaskQueue: "w-" + strconv.FormatInt(time.Now().UnixNano(), 36)}.WithDefaults()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Failsafe)
	defer cancel()
	c, err := temporal.Dial(ctx, target, temporal.QuietLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	counter := &queryCounter{}
	activities := &temporal.Activities{StateDir: t.TempDir(), Grace: time.Second}
	w := worker.New(c, target.TaskQueue, temporal.WorkerOptions(activities, worker.Options{Interceptors: []interceptor.WorkerInterceptor{counter}}))
	w.RegisterWorkflowWithOptions(temporal.SessionWorkflow, workflow.RegisterOptions{Name: temporal.WorkflowType})
	w.RegisterActivity(activities)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	client := &temporal.Client{C: c, Target: target}
	t.Cleanup(func() {
		w.Stop()
		client.Close()
	})
	return &fleet{client: client}, counter
}

// progressAsksNoWorker polls Progress as a follower does, much faster:
// each step shows in order, the session ends completed, and the worker
// was asked no status query at all.
func progressAsksNoWorker(t *testing.T, s *temporaltest.DevServer) {
	f, counter := startCountingFleet(t, s)
	id, _ := f.session(t, watchedPlan)
	f.client.Watch(id)
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Failsafe)
	defer cancel()
	var steps []string
	polls := 0
	for {
		r, err := f.client.Progress(ctx, id)
		polls++
		if err == nil && temporal.Stopped(r) {
			if r.Status != string(engine.StatusCompleted) || len(r.Phases) != 2 {
				t.Fatalf("the session stopped %s with %d phases, want completed with 2: %+v", r.Status, len(r.Phases), r)
			}
			break
		}
		if err == nil && r.Step != "" && (len(steps) == 0 || steps[len(steps)-1] != r.Step) {
			steps = append(steps, r.Step)
		}
		if ctx.Err() != nil {
			t.Fatalf("the session did not stop; steps seen %v", steps)
		}
		time.Sleep(10 * time.Millisecond) // a follower's pace, faster
	}
	if !slices.Equal(steps, []string{"compile", "link", "unit"}) {
		t.Fatalf("steps seen while it ran: %v, want compile, link, unit", steps)
	}
	if n := counter.status.Load(); n != 0 {
		t.Fatalf("%d polls asked the worker %d status queries, want none", polls, n)
	}
	t.Logf("%d polls of Progress, 0 status queries", polls)
}

// followThroughTheWatch: FollowOutput of a watched session takes the
// watch's events: every step's output and end, once, and it returns
// when the session completes.
func followThroughTheWatch(t *testing.T, s *temporaltest.DevServer) {
	f, _ := startCountingFleet(t, s)
	id, _ := f.session(t, watchedPlan)
	f.client.Watch(id)
	out, done := f.follow(t, id)
	ended(t, done, out)
	text := out.String()
	for _, want := range []string{"compiled\n", "== step compile exited 0", "linked\n", "== step link exited 0", "tested\n", "== step unit exited 0"} {
		if n := strings.Count(text, want); n != 1 {
			t.Fatalf("%q written %d times, want once:\n%s", want, n, text)
		}
	}
}

// pausedReportAskedOnce: a session that paused reports the workflow's
// whole report (its pause reason); asked again and again, the worker is
// asked no more, the session having decided nothing since.
func pausedReportAskedOnce(t *testing.T, s *temporaltest.DevServer) {
	f, counter := startCountingFleet(t, s)
	id, _ := f.session(t, `version: 1
phases:
  - name: design
    steps:
      - run: 'echo "[CHECKPOINT] halfway"'
`)
	f.client.Watch(id)
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Failsafe)
	defer cancel()
	var r engine.StatusReport
	for {
		var err error
		if r, err = f.client.Progress(ctx, id); err == nil && temporal.Stopped(r) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the session did not pause: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r.Status != string(engine.StatusPaused) || r.PauseReason == "" || len(r.Phases) != 1 {
		t.Fatalf("want a paused report with its reason and phases, got %+v", r)
	}
	before := counter.status.Load()
	for range 20 {
		if _, err := f.client.Progress(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if after := counter.status.Load(); before == 0 || after != before {
		t.Fatalf("status queries: %d to see the pause, %d after 20 more polls; want some, then no more", before, after)
	}
}
