package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

var switchesOnly = flag.Bool("switches", false, "measure only the context switches and CPU of pipeline run of one true step, in turns with -startup-against")

// switchesFigures measures, in turns, the context switches of pipeline run
// of a one-step pipeline (run: "true") in a folder of work, and of the
// other build's when there is one. Voluntary switches are the run's own:
// a thread that sleeps (a goroutine handed to another thread, the
// runtime's monitor between its looks, a wait for the disk); involuntary
// ones are the machine's load taking the core away. Both are counted by
// the kernel (getrusage), the step's own process included (1 or 2).
func switchesFigures(pipeline, against, work string, runs int) {
	fmt.Printf("pipeline bench -switches: %s, %d cores, files in %s\n", pipeline, numCPU(), work)
	if against != "" {
		fmt.Printf("the other pipeline, measured in the same turns: %s\n", against)
	}
	dir := filepath.Join(work, "switches")
	check(os.MkdirAll(dir, 0o755))
	phases := filepath.Join(dir, "phases.yaml")
	check(os.WriteFile(phases, []byte(startupYAML), 0o644))
	binaries := []string{pipeline}
	if against != "" {
		binaries = append(binaries, against)
	}
	loadLine("before")
	voluntary, involuntary := make([][]int64, len(binaries)), make([][]int64, len(binaries))
	cpu := make([][]time.Duration, len(binaries))
	for range runs {
		for i, b := range binaries {
			cmd := exec.Command(b, "run", phases)
			if out, err := cmd.CombinedOutput(); err != nil {
				check(fmt.Errorf("%s run: %v\n%s", b, err, out))
			}
			ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			if !ok {
				check(fmt.Errorf("no resource usage of %s on this system", b))
			}
			voluntary[i] = append(voluntary[i], ru.Nvcsw)
			involuntary[i] = append(involuntary[i], ru.Nivcsw)
			cpu[i] = append(cpu[i], time.Duration(ru.Utime.Nano()+ru.Stime.Nano()))
		}
	}
	fmt.Printf("pipeline run of one step (run: \"true\"), %d runs each, in turns\n", runs)
	for i, b := range binaries {
		label := "this pipeline"
		if i > 0 {
			label = "the other pipeline"
		}
		slices.Sort(voluntary[i])
		slices.Sort(involuntary[i])
		slices.Sort(cpu[i])
		fmt.Printf("   %-20s context switches: voluntary p50 %d p90 %d, involuntary p50 %d p90 %d   CPU p50 %v   (%s)\n", label,
			voluntary[i][len(voluntary[i])/2], voluntary[i][len(voluntary[i])*9/10],
			involuntary[i][len(involuntary[i])/2], involuntary[i][len(involuntary[i])*9/10], pct(cpu[i], 50), b)
	}
	loadLine("after")
}
