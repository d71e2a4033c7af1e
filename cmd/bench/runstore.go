package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

var (
	runStoreOnly     = flag.Bool("run-store", false, "measure pipeline run of one true step against /bin/true where the store already keeps -run-store-sessions sessions of the pipeline, each build (with -startup-against) in a store of its own")
	runStoreSessions = flag.Int("run-store-sessions", 1200, "the sessions the -run-store figure's stores keep before it is measured")
)

// runStoreFigures measures, in turns, pipeline run of a one-step pipeline
// (run: "true") against /bin/true in a folder of work that already keeps
// sessions sessions of the pipeline, as a project's store does after a
// while (-startup's stores hold only the sessions of its own runs). The
// sessions are made by running the pipeline (the other build, when there
// is one) that many times; each build then runs in a copy of its own:
// what one build keeps beside the index and the sessions folder (a
// digest, a stamp) is not spoiled by the other's runs, as it would be in
// a store they shared. Each figure is printed with the load average.
func runStoreFigures(pipeline, against, work string, runs, sessions int) {
	fmt.Printf("pipeline bench -run-store: %s, %d cores, files in %s\n", pipeline, numCPU(), work)
	if against != "" {
		fmt.Printf("the other pipeline, measured in the same turns: %s\n", against)
	}
	loadLine("before")
	filler := pipeline
	if against != "" {
		filler = against
	}
	template := filepath.Join(work, "run-store")
	check(os.MkdirAll(template, 0o755))
	check(os.WriteFile(filepath.Join(template, "phases.yaml"), []byte(startupYAML), 0o644))
	for range sessions {
		if out, err := exec.Command(filler, "run", filepath.Join(template, "phases.yaml")).CombinedOutput(); err != nil {
			check(fmt.Errorf("filling the store: %v\n%s", err, out))
		}
	}
	trueBin, err := exec.LookPath("true")
	check(err)
	commands := [][]string{{trueBin}}
	labels := []string{"this pipeline", "the other pipeline"}
	for i, b := range []string{pipeline, against} {
		if b == "" {
			continue
		}
		dir := filepath.Join(work, fmt.Sprint("run-store-", i))
		if out, err := exec.Command("cp", "-a", template, dir).CombinedOutput(); err != nil {
			check(fmt.Errorf("cp -a %s %s: %v\n%s", template, dir, err, out))
		}
		commands = append(commands, []string{b, "run", filepath.Join(dir, "phases.yaml")})
	}
	fmt.Printf("pipeline run of one step (run: \"true\") against %s in a store of %d sessions of the pipeline, %d runs each, all in turn\n", trueBin, sessions, runs)
	t := sideBySide(runs, commands...)
	s := t.wall
	fmt.Printf("   %-22s p50 %-9v p90 %-9v                         CPU p50 %-9v faults p50 %d\n", trueBin, pct(s[0], 50), pct(s[0], 90),
		pct(t.cpu[0], 50), t.faults[0][len(t.faults[0])/2])
	for c := 1; c < len(commands); c++ {
		fmt.Printf("   %-22s p50 %-9v p90 %-9v overhead p50 %-9v CPU p50 %-9v faults p50 %d\n", labels[c-1], pct(s[c], 50), pct(s[c], 90),
			pct(s[c], 50)-pct(s[0], 50), pct(t.cpu[c], 50), t.faults[c][len(t.faults[c])/2])
	}
	fmt.Println("   (goal: an overhead within 5ms)")
	loadLine("after")
}
