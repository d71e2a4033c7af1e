//go:build temporal

package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/temporal"
)

// workerOptions are worker's flags.
type workerOptions struct {
	target      temporal.Target
	maxParallel int
	stateDir    string
	grace       time.Duration
}

func workerCommand() *cobra.Command {
	o := &workerOptions{}
	cmd := newCommand(&cobra.Command{
		Use:     "worker",
		Short:   workerShort,
		Long:    helpText("worker"),
		Example: helpText("worker.example"),
		Args:    cobra.NoArgs,
	}, o.run)
	cmd.Flags().StringVar(&o.target.Address, "temporal", "", "the Temporal frontend, HOST:PORT (default $PIPELINE_TEMPORAL, else "+temporal.DefaultAddress+")")
	cmd.Flags().StringVar(&o.target.Namespace, "namespace", "", "the Temporal namespace (default $PIPELINE_TEMPORAL_NAMESPACE, else "+temporal.DefaultNamespace+")")
	cmd.Flags().StringVar(&o.target.TaskQueue, "task-queue", "", "the task queue to poll (default $PIPELINE_TEMPORAL_TASK_QUEUE, else "+temporal.DefaultTaskQueue+")")
	cmd.Flags().IntVar(&o.maxParallel, "max-parallel", 0, "most steps this worker runs at once (default: the number of cores)")
	cmd.Flags().StringVar(&o.stateDir, "state-dir", "", "where this worker keeps the sessions' transcripts (default: .pipeline beside each session's phases.yaml)")
	cmd.Flags().DurationVar(&o.grace, "grace", 5*time.Second, "time a stopped step gets to exit after SIGINT before it is killed")
	return cmd
}

func (o *workerOptions) run(cmd *cobra.Command, _ []string) error {
	if o.maxParallel < 0 {
		return usagef("--max-parallel %d is negative: give how many steps this worker may run at once", o.maxParallel)
	}
	if o.maxParallel == 0 {
		o.maxParallel = runtime.NumCPU()
	}
	if o.grace < 0 {
		return usagef("--grace %s is negative: give the time a stopped step gets before it is killed, 0 to kill it at once", o.grace)
	}
	o.target = app.FleetTarget(o.target, spec.Backend{})
	var err error
	if o.stateDir != "" {
		if o.stateDir, err = filepath.Abs(o.stateDir); err != nil {
			return err
		}
	}
	w, err := temporal.StartWorker(cmd.Context(), temporal.WorkerConfig{Target: o.target, MaxParallel: o.maxParallel,
		StateDir: o.stateDir, Grace: o.grace, Log: cmd.ErrOrStderr(),
		Warn: func(err error) { fmt.Fprintf(cmd.ErrOrStderr(), "pipeline worker: %v\n", err) }})
	if err != nil {
		return err
	}
	where := "the session store beside each session's phases.yaml (.pipeline)"
	if o.stateDir != "" {
		where = o.stateDir
	}
	host, _ := os.Hostname()
	fmt.Fprintf(cmd.ErrOrStderr(), "pipeline worker %s/%d: serving namespace %s, task queue %s at %s; up to %d steps at once, each run in the folder of its session's phases.yaml; transcripts in %s (Ctrl+C or SIGTERM stops it)\n",
		host, os.Getpid(), o.target.Namespace, o.target.TaskQueue, o.target.Address, o.maxParallel, where)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(stop)
	got := <-stop
	fmt.Fprintf(cmd.ErrOrStderr(), "pipeline worker: %s: stopping; the steps running here stop and their sessions pause (worker-stopped)\n", got)
	w.Stop()
	fmt.Fprintln(cmd.ErrOrStderr(), "pipeline worker: stopped")
	return nil
}
