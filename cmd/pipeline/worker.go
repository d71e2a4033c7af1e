//go:build temporal

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/pipeline-dev/pipeline/engine/temporal"
)

func workerCommand() *cobra.Command {
	var (
		target      temporal.Target
		maxParallel int
		stateDir    string
		grace       time.Duration
	)
	cmd := newCommand(&cobra.Command{
		Use:   "worker",
		Short: "Run the sessions' steps of a Temporal fleet",
		Long: `Run a worker of the Temporal backend: it polls the task queue for the
sessions' workflows (SessionWorkflow: the same decisions as a local run)
and their steps (the RunStep and Compact activities), and runs the steps
here, as a local run would, in the folder of the session's phases.yaml as
the client that started the session named it: that folder must be here
too (a checkout at the same path, or a shared volume). Transcripts and
prompts go to the session store beside that phases.yaml, or under
--state-dir; pipeline logs --backend temporal finds them, or names the
worker and folder that hold them.

--max-parallel bounds the steps this worker runs at once (default: the
number of cores). SIGINT or SIGTERM stops the worker gracefully: it takes
no new step, and the steps it runs are stopped as Ctrl+C stops a local
one (interrupt, --grace, kill); their sessions pause with the reason
worker-stopped, and pipeline resume --backend temporal runs the step
again on a worker.

The address is --temporal, else $PIPELINE_TEMPORAL, else 127.0.0.1:7233;
the namespace and the task queue, --namespace and --task-queue, else
$PIPELINE_TEMPORAL_NAMESPACE and $PIPELINE_TEMPORAL_TASK_QUEUE, else
default and pipeline.`,
		Example: `  pipeline worker --temporal 127.0.0.1:7233
  pipeline worker --temporal temporal.internal:7233 --namespace ci --task-queue pipeline --max-parallel 4`,
		Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string) error {
		if maxParallel < 0 {
			return usagef("--max-parallel %d is negative: give how many steps this worker may run at once", maxParallel)
		}
		if maxParallel == 0 {
			maxParallel = runtime.NumCPU()
		}
		if grace < 0 {
			return usagef("--grace %s is negative: give the time a stopped step gets before it is killed, 0 to kill it at once", grace)
		}
		target = targetFromEnv(target)
		if stateDir != "" {
			abs, err := filepath.Abs(stateDir)
			if err != nil {
				return err
			}
			stateDir = abs
		}
		logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo})))
		ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
		c, err := temporal.Dial(ctx, target, logger)
		cancel()
		if err != nil {
			return err
		}
		defer c.Close()
		w := worker.New(c, target.TaskQueue, worker.Options{
			MaxConcurrentActivityExecutionSize: maxParallel,
			// A stopping worker stops its steps (grace, then kill) and
			// reports their ends before it lets go.
			WorkerStopTimeout: grace + 10*time.Second,
		})
		w.RegisterWorkflowWithOptions(temporal.SessionWorkflow, workflow.RegisterOptions{Name: temporal.WorkflowType})
		w.RegisterActivity(&temporal.Activities{StateDir: stateDir, Grace: grace})
		if err := w.Start(); err != nil {
			return fmt.Errorf("the worker cannot start: %w", err)
		}
		where := "the session store beside each session's phases.yaml (.pipeline)"
		if stateDir != "" {
			where = stateDir
		}
		host, _ := os.Hostname()
		fmt.Fprintf(cmd.ErrOrStderr(), "pipeline worker %s/%d: serving namespace %s, task queue %s at %s; up to %d steps at once, each run in the folder of its session's phases.yaml; transcripts in %s (Ctrl+C or SIGTERM stops it)\n",
			host, os.Getpid(), target.Namespace, target.TaskQueue, target.Address, maxParallel, where)
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(stop)
		got := <-stop
		fmt.Fprintf(cmd.ErrOrStderr(), "pipeline worker: %s: stopping; the steps running here stop and their sessions pause (worker-stopped)\n", got)
		w.Stop()
		fmt.Fprintln(cmd.ErrOrStderr(), "pipeline worker: stopped")
		return nil
	})
	cmd.Flags().StringVar(&target.Address, "temporal", "", "the Temporal frontend, HOST:PORT (default $PIPELINE_TEMPORAL, else "+temporal.DefaultAddress+")")
	cmd.Flags().StringVar(&target.Namespace, "namespace", "", "the Temporal namespace (default $PIPELINE_TEMPORAL_NAMESPACE, else "+temporal.DefaultNamespace+")")
	cmd.Flags().StringVar(&target.TaskQueue, "task-queue", "", "the task queue to poll (default $PIPELINE_TEMPORAL_TASK_QUEUE, else "+temporal.DefaultTaskQueue+")")
	cmd.Flags().IntVar(&maxParallel, "max-parallel", 0, "most steps this worker runs at once (default: the number of cores)")
	cmd.Flags().StringVar(&stateDir, "state-dir", "", "where this worker keeps the sessions' transcripts (default: .pipeline beside each session's phases.yaml)")
	cmd.Flags().DurationVar(&grace, "grace", 5*time.Second, "time a stopped step gets to exit after SIGINT before it is killed")
	return cmd
}

// targetFromEnv fills what the flags left empty from the environment,
// then the defaults.
func targetFromEnv(t temporal.Target) temporal.Target {
	for _, f := range []struct {
		v   *string
		env string
	}{{&t.Address, "PIPELINE_TEMPORAL"}, {&t.Namespace, "PIPELINE_TEMPORAL_NAMESPACE"}, {&t.TaskQueue, "PIPELINE_TEMPORAL_TASK_QUEUE"}} {
		if *f.v == "" {
			*f.v = os.Getenv(f.env)
		}
	}
	return t.WithDefaults()
}
