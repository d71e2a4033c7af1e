package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var (
	checkpointOnly = flag.Bool("checkpoint", false, "measure only the checkpoint latency: [CHECKPOINT] written → SIGINT received, pipeline run beside bare monitors (python3 when present, and a Go one) in turns")
	checkpointAt   = flag.String("checkpoint-against", "", "another pipeline binary (an earlier build) measured in the same turns by the checkpoint latency figure, for a before and after")
	bareMonitor    = flag.Bool("bare-monitor", false, "internal: run the command after the flags, read its output line by line, and SIGINT its process group at the first [CHECKPOINT]")
	checkpointWork = flag.Duration("checkpoint-after", 50*time.Millisecond, "how long the checkpoint child works (prints a line, waits) before it prints [CHECKPOINT]: an agent prints it well after its start, once its runner has settled")
)

// checkpointChild prints a line, works for -checkpoint-after, prints the
// marker, and appends to report how long after its write the interrupt
// arrived.
func checkpointChild(report string) {
	interrupts := make(chan os.Signal, 1)
	signal.Notify(interrupts, syscall.SIGINT)
	out := bufio.NewWriter(os.Stdout)
	out.WriteString("working\n")
	out.Flush()
	time.Sleep(*checkpointWork)
	start := time.Now()
	os.Stdout.WriteString("[CHECKPOINT] measured\n")
	select {
	case <-interrupts:
		took := time.Since(start)
		f, err := os.OpenFile(report, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		check(err)
		fmt.Fprintln(f, took.Nanoseconds())
		f.Close()
	case <-time.After(10 * time.Second):
		os.Exit(1)
	}
}

// latencyYAML runs the checkpoint child as an agent step: the default
// pause_when triggers, the checkpoint's among them.
const latencyYAML = `version: 1
agent: {kind: command, command: [%q, -checkpoint-after, %q, -checkpoint-child, %q]}
phases: [{name: measure}]
`

// bareMonitorPython is the peer the issue names: the least a monitor can
// do, a blocking read of lines and a kill of the group on the marker.
const bareMonitorPython = `import os, signal, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, start_new_session=True)
for line in p.stdout:
    if b"[CHECKPOINT]" in line:
        os.killpg(p.pid, signal.SIGINT)
        break
p.stdout.close()
sys.exit(0 if p.wait() == 0 else 1)
`

// runBareMonitor is the same monitor in Go: bufio lines from the child's
// pipe, a kill of its group on the marker.
func runBareMonitor(args []string) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	check(err)
	check(cmd.Start())
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if bytes.Contains(lines.Bytes(), []byte("[CHECKPOINT]")) {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
			break
		}
	}
	out.Close()
	check(cmd.Wait())
}

// latencyPeer is one way of watching the step, measured in turns with the
// others: run starts one watched child, which appends its figure to report.
type latencyPeer struct {
	name    string
	report  string
	run     func(i int)
	samples []time.Duration
}

// checkpointFigures measures the checkpoint latency of pipeline run (and
// of an earlier build, when given) beside bare monitors, in turns, so
// that the load weighs on each alike.
func checkpointFigures(pipeline, against, self, work string, runs int) {
	fmt.Printf("checkpoint latency: [CHECKPOINT] written → SIGINT received by the step, %d runs each, in turns (the step works %s before it)\n", runs, *checkpointWork)
	loadLine("before")
	dir := filepath.Join(work, "latency")
	check(os.MkdirAll(dir, 0o755))
	peers := []*latencyPeer{pipelinePeer("pipeline run", pipeline, self, dir, "ours")}
	if against != "" {
		peers = append(peers, pipelinePeer("pipeline run (-checkpoint-against)", against, self, dir, "against"))
	}
	if python, err := exec.LookPath("python3"); err == nil {
		script := filepath.Join(dir, "monitor.py")
		check(os.WriteFile(script, []byte(bareMonitorPython), 0o644))
		peers = append(peers, monitorPeer("bare monitor, python3", dir, "python", func(report string) *exec.Cmd {
			return exec.Command(python, script, self, "-checkpoint-after", checkpointWork.String(), "-checkpoint-child", report)
		}))
	} else {
		fmt.Println("   (no python3 on PATH: the Go bare monitor alone)")
	}
	peers = append(peers, monitorPeer("bare monitor, Go", dir, "go", func(report string) *exec.Cmd {
		return exec.Command(self, "-bare-monitor", self, "-checkpoint-after", checkpointWork.String(), "-checkpoint-child", report)
	}))
	for i := 0; i < runs; i++ {
		for _, p := range peers {
			p.run(i)
		}
	}
	for _, p := range peers {
		p.samples = readSamples(p.report, runs)
		s := p.samples
		fmt.Printf("   %-36s p50 %8v   p90 %8v   p99 %8v   max %8v\n", p.name, pct(s, 50), pct(s, 90), pct(s, 99), s[len(s)-1])
	}
	fmt.Printf("   (goal: p50 at or under the bare monitor's, p99 under 2ms on a quiet machine)\n")
	loadLine("after")
	fmt.Println()
}

func pipelinePeer(name, pipeline, self, dir, tag string) *latencyPeer {
	sub := filepath.Join(dir, tag)
	check(os.MkdirAll(sub, 0o755))
	report := filepath.Join(sub, "report")
	file := filepath.Join(sub, "phases.yaml")
	check(os.WriteFile(file, []byte(fmt.Sprintf(latencyYAML, self, checkpointWork.String(), report)), 0o644))
	return &latencyPeer{name: name, report: report, run: func(i int) {
		cmd := exec.Command(pipeline, "run", file)
		cmd.Env = append(os.Environ(), "CI=true")
		if err := cmd.Run(); err == nil || cmd.ProcessState.ExitCode() != 3 {
			check(fmt.Errorf("%s, run %d: want a pause (exit 3), got %v", name, i, err))
		}
	}}
}

func monitorPeer(name, dir, tag string, command func(report string) *exec.Cmd) *latencyPeer {
	report := filepath.Join(dir, tag+".report")
	return &latencyPeer{name: name, report: report, run: func(i int) {
		cmd := command(report)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			check(fmt.Errorf("%s, run %d: %v", name, i, err))
		}
	}}
}

// readSamples reads the figures a checkpoint child appended, sorted.
func readSamples(report string, runs int) []time.Duration {
	content, err := os.ReadFile(report)
	check(err)
	var samples []time.Duration
	for _, line := range strings.Fields(string(content)) {
		n, err := strconv.ParseInt(line, 10, 64)
		check(err)
		samples = append(samples, time.Duration(n))
	}
	if len(samples) != runs {
		check(fmt.Errorf("%s: %d of %d runs reported", report, len(samples), runs))
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	return samples
}
