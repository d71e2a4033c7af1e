// Command bench measures pipeline against the same work without it, side
// by side in one run, in turns so that the load weighs on each alike, and
// prints each figure with its peer's and the machine's load average: a
// figure in the README is one this command prints.
//
// Without a mode flag it measures:
//
//  1. throughput: 1 GB of 100-byte lines from a step, through pipeline run
//     (shown, kept in the transcript, five live triggers) against
//     PRODUCER | tee FILE >/dev/null; and the peak memory at two sizes;
//  2. latency from an agent writing [CHECKPOINT] to its process group
//     receiving the interrupt, p50, p90 and p99, beside bare monitors
//     (checkpoint.go; -checkpoint measures it alone).
//
// With -startup it measures start-up alone (startup.go): pipeline
// --version beside a binary of cobra alone, and pipeline run of one
// true step beside /bin/true, p50 and p90, with the load average. With
// -watch it measures pipeline watch alone (watch.go): a spec written
// to the resumed step started, beside go-task's task --watch, and the
// watcher's idle cost. With -search, pipeline search alone (search.go):
// indexing 1 GB of transcripts, and queries over that index, beside grep
// -r. With -fleet, the Temporal backend alone (fleet.go): 100 short
// pipelines at once on a dev server and two workers, against the local
// engine 8 at a time. Each mode lives in a file of its own, with its
// flags; main dispatches on its one flag.
//
// Every figure is printed with a "load average" line (loadLine) beside
// it, taken when it was measured: a figure taken under load says so.
//
// Run it with make bench, or go run ./cmd/bench -h for its flags.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	started := time.Now() // for -stamp: the step's start, as early as main can read it
	var (
		produce    = flag.Int64("produce", 0, "internal: write this many bytes of 100-byte lines to stdout")
		checkpoint = flag.String("checkpoint-child", "", "internal: print [CHECKPOINT], report the time to SIGINT into this file")
		size       = flag.Int64("bytes", 1<<30, "bytes of output for the throughput figure")
		latencyN   = flag.Int("latency-runs", 200, "runs for the checkpoint latency figure")
		startupN   = flag.Int("startup-runs", 200, "runs for the start-up figure")
		binary     = flag.String("pipeline", "bin/pipeline", "the pipeline binary to measure")
		dirFlag    = flag.String("dir", "", "where the files go (default: /dev/shm when the machine has it, else the temp folder)")
	)
	flag.BoolVar(&toPipe, "pipe", false, "send the shown output to a pipe the bench drains, not to /dev/null")
	flag.Parse()
	switch {
	case *produce > 0:
		produceLines(*produce)
		return
	case *checkpoint != "":
		checkpointChild(*checkpoint)
		return
	case *stampFIFO != "":
		stampChild(*stampFIFO, started)
		return
	case *bareMonitor:
		runBareMonitor(flag.Args())
		return
	}
	self, err := os.Executable()
	check(err)
	pipeline, err := filepath.Abs(*binary)
	check(err)
	// Files go to memory when the machine has /dev/shm, so that the disk's
	// write-back does not decide the throughput figures.
	tmp := *dirFlag
	if info, err := os.Stat("/dev/shm"); tmp == "" && err == nil && info.IsDir() {
		tmp = "/dev/shm"
	}
	if tmp == "" {
		tmp = os.TempDir()
	}
	recentRemoval(tmp)
	work, err := os.MkdirTemp(tmp, "pipeline-bench-")
	check(err)
	defer removeWork(tmp, work)
	// One mode a run: each is a file of its own (its flags, its figures,
	// a loadLine before and after each figure), called from one if here.
	if *watchOnly {
		watchFigures(pipeline, self, work)
		return
	}
	if *contextOnly {
		contextFigures(pipeline, work)
		return
	}
	if *statusOnly {
		statusFigures(pipeline, againstBinary(), work, *statusRuns)
		return
	}
	if *sessionsOnly {
		sessionsFigures(pipeline, againstBinary(), work, *sessionsCount, *statusRuns)
		return
	}
	if *fleetOnly {
		fleetFigures(pipeline, work)
		return
	}
	if *uiOnly {
		uiFigures(pipeline, work)
		return
	}
	if *searchOnly {
		searchFigures(pipeline, work, *searchBytes, *searchQueries)
		return
	}
	if *searchIndexOnly {
		searchIndexFigures(pipeline, absOrEmpty(*searchIndexAgainst), work, *searchBytes, *searchIndexRounds)
		return
	}
	if *telemetryOnly {
		telemetryFigures(pipeline, self, work, *startupN)
		return
	}
	if *throughputAgainst != "" {
		throughputAgainstFigures(pipeline, absOrEmpty(*throughputAgainst), self, work, *size, *throughputRounds)
		return
	}
	if *checkpointOnly {
		checkpointFigures(pipeline, absOrEmpty(*checkpointAt), self, work, *latencyN)
		return
	}
	if *threadsOnly {
		threadsFigures(pipeline, againstBinary(), work, *startupN)
		return
	}
	if *switchesOnly {
		switchesFigures(pipeline, againstBinary(), work, *startupN)
		return
	}
	if *runStoreOnly {
		runStoreFigures(pipeline, againstBinary(), work, *startupN, *runStoreSessions)
		return
	}
	if *exitCostOnly {
		exitCostFigures(pipeline, work, *startupN)
		return
	}
	if *inodesOnly {
		inodesFigures(pipeline, absOrEmpty(*startupAgainst), work, *startupN)
		return
	}
	if *startupOnly {
		against := *startupAgainst
		if against != "" {
			against, err = filepath.Abs(against)
			check(err)
		}
		startupFigures(pipeline, against, work, *startupN)
		return
	}
	where := "/dev/null"
	if toPipe {
		where = "a pipe"
	}
	fmt.Printf("pipeline bench: %s, %d cores, files in %s, output to %s\n\n", pipeline, numCPU(), work, where)
	throughput(pipeline, self, work, *size)
	checkpointFigures(pipeline, absOrEmpty(*checkpointAt), self, work, *latencyN)
}

