package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// attachAgent prints a line, waits for go1, prints another, waits for
// go2, then asks for a review: the session pauses at the checkpoint.
const attachAgent = `echo "first line of the step"
while [ ! -f go1 ]; do sleep 0.02; done
echo "second line, written after attach began"
while [ ! -f go2 ]; do sleep 0.02; done
echo "[CHECKPOINT] look at the design"
`

// pipeline attach, in a second process, shows a running session from its
// step's last lines, then each line the step writes as it writes it, and
// ends with the session's status when it pauses (3).
func TestAttachFollowsARunningSessionUntilItPauses(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "agent.sh", attachAgent)
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: command, command: [sh, ./agent.sh]}
phases:
  - name: design
    prompt: Draft the design.
`)
	run := exec.Command(binary, "run")
	run.Dir = dir
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer run.Process.Kill()
	os.MkdirAll(filepath.Join(dir, ".pipeline"), 0o755)
	awaitWritten(t, filepath.Join(dir, ".pipeline"), "the step's first line", func() bool {
		logs := pipeline(t, dir, "logs")
		return strings.Contains(logs.stdout, "first line of the step")
	})

	attach := exec.Command(binary, "attach")
	attach.Dir = dir
	stdout, err := attach.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	attach.Stderr = &stderr
	if err := attach.Start(); err != nil {
		t.Fatal(err)
	}
	defer attach.Process.Kill()
	lines := make(chan string, 100)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	var seen []string
	await := func(what string) time.Time {
		t.Helper()
		timeout := time.After(failsafe)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("attach ended before %q:\n%s\n%s", what, strings.Join(seen, "\n"), stderr.String())
				}
				seen = append(seen, l)
				if strings.Contains(l, what) {
					return time.Now()
				}
			case <-timeout:
				t.Fatalf("attach did not show %q:\n%s", what, strings.Join(seen, "\n"))
			}
		}
	}
	await("first line of the step")
	written := time.Now()
	write(t, dir, "go1", "")
	shown := await("second line, written after attach began")
	t.Logf("a line the step wrote reached attach after %v", shown.Sub(written))
	write(t, dir, "go2", "")
	await("paused: checkpoint")
	for range lines {
	}
	err = attach.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitPaused {
		t.Errorf("attach: %v, want exit %d\n%s", err, exitPaused, stderr.String())
	}
	if !strings.Contains(stderr.String(), "continue it with: pipeline resume ") {
		t.Errorf("attach does not say how to go on:\n%s", stderr.String())
	}
	run.Wait()
	if n := strings.Count(strings.Join(seen, "\n"), "first line of the step"); n != 1 {
		t.Errorf("the step's first line shows %d times:\n%s", n, strings.Join(seen, "\n"))
	}
}

// attach on a session that is not running says how it stands, with its
// status.
func TestAttachToASessionThatIsNotRunning(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nphases:\n  - name: build\n    steps:\n      - run: \"true\"\n")
	if r := pipeline(t, dir, "run"); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	r := pipeline(t, dir, "attach")
	if r.code != 0 || !strings.Contains(r.stderr, "is not running: it is completed") || !strings.Contains(r.stdout, "completed") {
		t.Errorf("attach: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
