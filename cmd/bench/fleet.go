package main

// -fleet: many short pipelines on a Temporal fleet (a dev server and two
// pipeline worker processes on this machine), end to end from pipeline
// run to its exit, against the same pipelines run by the local engine a
// few at a time.

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/pipeline-dev/pipeline/engine/temporal"
	"github.com/pipeline-dev/pipeline/internal/temporaltest"
)

var (
	fleetOnly      = flag.Bool("fleet", false, "measure only the Temporal fleet: -fleet-pipelines short pipelines at once on a dev server and two workers, against the local engine -fleet-local at a time")
	fleetPipelines = flag.Int("fleet-pipelines", 100, "pipelines for the fleet figures")
	fleetLocal     = flag.Int("fleet-local", 8, "local pipeline run processes at once, for the comparison")
	fleetWorkersN  = flag.Int("fleet-workers", 2, "pipeline worker processes")
	fleetParallel  = flag.Int("fleet-parallel", 0, "each worker's --max-parallel (0: its default, the number of cores)")
	temporalCLI    = flag.String("temporal-cli", "", "the temporal CLI whose dev server the fleet figures start (default $PIPELINE_TEMPORAL_CLI, else .cache/bin/temporal-1.5.1/temporal)")
)

// fleetYAML is one short pipeline: three run: steps of a few ms in two
// phases. Each pipeline has a folder of its own, so each is its own
// (pipeline, spec) and none waits for another's lock.
func fleetYAML(i int) string {
	return fmt.Sprintf(`version: 1
phases:
  - name: build
    steps:
      - {name: compile, run: "sleep 0.005; echo compiled %[1]d"}
      - {name: link, run: "sleep 0.005; echo linked %[1]d"}
  - name: test
    steps: [{name: unit, run: "sleep 0.005; echo tested %[1]d"}]
`, i)
}

// pipelineRun is one pipeline's run: its wall time, from the exec of
// pipeline run to its exit.
type pipelineRun struct {
	took time.Duration
	err  error
	out  string
}

func fleetFigures(pipeline, work string) {
	cli := *temporalCLI
	if cli == "" {
		cli = os.Getenv(temporaltest.EnvCLI)
	}
	if cli == "" {
		cli = filepath.Join(".cache", "bin", "temporal-1.5.1", "temporal")
	}
	n := *fleetPipelines
	fmt.Printf("pipeline bench -fleet: %s, %d cores, files in %s\n", pipeline, numCPU(), work)
	fmt.Printf("%d pipelines, each 3 run: steps of ~5 ms in 2 phases, a folder each\n\n", n)

	// The local engine, -fleet-local pipeline run processes at once.
	local := make([]string, n)
	for i := range local {
		local[i] = project(work, fmt.Sprintf("local-%03d", i), fleetYAML(i))
	}
	localRuns, localWall := runAll(local, *fleetLocal, pipeline, "run")

	// The fleet: a dev server, workers, every run at once.
	server, err := temporaltest.StartCLI(cli, work)
	check(err)
	defer server.Stop()
	fmt.Printf("temporal dev server %s on %s, ready in %v\n", cli, server.HostPort(), server.StartTime().Round(time.Millisecond))
	queue := "bench"
	var workers []*worker
	for range *fleetWorkersN {
		w, err := startWorker(pipeline, server.HostPort(), queue)
		check(err)
		workers = append(workers, w)
	}
	fleet := make([]string, n)
	for i := range fleet {
		fleet[i] = project(work, fmt.Sprintf("fleet-%03d", i), fleetYAML(i))
	}
	fleetRuns, fleetWall := runAll(fleet, n, pipeline, "run", "--backend", "temporal", "--temporal", server.HostPort(), "--task-queue", queue)
	workflows, parts := workflowTimes(server.HostPort(), fleetRuns)
	var peaks []string
	for _, w := range workers {
		peaks = append(peaks, fmt.Sprintf("%s (pid %d)", vmHWM(w.pid()), w.pid()))
	}
	serverPeak := vmHWM(server.PID())
	for _, w := range workers {
		w.stop()
	}

	fmt.Printf("\n%-54s %9s %9s %9s %9s\n", "", "pipes/s", "p50", "p99", "max")
	row := func(label string, d []time.Duration, wall time.Duration) {
		s := sorted(d)
		rate := "-"
		if wall > 0 {
			rate = fmt.Sprintf("%.1f", float64(len(d))/wall.Seconds())
		}
		fmt.Printf("%-54s %9s %9s %9s %9s\n", label, rate, ms(pct(s, 50)), ms(pct(s, 99)), ms(s[len(s)-1]))
	}
	row(fmt.Sprintf("local: pipeline run, %d at a time", *fleetLocal), durations(localRuns), localWall)
	row(fmt.Sprintf("fleet: run --backend temporal, %d at once, %d workers", n, len(workers)), durations(fleetRuns), fleetWall)
	if len(workflows) > 0 {
		row("  of which the workflow, start to close (server)", workflows, 0)
	}
	fmt.Printf("\nwall: local %v, fleet %v (from the first exec to the last exit)\n", localWall.Round(time.Millisecond), fleetWall.Round(time.Millisecond))
	fmt.Printf("peak memory (VmHWM): workers %s; dev server %s\n", strings.Join(peaks, ", "), serverPeak)
	if parts != "" {
		fmt.Printf("per pipeline (median of its history): %s\n", parts)
	}
	fmt.Println("run --backend temporal follows its session from its history, which the server pushes (one long poll): its headline in the memo, its steps' ends and output; the status query only once it stopped.")
	if failed := append(failures(localRuns), failures(fleetRuns)...); len(failed) > 0 {
		fmt.Fprintf(os.Stderr, "bench: %d pipelines did not complete; the first:\n%s\n", len(failed), failed[0])
		os.Exit(1)
	}
}

