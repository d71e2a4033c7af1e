package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

var (
	sessionsOnly  = flag.Bool("sessions", false, "measure pipeline sessions alone over a store of -sessions-count sessions of ten pipelines, half of them paused (with -startup-against, that binary in the same turns)")
	sessionsCount = flag.Int("sessions-count", 2861, "sessions in the store of the -sessions figure (issue 28 measured 2,861)")
)

// sessionsPipelines is how many pipelines the -sessions store holds: the
// listing reads every pipeline's sessions, whichever the command names.
const sessionsPipelines = 10

// sessionsFigures fills one store with count sessions made by the binary
// itself (ten pipelines side by side, every other run pausing after its
// first phase), then times pipeline sessions, text and JSON, the active
// ones alone, in turns with against when given.
func sessionsFigures(pipeline, against, work string, count, runs int) {
	fmt.Printf("pipeline bench -sessions: %s, %d cores, files in %s\n", pipeline, numCPU(), work)
	loadLine("before")
	dir := filepath.Join(work, "sessions")
	check(os.MkdirAll(dir, 0o755))
	files := make([]string, sessionsPipelines)
	for i := range files {
		files[i] = filepath.Join(dir, fmt.Sprintf("p%d.yaml", i))
		check(os.WriteFile(files[i], []byte(fmt.Sprintf(sessionsYAML, i)), 0o644))
	}
	fillSessions(pipeline, files, count)
	listed, paused := countSessions(pipeline, files[0])
	fmt.Printf("the store lists %d sessions, %d of them paused\n", listed, paused)
	binaries := []string{pipeline}
	if against != "" {
		binaries = append(binaries, against)
		fmt.Printf("the other pipeline, measured in the same turns: %s\n", against)
	}
	listings := [][]string{{"sessions"}, {"sessions", "-o", "json"}, {"sessions", "--active"}}
	var commands [][]string
	for _, listing := range listings {
		for _, b := range binaries {
			args := append([]string{b}, listing...)
			commands = append(commands, append(args, "--file", files[0]))
		}
	}
	fmt.Printf("\n%d sessions in one store; each listing %d times, all in turn\n", count, runs)
	t := inTurns(runs, commands...)
	for i, listing := range listings {
		for j := range binaries {
			c := i*len(binaries) + j
			label := fmt.Sprintf("%v", listing)
			if j > 0 {
				label = "  the other pipeline"
			}
			fmt.Printf("   %-26s p50 %-9v p90 %-9v CPU p50 %-9v faults p50 %d\n", label,
				pct(t.wall[c], 50), pct(t.wall[c], 90), pct(t.cpu[c], 50), t.faults[c][len(t.faults[c])/2])
		}
	}
	fmt.Printf("   (issue 28 measured 28–35 ms over 2,861 sessions: not worse)\n")
	loadLine("after")
}

// sessionsYAML is a pipeline of two phases whose first pauses on every
// other run (the run's number, given as RUN, is odd), so the store holds
// completed and paused sessions alike.
const sessionsYAML = `version: 1
name: listed-%d
phases:
  - name: first
    steps: [{run: 'if [ $((RUN %% 2)) = 1 ]; then echo hold; fi'}]
    pause_when: {odd: output contains "hold"}
  - name: second
    steps: [{run: "true"}]
`

// fillSessions runs the pipelines count times in all, two at a time: a
// paused run exits 3, any other exit but 0 stops the bench. Each run is
// --new: a run of a pipeline with a paused session would resume it.
func fillSessions(pipeline string, files []string, count int) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range work {
				cmd := exec.Command(pipeline, "run", "--new", files[n%len(files)])
				cmd.Env = append(os.Environ(), fmt.Sprintf("RUN=%d", n/len(files)))
				out, err := cmd.CombinedOutput()
				if code := cmd.ProcessState.ExitCode(); code != 0 && code != 3 {
					check(fmt.Errorf("pipeline run %d: %v\n%s", n, err, out))
				}
			}
		}()
	}
	for n := range count {
		work <- n
	}
	close(work)
	wg.Wait()
}

// countSessions is how many sessions pipeline sessions lists for the
// store of file, and how many of them are paused.
func countSessions(pipeline, file string) (listed, paused int) {
	out, err := exec.Command(pipeline, "sessions", "-o", "json", "--file", file).Output()
	check(err)
	var sessions []struct{ Status string }
	check(json.Unmarshal(out, &sessions))
	for _, s := range sessions {
		if s.Status == "paused" {
			paused++
		}
	}
	return len(sessions), paused
}
