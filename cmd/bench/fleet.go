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
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pipeline-dev/pipeline/internal/temporaltest"
)

var (
	fleetOnly      = flag.Bool("fleet", false, "measure only the Temporal fleet: -fleet-pipelines short pipelines at once on a dev server and two workers, against the local engine -fleet-local at a time")
	fleetPipelines = flag.Int("fleet-pipelines", 100, "pipelines for the fleet figures")
	fleetLocal     = flag.Int("fleet-local", 8, "local pipeline run processes at once, for the comparison")
	fleetWorkersN  = flag.Int("fleet-workers", 2, "pipeline worker processes")
	fleetParallel  = flag.Int("fleet-parallel", 0, "each worker's --max-parallel (0: its default, the number of cores)")
	fleetServer    = flag.String("fleet-server-flags", "", "more flags for the dev server's start-dev, space-separated")
	fleetAgainst   = flag.String("fleet-against", "", "another pipeline build (its pipeline-temporal beside it) whose fleet is measured in turns with this one's")
	fleetRounds    = flag.Int("fleet-rounds", 1, "rounds of the fleet figures (each build once a round, in turns)")
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
	start time.Time
	took  time.Duration
	cpu   time.Duration // user and system, the process's and its children's
	err   error
	out   string
}

// metricsLag is how long the bench lets the dev server's metrics catch
// up with the calls it answered.
const metricsLag = 3 * time.Second

// fleetRun is one measure of the fleet: a dev server of its own, the
// workers and every pipeline run of one build.
type fleetRun struct {
	build    string
	runs     []pipelineRun
	wall     time.Duration
	hist     historyFigures
	cpu      [2]time.Duration // dev server, workers
	peaks    []string
	peakSrv  string
	loadWhen string
	requests string // the server's requests per pipeline, by operation
	kept     string // where the logs of its stalls are kept (keepStalls)
}

// temporalCLIPath is the temporal CLI whose dev server the figures start.
func temporalCLIPath() string {
	if *temporalCLI != "" {
		return *temporalCLI
	}
	if cli := os.Getenv(temporaltest.EnvCLI); cli != "" {
		return cli
	}
	return filepath.Join(".cache", "bin", "temporal-1.5.1", "temporal")
}

func fleetFigures(pipeline, work string) {
	cli, n := temporalCLIPath(), *fleetPipelines
	fmt.Printf("pipeline bench -fleet: %s, %d cores, files in %s\n", pipeline, numCPU(), work)
	fmt.Printf("%d pipelines, each 3 run: steps of ~5 ms in 2 phases, a folder each\n", n)
	if *fleetServer != "" {
		fmt.Printf("dev server flags: %s\n", *fleetServer)
	}
	loadLine("before")
	fmt.Println()

	// The local engine, -fleet-local pipeline run processes at once.
	local := make([]string, n)
	for i := range local {
		local[i] = project(work, fmt.Sprintf("local-%03d", i), fleetYAML(i))
	}
	localRuns, localWall := runAll(local, *fleetLocal, pipeline, "run")
	loadLine("after the local runs")

	// The fleet, in turns with the build of -fleet-against when given.
	builds := []string{pipeline}
	if *fleetAgainst != "" {
		against, err := filepath.Abs(*fleetAgainst)
		check(err)
		builds = []string{against, pipeline}
	}
	var rounds []fleetRun
	for round := range *fleetRounds {
		for b, build := range builds {
			r := fleetRound(cli, build, filepath.Join(work, fmt.Sprintf("fleet-%d-%d", round, b)), n)
			rounds = append(rounds, r)
		}
	}

	fmt.Printf("\n%-58s %9s %9s %9s %9s  %s\n", "", "pipes/s", "p50", "p99", "max", "load average after")
	fleetRow(fmt.Sprintf("local: pipeline run, %d at a time", *fleetLocal), durations(localRuns), localWall, loadAverage())
	for _, r := range rounds {
		fleetRow(fmt.Sprintf("fleet %s: %d at once, %d workers", r.build, n, *fleetWorkersN), durations(r.runs), r.wall, r.loadWhen)
		if len(r.hist.workflows) > 0 {
			fleetRow("  of which the workflow, start to close (server)", r.hist.workflows, 0, "")
		}
	}
	for _, r := range rounds {
		r.print()
	}
	fmt.Println("\nrun --backend temporal follows its session from its history, which the server pushes (long polls, a gap apart): its headline in a marker (in the memo before), its steps' ends and output; the status query only once it stopped, its report from the history once it closed.")
	failed := failures(localRuns)
	for _, r := range rounds {
		failed = append(failed, failures(r.runs)...)
	}
	if len(failed) > 0 {
		fmt.Fprintf(os.Stderr, "bench: %d pipelines did not complete; the first:\n%s\n", len(failed), failed[0])
		os.Exit(1)
	}
}

// fleetRow prints one line of figures: the pipelines' rate over wall (none
// when wall is 0), and their times' p50, p99 and max.
func fleetRow(label string, d []time.Duration, wall time.Duration, load string) {
	s := sorted(d)
	rate := "-"
	if wall > 0 {
		rate = fmt.Sprintf("%.1f", float64(len(d))/wall.Seconds())
	}
	fmt.Printf("%-58s %9s %9s %9s %9s  %s\n", label, rate, ms(pct(s, 50)), ms(pct(s, 99)), ms(s[len(s)-1]), load)
}

