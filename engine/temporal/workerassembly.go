package temporal

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/pipeline-dev/pipeline/engine/store"
)

// workerDialTimeout bounds how long a worker waits for its server at the
// start, and for the search attribute to be registered there.
const workerDialTimeout = 30 * time.Second

// WorkerConfig is what a worker of the fleet (pipeline worker) serves
// with.
type WorkerConfig struct {
	// Target is the server, namespace and task queue it polls (with their
	// defaults filled in by the caller).
	Target Target
	// MaxParallel is the most steps it runs at once.
	MaxParallel int
	// StateDir is where it keeps the sessions' transcripts ("": beside
	// each session's phases.yaml).
	StateDir string
	// Grace is the time a stopped step gets to exit after SIGINT.
	Grace time.Duration
	// Log gets the SDK's lines (from info up), and Warn what goes wrong
	// but does not stop the worker (nil: dropped).
	Log  io.Writer
	Warn func(error)
}

// Worker is a worker of the fleet, polling; Stop stops it.
type Worker struct {
	client client.Client
	worker sdkworker.Worker
}

// StartWorker dials the fleet, registers the search attribute by which
// runs find the sessions of their pipeline, and starts a worker that runs
// the session and run-lease workflows and the steps' activities.
func StartWorker(ctx context.Context, cfg WorkerConfig) (*Worker, error) {
	c, err := dialWorker(ctx, cfg)
	if err != nil {
		return nil, err
	}
	lessWorkerGC()
	activities := &Activities{StateDir: cfg.StateDir, Grace: cfg.Grace,
		Fleet: &store.Fleet{Address: cfg.Target.Address, Namespace: cfg.Target.Namespace, TaskQueue: cfg.Target.TaskQueue}}
	// The heartbeat throttle is how soon a follower sees a step's output.
	w := sdkworker.New(c, cfg.Target.TaskQueue, WorkerOptions(activities, sdkworker.Options{
		MaxConcurrentActivityExecutionSize: cfg.MaxParallel,
		// A stopping worker stops its steps (Grace, then kill) and
		// reports their ends before it lets go.
		WorkerStopTimeout: cfg.Grace + 10*time.Second,
	}))
	w.RegisterWorkflowWithOptions(SessionWorkflow, workflow.RegisterOptions{Name: WorkflowType})
	w.RegisterWorkflowWithOptions(RunLeaseWorkflow, workflow.RegisterOptions{Name: RunLeaseType})
	w.RegisterActivity(activities)
	if err := w.Start(); err != nil {
		c.Close()
		return nil, fmt.Errorf("the worker cannot start: %w", err)
	}
	return &Worker{client: c, worker: w}, nil
}

// workerGC is a worker's GOGC (unless GOGC is set). Its live heap is
// small (the sessions in its cache, the steps running) and nearly all it
// allocates is the garbage of each task (the server's answers, the
// commands, the step's output): at the default 100 the collector took
// an eighth of a worker's CPU on a fleet of short pipelines. It costs a
// few tens of MB more; run --backend temporal has the same (clientGC).
const workerGC = 400

func lessWorkerGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(workerGC)
	}
}

// dialWorker connects to the fleet with a logger on cfg.Log, and
// registers the search attribute (a failure is cfg.Warn's).
func dialWorker(ctx context.Context, cfg WorkerConfig) (client.Client, error) {
	logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(cfg.Log, &slog.HandlerOptions{Level: slog.LevelInfo})))
	ctx, cancel := context.WithTimeout(ctx, workerDialTimeout)
	defer cancel()
	c, err := Dial(ctx, cfg.Target, logger)
	if err != nil {
		return nil, err
	}
	if err := RegisterKeyAttribute(ctx, c, cfg.Target.Namespace); err != nil && cfg.Warn != nil {
		cfg.Warn(err)
	}
	return c, nil
}

// Stop stops the worker's steps (each gets Grace, then is killed), waits
// for their ends to be reported, and closes its connection.
func (w *Worker) Stop() {
	w.worker.Stop()
	w.client.Close()
}