// project writes phases.yaml in a new folder of work.
func project(work, name, yaml string) string {
	dir := filepath.Join(work, name)
	check(os.MkdirAll(dir, 0o755))
	check(os.WriteFile(filepath.Join(dir, "phases.yaml"), []byte(yaml), 0o644))
	return dir
}

// runAll runs pipeline args in each folder, parallel at a time, and
// returns each run and the wall time of all.
func runAll(dirs []string, parallel int, pipeline string, args ...string) ([]pipelineRun, time.Duration) {
	runs := make([]pipelineRun, len(dirs))
	next := make(chan int)
	var wg sync.WaitGroup
	begin := time.Now()
	for range min(parallel, len(dirs)) {
		wg.Go(func() {
			for i := range next {
				cmd := exec.Command(pipeline, args...)
				cmd.Dir = dirs[i]
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				start := time.Now()
				err := cmd.Run()
				runs[i] = pipelineRun{took: time.Since(start), err: err, out: out.String()}
			}
		})
	}
	for i := range dirs {
		next <- i
	}
	close(next)
	wg.Wait()
	return runs, time.Since(begin)
}

func durations(runs []pipelineRun) []time.Duration {
	var d []time.Duration
	for _, r := range runs {
		d = append(d, r.took)
	}
	return d
}

func failures(runs []pipelineRun) []string {
	var out []string
	for _, r := range runs {
		if r.err != nil {
			out = append(out, fmt.Sprintf("%v\n%s", r.err, r.out))
		}
	}
	return out
}

// startWorker starts a pipeline worker and returns once it says it
// serves the queue.
func startWorker(pipeline, address, queue string) (*worker, error) {
	args := []string{"worker", "--temporal", address, "--task-queue", queue, "--grace", "1s"}
	if *fleetParallel > 0 {
		args = append(args, "--max-parallel", fmt.Sprint(*fleetParallel))
	}
	cmd := exec.Command(pipeline, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	said := &sayWatch{want: []byte("serving namespace"), seen: make(chan struct{})}
	cmd.Stderr = said
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	select {
	case <-said.seen:
		return &worker{cmd: cmd, exited: exited}, nil
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
	return nil, fmt.Errorf("the worker did not start:\n%s", said.String())
}

// worker is a pipeline worker process.
type worker struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

func (w *worker) pid() int { return w.cmd.Process.Pid }

// stop stops the worker gracefully and waits for it.
func (w *worker) stop() {
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	<-w.exited
}

// sayWatch keeps what a process prints and closes seen once it has
// printed want.
type sayWatch struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want []byte
	seen chan struct{}
	said bool
}

func (s *sayWatch) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.buf.Len() < 1<<20 {
		s.buf.Write(p)
	}
	if !s.said && bytes.Contains(s.buf.Bytes(), s.want) {
		s.said = true
		close(s.seen)
	}
	return len(p), nil
}

func (s *sayWatch) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// workflowTimes asks the server how long each session's workflow took,
// start to close, and counts the parts of each one's history: its
// workflow tasks, activities, local activities and other markers, memo
// upserts, and events in all (the median of each).
func workflowTimes(address string, runs []pipelineRun) ([]time.Duration, string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := temporal.NewClient(ctx, temporal.Target{Address: address})
	if err != nil {
		return nil, ""
	}
	defer c.Close()
	var out []time.Duration
	var counts [5][]int
	for _, r := range runs {
		id := sessionOf(r.out)
		if id == "" {
			continue
		}
		d, err := c.C.DescribeWorkflow(ctx, id, "")
		if err != nil {
			continue
		}
		info := d.RawResponse.GetWorkflowExecutionInfo()
		if info.GetCloseTime() != nil {
			out = append(out, info.GetCloseTime().AsTime().Sub(info.GetStartTime().AsTime()))
		}
		if n, err := historyParts(ctx, c, id); err == nil {
			for i := range n {
				counts[i] = append(counts[i], n[i])
			}
		}
	}
	if len(counts[4]) == 0 {
		return out, ""
	}
	median := func(v []int) int { slices.Sort(v); return v[len(v)/2] }
	return out, fmt.Sprintf("%d workflow tasks, %d activities, %d markers (local activities, versions), %d memo upserts, %d events",
		median(counts[0]), median(counts[1]), median(counts[2]), median(counts[3]), median(counts[4]))
}

// historyParts counts the workflow tasks, activities, markers, memo
// upserts and events of session id's history.
func historyParts(ctx context.Context, c *temporal.Client, id string) ([5]int, error) {
	var n [5]int
	it := c.C.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return n, err
		}
		n[4]++
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			n[0]++
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			n[1]++
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			n[2]++
		case enumspb.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
			n[3]++
		}
	}
	return n, nil
}

// sessionOf finds the session id run printed as it started.
func sessionOf(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "session "); ok && strings.Contains(rest, " started on the Temporal fleet") {
			return strings.Fields(rest)[0]
		}
	}
	return ""
}

// vmHWM is the peak resident memory of process pid, from /proc.
func vmHWM(pid int) string {
	content, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(content), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return strings.TrimSpace(rest)
			}
			return mb(kb * 1024)
		}
	}
	return "?"
}
