package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

var telemetryOnly = flag.Bool("telemetry", false, "measure the cost of telemetry alone, side by side: start-up and one-step runs with the OTLP export off and on (to a collector in this process), and throughput off and on")

// telemetryFigures measures what the OpenTelemetry export costs: pipeline
// --version and pipeline run of one true step, each with the export off
// (nothing set) and on (OTEL_EXPORTER_OTLP_ENDPOINT at a collector this
// process serves on 127.0.0.1, which answers 200 to every export), in
// turns; then the throughput of a step's output, off and on.
func telemetryFigures(pipeline, self, work string, runs int) {
	fmt.Printf("pipeline bench -telemetry: %s, %d cores, files in %s\n", pipeline, numCPU(), work)
	fmt.Printf("load average before: %s\n\n", loadAverage())
	collector, exports := benchCollector()
	defer collector.Close()
	on := "OTEL_EXPORTER_OTLP_ENDPOINT=http://" + collector.Addr().String()
	off := "OTEL_SDK_DISABLED=false" // a variable set, to keep the environments the same size

	dir := filepath.Join(work, "telemetry-run")
	check(os.MkdirAll(dir, 0o755))
	check(os.WriteFile(filepath.Join(dir, "phases.yaml"), []byte(startupYAML), 0o644))
	withEnv := func(env string, args ...string) []string {
		return append([]string{"/usr/bin/env", env, pipeline}, args...)
	}
	fmt.Printf("1. pipeline --version, export off and on, %d runs each in turns\n", runs)
	t := inTurns(runs, withEnv(off, "--version"), withEnv(on, "--version"))
	telemetryRow("off", t, 0)
	telemetryRow("on", t, 1)
	fmt.Printf("   load average after: %s\n\n", loadAverage())

	runArgs := []string{"run", "--file", filepath.Join(dir, "phases.yaml"), "--new", "--quiet"}
	fmt.Printf("2. pipeline run of one true step (no git work tree), export off and on, %d runs each in turns\n", runs/4)
	before := exports.Load()
	t = inTurns(runs/4, withEnv(off, runArgs...), withEnv(on, runArgs...))
	telemetryRow("off", t, 0)
	telemetryRow("on", t, 1)
	fmt.Printf("   exports received: %d (traces and metrics of each run with the export on)\n", exports.Load()-before)
	fmt.Printf("   load average after: %s\n\n", loadAverage())

	const size = 256 << 20
	fmt.Printf("3. throughput: %s of 100-byte lines through pipeline run, export off and on, best of 3 in turns\n", human(size))
	flood := filepath.Join(work, "telemetry-flood")
	check(os.MkdirAll(flood, 0o755))
	best := [2]time.Duration{}
	for range 3 {
		for i, env := range []string{off, on} {
			name, value, _ := strings.Cut(env, "=")
			check(os.Setenv(name, value))
			d, _ := runFlood(pipeline, self, flood, size)
			check(os.Unsetenv(name))
			if best[i] == 0 || d < best[i] {
				best[i] = d
			}
		}
	}
	for i, label := range []string{"off", "on"} {
		fmt.Printf("   %-3s  %8.1f MB/s  (%v)\n", label, float64(size)/best[i].Seconds()/1e6, best[i].Round(time.Millisecond))
	}
	fmt.Printf("   load average after: %s\n", loadAverage())
}

func telemetryRow(label string, t turns, i int) {
	fmt.Printf("   %-3s  wall p50 %8v p90 %8v   cpu p50 %8v   minor faults p50 %d   (wall %.2f× off)\n", label,
		pct(t.wall[i], 50), pct(t.wall[i], 90), pct(t.cpu[i], 50), t.faults[i][len(t.faults[i])/2],
		ratio(pct(t.wall[i], 50), pct(t.wall[0], 50)))
}

// benchCollector is an OTLP/HTTP endpoint on 127.0.0.1 that reads each
// export and answers 200; it counts them.
func benchCollector() (net.Listener, *atomic.Int64) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	var n atomic.Int64
	go func() {
		_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			n.Add(1)
		}))
	}()
	return l, &n
}
