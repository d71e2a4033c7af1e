package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// raceFor is how long the processes of the race test run against each
// other at least: they go on until enough of each command has ended (see
// enough), which on a busy machine takes longer.
const raceFor = 12 * time.Second

// runQuietly runs the built command in dir, for a goroutine of the race
// test (which must not call t.Fatal).
func runQuietly(dir string, args ...string) (result, error) {
	cmd := exec.Command(binary, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "CI=true")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return result{stdout.String(), stderr.String(), exitErr.ExitCode()}, nil
	}
	return result{stdout.String(), stderr.String(), 0}, err
}

// raceLog collects what went wrong in the race's goroutines, and counts.
type raceLog struct {
	mu       sync.Mutex
	problems []string
	counts   map[string]*atomic.Int64
}

func (l *raceLog) fail(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.problems) < 20 {
		l.problems = append(l.problems, fmt.Sprintf(format, args...))
	}
}

func (l *raceLog) count(what string) { l.counts[what].Add(1) }

// expect runs a command and checks its exit code.
func (l *raceLog) expect(want int, dir string, args ...string) (result, bool) {
	r, err := runQuietly(dir, args...)
	if err != nil || r.code != want {
		l.fail("%v: exit %d (want %d), %v\n%s%s", args, r.code, want, err, r.stdout, r.stderr)
		return r, false
	}
	return r, true
}

// Issue 9: clean racing live runs. In 60 s of four run loops against a
// clean loop, 2,762 of 6,891 sessions vanished from sessions and 207
// showed the wrong status: clean's compaction replaced the index with
// what it had read, losing every line appended meanwhile. Here real
// processes run, pause, resume, complete and clean sessions of one store
// at the same time; afterwards every session folder is listed once, with
// the status its state.json says, and nothing is listed without a
// folder. Every command must also end as it should while the others run.
func TestIndexStaysTrueWhileRunsPausesCompletesAndCleansRace(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".pipeline")
	log := &raceLog{counts: map[string]*atomic.Int64{}}
	for _, what := range []string{"run", "pause", "complete", "resume", "clean", "removed", "sessions"} {
		log.counts[what] = &atomic.Int64{}
	}
	const runLoops = 3
	for i := 0; i < runLoops; i++ {
		write(t, filepath.Join(dir, fmt.Sprint("quick", i)), "phases.yaml",
			"version: 1\nphases: [{name: a, steps: [{run: 'true'}]}, {name: b, steps: [{run: 'true'}]}]\n")
	}
	long := filepath.Join(dir, "long")
	write(t, long, "phases.yaml", `version: 1
phases:
  - name: long
    steps: [{run: '[ -f go ] && { rm -f go; echo quick; exit 0; }; echo waiting; sleep 30'}]
`)
	// The race ends when it has run for raceFor and enough has happened
	// in it to prove something: a count, not a time, so that a slow
	// machine makes it longer rather than weaker. failsafe ends it
	// anyway, and the counts below then fail the test.
	enough := func() bool {
		return log.counts["run"].Load() >= 10 && log.counts["removed"].Load() >= 10 && log.counts["pause"].Load() >= 3
	}
	start := time.Now()
	over := func() bool {
		elapsed := time.Since(start)
		return elapsed >= raceFor && enough() || elapsed >= failsafe
	}
	var wg sync.WaitGroup
	loop := func(body func(i int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !over(); i++ {
				body(i)
			}
		}()
	}
	for i := 0; i < runLoops; i++ {
		quick := filepath.Join(dir, fmt.Sprint("quick", i))
		loop(func(int) {
			if _, ok := log.expect(0, quick, "run", "--new", "--state-dir", state); ok {
				log.count("run")
			}
		})
	}
	loop(func(i int) {
		id, ok := pauseALongRun(log, long, state)
		if !ok {
			return
		}
		if i%2 == 0 {
			if _, ok := log.expect(0, long, "complete", id, "--state-dir", state); ok {
				log.count("complete")
			}
			return
		}
		if err := os.WriteFile(filepath.Join(long, "go"), nil, 0o600); err != nil {
			log.fail("%v", err)
			return
		}
		if _, ok := log.expect(0, long, "resume", id, "--state-dir", state); ok {
			log.count("resume")
		}
	})
	for c := 0; c < 2; c++ {
		loop(func(int) {
			r, ok := log.expect(0, dir, "clean", "--older-than", "1ms", "--keep", "0", "--state-dir", state, "-o", "json")
			var cleaned struct{ Removed []string }
			if ok && json.Unmarshal([]byte(r.stdout), &cleaned) == nil {
				log.count("clean")
				log.counts["removed"].Add(int64(len(cleaned.Removed)))
			}
		})
	}
	loop(func(int) {
		r, ok := log.expect(0, dir, "sessions", "-o", "json", "--state-dir", state)
		var list []struct{ ID string }
		if ok {
			if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
				log.fail("sessions -o json is not JSON: %v", err)
			}
			log.count("sessions")
		}
	})
	wg.Wait()
	for _, p := range log.problems {
		t.Error(p)
	}
	var figures []string
	for _, what := range []string{"run", "pause", "resume", "complete", "clean", "removed", "sessions"} {
		figures = append(figures, fmt.Sprintf("%s %d", what, log.counts[what].Load()))
	}
	folders, _ := filepath.Glob(filepath.Join(state, "sessions", "*"))
	t.Logf("in %s: %s; %d sessions left", time.Since(start).Round(time.Millisecond), strings.Join(figures, ", "), len(folders))
	if !enough() {
		t.Errorf("too little happened for the race to prove anything: %s", strings.Join(figures, ", "))
	}
	indexMatchesFolders(t, dir, state)
	storeReadable(t, state)
}

// pauseALongRun starts a run of the long pipeline, waits for its step,
// pauses it with pipeline pause and returns the session's id.
func pauseALongRun(log *raceLog, long, state string) (string, bool) {
	cmd := exec.Command(binary, "run", "--new", "--state-dir", state, "--grace", "1s")
	cmd.Dir, cmd.Env = long, append(os.Environ(), "CI=true")
	out, err := cmd.StdoutPipe()
	if err != nil {
		log.fail("%v", err)
		return "", false
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		log.fail("%v", err)
		return "", false
	}
	defer cmd.Process.Kill()
	// The step's output, not its header, which quotes the command.
	lines := bufio.NewScanner(out)
	waiting := false
	for !waiting && lines.Scan() {
		waiting = strings.Contains(lines.Text(), "| waiting")
	}
	if !waiting {
		cmd.Wait()
		log.fail("the long run never ran its step: %s", stderr.String())
		return "", false
	}
	go func() {
		for lines.Scan() {
		}
	}()
	r, ok := log.expect(0, long, "pause", "--state-dir", state, "-o", "json")
	if !ok {
		return "", false
	}
	if err := cmd.Wait(); cmd.ProcessState.ExitCode() != exitPaused {
		log.fail("the paused run exited %d (%v): %s", cmd.ProcessState.ExitCode(), err, stderr.String())
		return "", false
	}
	var answer map[string]string
	if err := json.Unmarshal([]byte(r.stdout), &answer); err != nil || answer["result"] != "paused" {
		log.fail("pause -o json: %v %s", err, r.stdout)
		return "", false
	}
	log.count("pause")
	return answer["session"], true
}
