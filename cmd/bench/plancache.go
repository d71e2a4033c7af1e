package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

var (
	statusOnly = flag.Bool("status", false, "measure pipeline status alone, side by side: a session of a 3-phase plan against one of a 100- and a 1,000-phase plan, each paused after its first phase (with -startup-against, that binary in the same turns)")
	statusRuns = flag.Int("status-runs", 100, "runs of each status for -status")
)

// statusPhases are the plan sizes of the -status figure: the first is the
// one the others are measured against.
var statusPhases = []int{3, 100, 1000}

// manyPhases is a phases.yaml of n phases, each with a step, a trigger and
// a done_when of its own, all stopping after their phase (auto_advance:
// false), so that every session has the same length whatever the plan's.
func manyPhases(n int) string {
	var b strings.Builder
	b.WriteString(`version: 1
name: big
defaults:
  auto_advance: false
  pause_when:
    tokens: tokens > 15000
    time: elapsed > duration("30m")
  restart_when:
    errors: consecutive_errors >= 3
  retry:
    when: exit_code != 0 || timed_out
    backoff: duration("10s") * consecutive_errors
phases:
`)
	for i := range n {
		fmt.Fprintf(&b, `  - name: p%d
    steps: [{name: t, run: "true"}]
    pause_when: {cost: cost_usd > %d.5 && spec.priority != "high"}
    done_when: steps.t.exit_code == 0
`, i, i)
	}
	return b.String()
}

// statusFigures measures pipeline status of a paused session of plans of
// 3, 100 and 1,000 phases, in turns, and prints each one's time beside
// the 3-phase plan's (the goal: 1,000 phases within 2× of 3).
func statusFigures(pipeline, against, work string, runs int) {
	fmt.Printf("pipeline bench -status: %s, %d cores, files in %s\n", pipeline, numCPU(), work)
	loadLine("before")
	binaries := []string{pipeline}
	if against != "" {
		binaries = append(binaries, against)
		fmt.Printf("the other pipeline, measured in the same turns: %s\n", against)
	}
	var commands [][]string
	for _, n := range statusPhases {
		dir := filepath.Join(work, fmt.Sprintf("status-%d", n))
		check(os.MkdirAll(dir, 0o755))
		file := filepath.Join(dir, "phases.yaml")
		check(os.WriteFile(file, []byte(manyPhases(n)), 0o644))
		run := exec.Command(pipeline, "run", file)
		if out, err := run.CombinedOutput(); run.ProcessState == nil || run.ProcessState.ExitCode() != 3 {
			check(fmt.Errorf("pipeline run of %d phases should pause (exit 3): %v\n%s", n, err, out))
		}
		for _, b := range binaries {
			commands = append(commands, []string{b, "status", "--file", file})
		}
	}
	fmt.Printf("\npipeline status of a session paused after its first phase, %d runs each, all in turn\n", runs)
	t := inTurns(runs, commands...)
	for i, n := range statusPhases {
		for j := range binaries {
			c := i*len(binaries) + j
			base := j // the same binary's 3-phase figure
			label := fmt.Sprintf("%d phases", n)
			if j > 0 {
				label = "  the other pipeline"
			}
			fmt.Printf("   %-22s p50 %-9v p90 %-9v CPU p50 %-9v ratio to 3 phases: wall p50 %.2f×, CPU p50 %.2f×\n", label,
				pct(t.wall[c], 50), pct(t.wall[c], 90), pct(t.cpu[c], 50),
				ratio(pct(t.wall[c], 50), pct(t.wall[base], 50)), ratio(pct(t.cpu[c], 50), pct(t.cpu[base], 50)))
		}
	}
	fmt.Printf("   (goal: 1,000 phases within 2× of 3)\n")
	loadLine("after")
}

// againstBinary is -startup-against made absolute, "" when not given.
func againstBinary() string {
	if *startupAgainst == "" {
		return ""
	}
	abs, err := filepath.Abs(*startupAgainst)
	check(err)
	return abs
}