// loadLine prints the line that goes with every figure: the machine's
// load average before or after (when) it was measured.
func loadLine(when string) { fmt.Printf("   load average %s: %s\n", when, loadAverage()) }

// absOrEmpty is path made absolute, or "" for "".
func absOrEmpty(path string) string {
	if path == "" {
		return ""
	}
	abs, err := filepath.Abs(path)
	check(err)
	return abs
}

// toPipe sends the shown output to a pipe that the bench drains, as a CI
// runner or | less would, rather than to /dev/null.
var toPipe bool

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func numCPU() int {
	out, err := exec.Command("nproc").Output()
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return n
}

// produceLines writes n bytes of 100-byte log lines, fast.
func produceLines(n int64) {
	line := []byte("2026-11-25T09:00:00.000Z INFO worker=7 request served path=/api/v1/items status=200 took=3ms ok")
	for len(line) < 99 {
		line = append(line, '.')
	}
	line = append(line, '\n')
	buf := make([]byte, 0, 1<<20)
	for len(buf)+len(line) <= cap(buf) {
		buf = append(buf, line...)
	}
	w := os.Stdout
	for n > 0 {
		chunk := buf[:min(int64(len(buf)), n)]
		if _, err := w.Write(chunk); err != nil {
			os.Exit(1)
		}
		n -= int64(len(chunk))
	}
}

// timed runs cmd and returns its wall time and its children's peak RSS.
func timed(cmd *exec.Cmd) (time.Duration, int64, error) {
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start)
	var rss int64
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = ru.Maxrss * 1024
		}
	}
	return elapsed, rss, err
}

const throughputYAML = `version: 1
agent: {kind: command, command: [%q, -produce, "%d"]}
defaults:
  pause_when:
    tokens: tokens > 1000000000000
    time: elapsed > duration("1h")
    checkpoint: checkpoint
    failure: exit_code != 0
    budget: cost_usd > 1000
  retry: {when: "false"}
phases: [{name: flood}]
`

