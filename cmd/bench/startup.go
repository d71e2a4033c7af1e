package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

var startupOnly = flag.Bool("startup", false, "measure start-up alone, side by side: pipeline --version against a binary of cobra alone, pipeline run of one true step against /bin/true")

// cobraOnly is a command with cobra alone and a version, built from this
// module (its cobra, its go.mod) for the start-up figure's reference.
const cobraOnly = `package main

import (
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{Use: "cobra-only", Short: "cobra alone", Version: "1", Run: func(*cobra.Command, []string) {}}
	if root.Execute() != nil {
		os.Exit(1)
	}
}
`

// startupFigures measures, in turns, pipeline --version against a
// cobra-only binary built as make build builds pipeline, and pipeline
// run of a one-step pipeline (run: "true") against /bin/true, in work
// (the project's disk under make bench: the store's fsyncs cost there
// what they cost a user).
func startupFigures(pipeline, work string, runs int) {
	fmt.Printf("pipeline bench -startup: %s, %d cores, files in %s\n", pipeline, numCPU(), work)
	fmt.Printf("load average before: %s\n\n", loadAverage())
	cobra := buildCobraOnly(work)

	fmt.Printf("1. pipeline --version against a Go binary of cobra alone (CGO_ENABLED=0, both), %d runs each\n", runs)
	s := sideBySide(runs, []string{cobra, "--version"}, []string{pipeline, "--version"})
	fmt.Printf("   cobra alone --version   p50 %-9v p90 %v\n", pct(s[0], 50), pct(s[0], 90))
	fmt.Printf("   pipeline --version      p50 %-9v p90 %v\n", pct(s[1], 50), pct(s[1], 90))
	fmt.Printf("   ratio                   p50 %.2f×     p90 %.2f×   (goal: within 1.5×)\n\n",
		ratio(pct(s[1], 50), pct(s[0], 50)), ratio(pct(s[1], 90), pct(s[0], 90)))

	trueBin, err := exec.LookPath("true")
	check(err)
	fmt.Printf("2. pipeline run of one step (run: \"true\") against %s, %d runs each; the sessions stay in the store, as a project's do\n", trueBin, runs)
	dir := filepath.Join(work, "startup")
	check(os.MkdirAll(dir, 0o755))
	if exec.Command("git", "-C", dir, "rev-parse", "--is-inside-work-tree").Run() == nil {
		fmt.Printf("   (%s is in a git work tree: each run also asks git whether git ignores it, one git process)\n", dir)
	}
	runFigures(pipeline, trueBin, dir, runs)
	// The same in memory, where an fsync costs nothing: the difference is
	// what the store's fsyncs (and git, in a work tree) cost on the disk
	// above.
	if info, err := os.Stat("/dev/shm"); err == nil && info.IsDir() && !strings.HasPrefix(work, "/dev/shm") {
		shm, err := os.MkdirTemp("/dev/shm", "pipeline-bench-")
		check(err)
		defer os.RemoveAll(shm)
		fmt.Printf("   the same with the store in memory (%s), where an fsync costs nothing:\n", shm)
		runFigures(pipeline, trueBin, shm, runs)
	}
	fmt.Println()
	fmt.Printf("load average after: %s\n", loadAverage())
}

// buildCobraOnly writes cobraOnly into a folder of this module (for its
// go.mod and go.sum; a leading _ keeps it out of ./...), builds it into
// work and removes the source.
func buildCobraOnly(work string) string {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	check(err)
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	check(os.MkdirAll(filepath.Join(root, "bin"), 0o755))
	src, err := os.MkdirTemp(filepath.Join(root, "bin"), "_cobra-only-")
	check(err)
	defer os.RemoveAll(src)
	check(os.WriteFile(filepath.Join(src, "main.go"), []byte(cobraOnly), 0o644))
	out := filepath.Join(work, "cobra-only")
	build := exec.Command("go", "build", "-o", out, "./"+filepath.Join("bin", filepath.Base(src)))
	build.Dir, build.Stderr = root, os.Stderr
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	check(build.Run())
	return out
}

// sideBySide runs each command once per round, in turn, so that a change
// of the machine's load weighs on each alike; it returns each one's
// wall times, sorted. Every run must exit 0. The programs' cached pages
// are dropped first, and each runs once untimed, so that each is read
// into the cache the same way.
func sideBySide(runs int, commands ...[]string) [][]time.Duration {
	for _, args := range commands {
		dropCached(args[0])
	}
	for _, args := range commands {
		if err := exec.Command(args[0], args[1:]...).Run(); err != nil {
			check(fmt.Errorf("%s: %w", strings.Join(args, " "), err))
		}
	}
	samples := make([][]time.Duration, len(commands))
	for range runs {
		for c, args := range commands {
			cmd := exec.Command(args[0], args[1:]...)
			d, _, err := timed(cmd)
			if err != nil {
				check(fmt.Errorf("%s: %w", strings.Join(args, " "), err))
			}
			samples[c] = append(samples[c], d)
		}
	}
	for _, s := range samples {
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	}
	return samples
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

// runFigures measures pipeline run of startupYAML in dir beside trueBin.
func runFigures(pipeline, trueBin, dir string, runs int) {
	check(os.MkdirAll(dir, 0o755))
	file := filepath.Join(dir, "phases.yaml")
	check(os.WriteFile(file, []byte(startupYAML), 0o644))
	s := sideBySide(runs, []string{trueBin}, []string{pipeline, "run", file})
	fmt.Printf("   %-22s  p50 %-9v p90 %v\n", trueBin, pct(s[0], 50), pct(s[0], 90))
	fmt.Printf("   pipeline run (1 step)   p50 %-9v p90 %v\n", pct(s[1], 50), pct(s[1], 90))
	fmt.Printf("   overhead                p50 %-9v p90 %v   (goal: within 5ms)\n",
		pct(s[1], 50)-pct(s[0], 50), pct(s[1], 90)-pct(s[0], 90))
}

const startupYAML = `version: 1
phases: [{name: one, steps: [{run: "true"}]}]
`
