package main

import (
	"bytes"
	"cmp"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
)

var threadsOnly = flag.Bool("threads", false, "count the threads, futex calls and sleeps of pipeline run of one true step (strace -f), in turns with -startup-against")

// threadCounts are the calls of one traced run that tell its threads
// apart: the threads it made, the futex calls (a thread put to sleep or
// woken: a goroutine handed to another thread), and the runtime monitor's
// naps (nanosleep, 20 µs while a goroutine is in a system call, more under
// strace, which slows every call).
type threadCounts struct{ threads, futex, naps []int }

// threadsFigures traces runs of pipeline (and against, when given) in
// turns, each in a store of its own warmed by three runs, and gives the
// medians of each count.
func threadsFigures(pipeline, against, work string, runs int) {
	if _, err := exec.LookPath("strace"); err != nil {
		check(fmt.Errorf("-threads needs strace: %w", err))
	}
	fmt.Printf("pipeline bench -threads: a run of one step (run: \"true\"), %d runs each in turns, files in %s\n", runs, work)
	binaries := []string{pipeline}
	if against != "" {
		binaries = append(binaries, against)
	}
	dirs := make([]string, len(binaries))
	for i, binary := range binaries {
		dirs[i] = filepath.Join(work, fmt.Sprintf("threads-%d", i))
		check(os.RemoveAll(dirs[i]))
		check(os.MkdirAll(dirs[i], 0o755))
		check(os.WriteFile(filepath.Join(dirs[i], "phases.yaml"), []byte(startupYAML), 0o644))
		for range 3 {
			runIn(dirs[i], binary, "run", "phases.yaml")
		}
	}
	loadLine("before")
	counts := make([]threadCounts, len(binaries))
	for range runs {
		for i, binary := range binaries {
			threads, futex, naps := tracedThreads(dirs[i], binary)
			counts[i].threads = append(counts[i].threads, threads)
			counts[i].futex = append(counts[i].futex, futex)
			counts[i].naps = append(counts[i].naps, naps)
		}
	}
	loadLine("after")
	for i, binary := range binaries {
		c := counts[i]
		fmt.Printf("   %-40s threads made p50 %d (p10 %d, p90 %d)   futex calls p50 %d (p90 %d)   nanosleeps p50 %d (p90 %d)\n", binary,
			median(c.threads), centile(c.threads, 10), centile(c.threads, 90), median(c.futex), centile(c.futex, 90), median(c.naps), centile(c.naps, 90))
		check(os.RemoveAll(dirs[i]))
	}
}

// tracedThreads runs binary under strace in dir and counts the threads
// made (clone with CLONE_THREAD: not the step's process), the futex
// calls and the nanosleeps.
func tracedThreads(dir, binary string) (threads, futex, naps int) {
	trace := filepath.Join(dir, "..", filepath.Base(dir)+".strace")
	runIn(dir, "strace", "-f", "-qq", "-o", trace, "-e", "trace=clone,clone3,futex,nanosleep,clock_nanosleep", binary, "run", "phases.yaml")
	content, err := os.ReadFile(trace)
	check(err)
	check(os.Remove(trace))
	for line := range bytes.Lines(content) {
		switch {
		case bytes.Contains(line, []byte("clone")) && bytes.Contains(line, []byte("CLONE_THREAD")):
			threads++
		case bytes.Contains(line, []byte("futex(")):
			futex++
		case bytes.Contains(line, []byte("nanosleep(")):
			naps++
		}
	}
	return threads, futex, naps
}

func median(v []int) int { return centile(v, 50) }

// centile is the p-th centile of v (sorted in place).
func centile[T cmp.Ordered](v []T, p int) T {
	slices.Sort(v)
	return v[len(v)*p/100]
}