func throughput(pipeline, self, work string, size int64) {
	fmt.Printf("1. throughput: %s of 100-byte lines, pipeline run beside tee, in turns\n", human(size))
	loadLine("before")
	dir := filepath.Join(work, "throughput")
	check(os.MkdirAll(dir, 0o755))
	var teeBest, pipeBest time.Duration
	var pipeRSS int64
	for round := 0; round < 3; round++ {
		sink := ">/dev/null"
		if toPipe {
			sink = "| cat >/dev/null"
		}
		tee := exec.Command("sh", "-c", fmt.Sprintf("%q -produce %d | tee %q %s", self, size, filepath.Join(dir, "tee.out"), sink))
		d, _, err := timed(tee)
		check(err)
		if teeBest == 0 || d < teeBest {
			teeBest = d
		}
		os.Remove(filepath.Join(dir, "tee.out"))
		d, rss := runFlood(pipeline, self, dir, size)
		if pipeBest == 0 || d < pipeBest {
			pipeBest = d
		}
		pipeRSS = max(pipeRSS, rss)
	}
	teeRate, pipeRate := float64(size)/teeBest.Seconds(), float64(size)/pipeBest.Seconds()
	fmt.Printf("   PRODUCER | tee FILE (shown)     %8.1f MB/s  (%v, best of 3)\n", teeRate/1e6, teeBest.Round(time.Millisecond))
	fmt.Printf("   pipeline run (5 live triggers)  %8.1f MB/s  (%v, best of 3)\n", pipeRate/1e6, pipeBest.Round(time.Millisecond))
	fmt.Printf("   ratio                           %8.1f %%  of tee (target: at least 90 %%)\n", 100*pipeRate/teeRate)
	_, smallRSS := runFlood(pipeline, self, dir, size/8)
	fmt.Printf("   peak memory of pipeline run     %8s for %s, %s for %s (flat: target)\n",
		human(smallRSS), human(size/8), human(pipeRSS), human(size))
	loadLine("after")
	fmt.Println()
}

// runFlood runs one pipeline whose step prints size bytes, output shown
// (to /dev/null) and kept in the transcript.
func runFlood(pipeline, self, dir string, size int64) (time.Duration, int64) {
	d, rss, err := timed(floodCommand(pipeline, self, dir, size))
	check(err)
	checkFloodTranscript(pipeline, dir, size)
	return d, rss
}

// floodCommand is pipeline run of a phases.yaml in dir whose one step
// prints size bytes, in a store made anew.
func floodCommand(pipeline, self, dir string, size int64) *exec.Cmd {
	file := filepath.Join(dir, "phases.yaml")
	check(os.WriteFile(file, []byte(fmt.Sprintf(throughputYAML, self, size)), 0o644))
	os.RemoveAll(filepath.Join(dir, ".pipeline"))
	cmd := exec.Command(pipeline, "run", file)
	cmd.Env = append(os.Environ(), "CI=true")
	if toPipe {
		cmd.Stdout = pipeSink{}
	}
	return cmd
}

// checkFloodTranscript stops the bench unless the flood's transcript
// holds all size bytes.
func checkFloodTranscript(pipeline, dir string, size int64) {
	transcripts, _ := filepath.Glob(filepath.Join(dir, ".pipeline", "sessions", "*", "transcripts", "flood", "1-agent.log"))
	if len(transcripts) != 1 {
		check(fmt.Errorf("%s: no transcript of the flood", pipeline))
	}
	info, err := os.Stat(transcripts[0])
	check(err)
	if info.Size() != size {
		check(fmt.Errorf("%s: the transcript holds %d bytes, not %d", pipeline, info.Size(), size))
	}
}

func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	return sorted[min(max(i-1, 0), len(sorted)-1)].Round(time.Microsecond)
}

func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", n>>10)
}