// fleetRound measures the fleet of one build: its dev server, its
// workers, and n pipeline runs at once, in folders under dir.
func fleetRound(cli, pipeline, dir string, n int) fleetRun {
	metrics := freeLocalPort()
	server, err := temporaltest.StartCLI(cli, mkdir(dir), append(strings.Fields(*fleetServer), "--metrics-port", strconv.Itoa(metrics))...)
	check(err)
	defer server.Stop()
	queue := "bench"
	var workers []*worker
	for i := range *fleetWorkersN {
		w, err := startWorker(pipeline, server.HostPort(), queue, filepath.Join(dir, fmt.Sprintf("worker-%d.log", i)))
		check(err)
		workers = append(workers, w)
	}
	fleet := make([]string, n)
	for i := range fleet {
		fleet[i] = project(dir, fmt.Sprintf("p-%03d", i), fleetYAML(i))
	}
	r := fleetRun{build: pipeline}
	before, requests := fleetCPU(server, workers), frontendRequests(metrics)
	r.runs, r.wall = runAll(fleet, n, pipeline, "run", "--backend", "temporal", "--temporal", server.HostPort(), "--task-queue", queue)
	after := fleetCPU(server, workers)
	// The server's metrics reach its /metrics a moment after the calls
	// (its scope reports them every second).
	time.Sleep(metricsLag)
	r.requests = requestsLine(requests, frontendRequests(metrics), n)
	r.loadWhen = loadAverage()
	r.cpu = [2]time.Duration{after[0] - before[0], after[1] - before[1]}
	r.hist = workflowTimes(server.HostPort(), r.runs)
	for _, w := range workers {
		r.peaks = append(r.peaks, vmHWM(w.pid()))
	}
	r.peakSrv = vmHWM(server.PID())
	for _, w := range workers {
		w.stop()
	}
	r.kept = keepStalls(dir, r.hist, server.Output())
	return r
}

func mkdir(dir string) string {
	check(os.MkdirAll(dir, 0o755))
	return dir
}

// print prints the round's parts, CPU time and memory.
func (r fleetRun) print() {
	fmt.Printf("\nfleet %s (wall %v, load average after: %s)\n", r.build, r.wall.Round(time.Millisecond), r.loadWhen)
	if counts := r.hist.countsLine(); counts != "" {
		fmt.Printf("per pipeline (median of its history): %s\n", counts)
	}
	fmt.Println(r.hist.stallLine())
	if r.kept != "" {
		fmt.Printf("the workers' logs and the stalled sessions' histories are kept in %s\n", r.kept)
	}
	r.hist.printParts(r.runs)
	if r.requests != "" {
		fmt.Printf("requests to the server per pipeline: %s\n", r.requests)
	}
	var clients time.Duration
	for _, p := range r.runs {
		clients += p.cpu
	}
	fmt.Printf("CPU time (%d cores): dev server %v, workers %v, the %d pipeline run processes %v; per pipeline %v in all\n",
		numCPU(), r.cpu[0].Round(time.Millisecond), r.cpu[1].Round(time.Millisecond), len(r.runs), clients.Round(time.Millisecond),
		((r.cpu[0] + r.cpu[1] + clients) / time.Duration(max(1, len(r.runs)))).Round(100*time.Microsecond))
	fmt.Printf("peak memory (VmHWM): workers %s; dev server %s\n", strings.Join(r.peaks, ", "), r.peakSrv)
}

// fleetCPU is the CPU time the dev server and the workers have used so
// far.
func fleetCPU(server *temporaltest.DevServer, workers []*worker) [2]time.Duration {
	out := [2]time.Duration{cpuTime(server.PID())}
	for _, w := range workers {
		out[1] += cpuTime(w.pid())
	}
	return out
}

// project writes phases.yaml in a new folder of work.
func project(work, name, yaml string) string {
	dir := filepath.Join(work, name)
	check(os.MkdirAll(dir, 0o755))
	check(os.WriteFile(filepath.Join(dir, "phases.yaml"), []byte(yaml), 0o644))
	return dir
}

// runLimit is the longest a pipeline of the bench may run: a dev server
// that wedged (its SQLite store failing every call, as one did at load 8)
// would hold its pipelines, and the bench, for ever; killed, they are
// failures the bench reports.
const runLimit = 5 * time.Minute

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
				ctx, cancel := context.WithTimeout(context.Background(), runLimit)
				cmd := exec.CommandContext(ctx, pipeline, args...)
				cmd.Dir = dirs[i]
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				start := time.Now()
				err := cmd.Run()
				cancel()
				runs[i] = pipelineRun{start: start, took: time.Since(start), err: err, out: out.String()}
				if st := cmd.ProcessState; st != nil {
					runs[i].cpu = st.UserTime() + st.SystemTime()
				}
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
// serves the queue; what it prints goes to logFile too.
func startWorker(pipeline, address, queue, logFile string) (*worker, error) {
	args := []string{"worker", "--temporal", address, "--task-queue", queue, "--grace", "1s"}
	if *fleetParallel > 0 {
		args = append(args, "--max-parallel", fmt.Sprint(*fleetParallel))
	}
	cmd := exec.Command(pipeline, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	said := &sayWatch{want: []byte("serving namespace"), seen: make(chan struct{})}
	log, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = io.MultiWriter(said, log)
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		log.Close()
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
