package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/filetree"
	"github.com/pipeline-dev/pipeline/internal/proctest"
)

// started is a pipeline running in the background.
type started struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	lines  chan string
	done   chan int
}

// pipelineStart runs the command in dir without waiting; its output lines
// arrive on lines.
func pipelineStart(t *testing.T, dir string, args ...string) *started {
	t.Helper()
	s := &started{cmd: exec.Command(binary, args...), lines: make(chan string, 4096), done: make(chan int, 1)}
	s.cmd.Dir = dir
	s.cmd.Env = append(os.Environ(), "CI=true")
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stderr = &s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		scanner := bufio.NewScanner(out)
		for scanner.Scan() {
			select {
			case s.lines <- scanner.Text():
			default:
			}
		}
		s.cmd.Wait()
		s.done <- s.cmd.ProcessState.ExitCode()
	}()
	t.Cleanup(func() { s.cmd.Process.Kill() })
	return s
}

// await waits for a line of the run's output that holds want. The header
// of a step quotes its command: to wait for what the step printed, and
// so for the step to run, want its output line, "| text".
func (s *started) await(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(failsafe)
	for {
		select {
		case line := <-s.lines:
			if strings.Contains(line, want) {
				return
			}
		case <-deadline:
			t.Fatalf("no line %q from the run; stderr: %s", want, s.stderr.String())
		}
	}
}

// awaitPID waits for a line of output that gives a process id after
// label ("child 1234"), and returns the id.
func (s *started) awaitPID(t *testing.T, label string) int {
	t.Helper()
	for {
		select {
		case line := <-s.lines:
			if i := strings.Index(line, label); i >= 0 {
				if pid, err := strconv.Atoi(strings.TrimSpace(line[i+len(label):])); err == nil && pid > 0 {
					return pid
				}
			}
		case <-time.After(failsafe):
			t.Fatalf("no line %q<pid> from the run", label)
		}
	}
}

func (s *started) exit(t *testing.T) int {
	t.Helper()
	select {
	case code := <-s.done:
		return code
	case <-time.After(failsafe):
		t.Fatal("the run did not end")
	}
	return 0
}

// awaitLocksFree waits until no open file holds a lock of the store in
// dir/.pipeline. A runner killed while it starts a step leaves a copy of
// its lock's descriptor in the child until the child runs its program
// (the descriptor closes on exec) or dies: for that moment after the
// runner itself was reaped (longer on a busy machine) the lock is still
// held, and the next run is refused as already running. The store's own
// WaitReleased asks until the kernel has dropped it.
func awaitLocksFree(t *testing.T, dir string) {
	t.Helper()
	st, err := store.OpenExisting(filepath.Join(dir, ".pipeline"))
	if errors.Is(err, store.ErrNoStore) || errors.Is(err, fs.ErrNotExist) {
		return // killed before it made the store: nothing locked
	}
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	locks, err := filepath.Glob(filepath.Join(dir, ".pipeline", "locks", "*.lock"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range locks {
		if key := strings.TrimSuffix(filepath.Base(path), ".lock"); !st.WaitReleased(key, failsafe) {
			t.Fatalf("%s is still locked after %v", path, failsafe)
		}
	}
}

// The quickstart's shape: a checkpoint pauses; resume with notes gives the
// agent its resume context and the session completes.
func TestPauseResumeWithNotesAndContext(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "agent.sh", `#!/bin/sh
prompt=$(cat)
printf '%s\n' "$prompt" > "prompt-$PIPELINE_PHASE-$PIPELINE_ATTEMPT.txt"
if [ "$PIPELINE_PHASE" = design ] && [ ! -f checkpointed ]; then
  : > checkpointed
  echo "[CHECKPOINT] draft ready"
  sleep 30
fi
echo "finished $PIPELINE_PHASE"
`)
	os.Chmod(filepath.Join(dir, "agent.sh"), 0o755)
	write(t, dir, "spec.md", "---\nstatus: planned\n---\n# Spec\nBuild it.\n")
	write(t, dir, "phases.yaml", "version: 1\nspec: spec.md\nagent: {kind: command, command: [./agent.sh]}\nphases: [{name: design}, {name: build}]\n")
	r := pipeline(t, dir, "run", "--grace", "1s")
	if r.code != exitPaused {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	s := status(t, dir)
	if s.Status != "paused" || s.PauseReason != "checkpoint" || s.PauseNote != "draft ready" || s.Phase != "design" {
		t.Fatalf("status %+v", s)
	}
	write(t, dir, "spec.md", "---\nstatus: planned\n---\n# Spec\nBuild it twice.\n")
	r = pipeline(t, dir, "resume", "--notes", "keep the API small")
	if r.code != 0 {
		t.Fatalf("resume: exit %d, %s %s", r.code, r.stdout, r.stderr)
	}
	prompt, err := os.ReadFile(filepath.Join(dir, "prompt-design-1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[Resume context]", `phase "design"`, "checkpoint", "keep the API small", "-Build it.", "+Build it twice."} {
		if !strings.Contains(string(prompt), want) {
			t.Errorf("the resumed prompt lacks %q:\n%s", want, prompt)
		}
	}
	s = status(t, dir)
	if s.Status != "completed" || s.Phases[0].Human != 1 || len(s.Phases[0].Notes) != 1 {
		t.Fatalf("status %+v", s)
	}
	// A completed session is not resumed: the next run starts a new one.
	r = pipeline(t, dir, "run")
	if r.code != 0 || strings.Contains(r.stderr, "resuming") {
		t.Errorf("run after completion: exit %d, %s", r.code, r.stderr)
	}
	if list := pipeline(t, dir, "sessions", "-o", "json"); !strings.Contains(list.stdout, `"status": "completed"`) {
		t.Errorf("sessions: %s", list.stdout)
	}
	if logs := pipeline(t, dir, "logs", s.ID); !strings.Contains(logs.stdout, "[CHECKPOINT] draft ready") || !strings.Contains(logs.stdout, "finished build") {
		t.Errorf("logs: %s", logs.stdout)
	}
}

// pipeline pause stops a running session at once, with notes; run then
// resumes it.
func TestPauseCommandStopsARunningSession(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
phases:
  - name: long
    steps: [{run: 'if [ -f again ]; then echo quick; else : > again; echo waiting; sleep 60; fi'}]
`)
	run := pipelineStart(t, dir, "run")
	run.await(t, "| waiting")
	if r := pipeline(t, dir, "pause", "--notes", "coffee break"); r.code != 0 || !strings.Contains(r.stdout, "paused") {
		t.Fatalf("pause: exit %d, %s %s", r.code, r.stdout, r.stderr)
	}
	if code := run.exit(t); code != exitPaused {
		t.Fatalf("the paused run exited %d: %s", code, run.stderr.String())
	}
	s := status(t, dir)
	if s.PauseReason != "paused-by-human" || s.PauseNote != "coffee break" {
		t.Fatalf("status %+v", s)
	}
	r := pipeline(t, dir, "run")
	if r.code != 0 || !strings.Contains(r.stderr, "resuming session "+s.ID) {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
}

// Two runs of one pipeline and spec: one runs, the other is refused with
// the first's pid; a lock left by a killed run is taken over.
func TestOneRunAtATimeAndStaleLocks(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
phases:
  - name: long
    steps: [{run: 'if [ -f again ]; then echo quick; else : > again; echo waiting; sleep 60; fi'}]
`)
	// Killed while its step runs, not while it starts it (see
	// awaitLocksFree): the lock is free once the runner is reaped.
	first := pipelineStart(t, dir, "run")
	first.await(t, "| waiting")
	second := pipeline(t, dir, "run")
	if second.code != exitUsage || !strings.Contains(second.stderr, "already running") ||
		!strings.Contains(second.stderr, "pid "+itoa(first.cmd.Process.Pid)) {
		t.Fatalf("second run: exit %d, %s", second.code, second.stderr)
	}
	first.cmd.Process.Signal(syscall.SIGKILL)
	first.exit(t)
	s := status(t, dir)
	if s.Status != "paused" || s.PauseReason != "runner-died" {
		t.Fatalf("status after kill -9: %+v", s)
	}
	third := pipeline(t, dir, "run")
	if third.code != 0 || !strings.Contains(third.stderr, "its runner stopped") {
		t.Fatalf("third run: exit %d, %s", third.code, third.stderr)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// A secret in an agent's environment, printed by the agent, never reaches
// a file under .pipeline; every file there is 0600, every folder 0700.
func TestSecretsNeverWritten(t *testing.T) {
	dir := t.TempDir()
	const envSecret = "s3cr3t-value-7f9a2b4c"
	const keyLike = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
	write(t, dir, "phases.yaml", `version: 1
agent:
  kind: command
  command: [sh, -c, 'echo "token is $MY_API_TOKEN, key is $OTHER"; echo "[CHECKPOINT] with $MY_API_TOKEN"']
  env: {MY_API_TOKEN: `+envSecret+`, OTHER: `+keyLike+`}
phases: [{name: leak}]
`)
	if r := pipeline(t, dir, "run"); r.code != exitPaused {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	if r := pipeline(t, dir, "pause", "--notes", "note with "+envSecret); r.code != 0 {
		t.Fatalf("pause: exit %d, %s", r.code, r.stderr)
	}
	checked := 0
	err := filepath.WalkDir(filepath.Join(dir, ".pipeline"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s is %v, want %v", path, info.Mode().Perm(), want)
		}
		if d.IsDir() {
			return nil
		}
		content, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		for _, secret := range []string{envSecret, keyLike, "AbCdEfGhIjKlMnOp"} {
			if bytes.Contains(content, []byte(secret)) {
				t.Errorf("%s holds the secret %q", path, secret)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 5 {
		t.Fatalf("only %d files checked", checked)
	}
	if logs := pipeline(t, dir, "logs"); !strings.Contains(logs.stdout, "[REDACTED") {
		t.Errorf("the transcript should show where a secret was: %s", logs.stdout)
	}
}

// A session written in another format is refused with a clear message.
func TestOtherFormatRefused(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nphases: [{name: a, steps: [{run: 'true'}]}]\n")
	if r := pipeline(t, dir, "run"); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	// A short run's stop carries its snapshot in the log.
	logs, _ := filepath.Glob(filepath.Join(dir, ".pipeline", "sessions", "*", "events.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("event logs %v", logs)
	}
	content, _ := os.ReadFile(logs[0])
	if !bytes.Contains(content, []byte(`"format":2,"state":`)) {
		t.Fatalf("the log holds no snapshot: %s", content)
	}
	os.WriteFile(logs[0], bytes.Replace(content, []byte(`"format":2`), []byte(`"format":9`), 1), 0o600)
	r := pipeline(t, dir, "status")
	if r.code != exitUsage || !strings.Contains(r.stderr, "format 9") || !strings.Contains(r.stderr, "reads formats 1 to 2") {
		t.Fatalf("status of a format-9 session: exit %d, %s", r.code, r.stderr)
	}
}

// kill -9 at random instants never corrupts a session nor loses a recorded
// event, and resume always finishes the work.
func TestCrashAnywhere(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
phases:
  - name: one
    steps: [{run: 'echo a1; sleep 0.05; echo a2'}, {name: two, run: 'echo b; sleep 0.05'}]
  - name: two
    steps: [{run: 'for i in 1 2 3 4 5; do echo line $i; done; sleep 0.05'}]
  - name: three
    steps: [{run: 'echo last'}]
`)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	// kills are made at least, and more until a third of them have cut a
	// session short: where the instants land depends on the machine's
	// speed, not only on the seed. most is a failsafe.
	const kills, most = 50, 500
	var resumed, finished, early int
	for i := 0; i < kills || resumed < kills/3; i++ {
		if i == most {
			t.Fatalf("only %d of %d kills landed inside a run: the test proves too little", resumed, i)
		}
		run := pipelineStart(t, dir, "run", "--new")
		// The instant of the kill, not a wait for something: a random
		// one in the first 250ms of the run (start-up, a step, a record,
		// the end).
		time.Sleep(time.Duration(rng.Int64N(int64(250 * time.Millisecond))))
		run.cmd.Process.Signal(syscall.SIGKILL)
		run.exit(t)
		awaitLocksFree(t, dir)
		sessions, _ := filepath.Glob(filepath.Join(dir, ".pipeline", "sessions", "2*"))
		if len(sessions) == 0 {
			// Killed before the first session was made: nothing to lose.
			early++
			continue
		}
		latest := sessions[len(sessions)-1]
		before := readable(t, latest)
		r := pipeline(t, dir, "resume")
		switch {
		case len(before) == 0 && r.code == exitUsage && strings.Contains(r.stderr, "no [paused running failed] session"):
			// Killed after the session's folder was made, before its
			// first event: nothing was recorded, there is nothing to
			// resume (a window that a busy machine makes wider).
			early++
			continue
		case r.code == 0:
			resumed++
		case r.code == exitUsage && (strings.Contains(r.stderr, "no paused, running or failed session") || strings.Contains(r.stderr, "is completed")):
			finished++ // the run had completed before the kill
		default:
			t.Fatalf("kill %d: resume exit %d: %s", i, r.code, r.stderr)
		}
		after := readable(t, latest)
		if !bytes.HasPrefix(after, before) {
			t.Fatalf("kill %d: events recorded before the kill were lost or changed", i)
		}
		if s := status(t, dir); s.Status != "completed" {
			t.Fatalf("kill %d: the session ended %+v", i, s)
		}
	}
	t.Logf("%d kills cut a session short and resume finished it; %d came after the end, %d before the start", resumed, finished, early)
}

// readable checks that every file of a session parses, and returns its
// event log.
func readable(t *testing.T, session string) []byte {
	t.Helper()
	for _, name := range []string{"meta.json", "state.json"} {
		content, err := os.ReadFile(filepath.Join(session, name))
		if os.IsNotExist(err) && name == "state.json" {
			continue
		}
		if err != nil || !json.Valid(content) {
			t.Fatalf("%s/%s is not readable: %v", session, name, err)
		}
	}
	events, err := os.ReadFile(filepath.Join(session, "events.jsonl"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for n, line := range bytes.Split(bytes.TrimSuffix(events, []byte("\n")), []byte("\n")) {
		if len(line) > 0 && !json.Valid(line) {
			t.Fatalf("%s events.jsonl line %d is not readable: %q", session, n+1, line)
		}
	}
	return events
}

// Regression: a session paused at a phase boundary (auto_advance: false)
// resumed from its snapshot, whose empty maps JSON had left out.
func TestResumeAtAPhaseBoundary(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nphases:\n  - {name: a, steps: [{run: 'echo a'}], auto_advance: false}\n  - {name: b, steps: [{run: 'echo b'}]}\n")
	if r := pipeline(t, dir, "run"); r.code != exitPaused {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	if r := pipeline(t, dir, "resume"); r.code != 0 {
		t.Fatalf("resume: exit %d, %s", r.code, r.stderr)
	}
	if s := status(t, dir); s.Status != "completed" || s.Phases[1].Status != "completed" {
		t.Fatalf("status %+v", s)
	}
}

// logs -f prints what a running session's steps write as they write it,
// and returns when the session stops.
func TestLogsFollow(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
phases:
  - name: a
    steps: [{run: 'echo first; while [ ! -f go-on ]; do sleep 0.05; done; echo second'}]
`)
	run := pipelineStart(t, dir, "run")
	run.await(t, "| first")
	follow := pipelineStart(t, dir, "logs", "-f")
	follow.await(t, "first")
	write(t, dir, "go-on", "")
	follow.await(t, "second")
	if code := run.exit(t); code != 0 {
		t.Fatalf("run: exit %d", code)
	}
	if code := follow.exit(t); code != 0 {
		t.Fatalf("logs -f: exit %d, %s", code, follow.stderr.String())
	}
}

// clean removes old finished sessions but keeps the newest of each
// pipeline and spec, and never a paused one.
func TestClean(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nphases: [{name: a, steps: [{run: 'true'}]}]\n")
	for i := 0; i < 3; i++ {
		if r := pipeline(t, dir, "run"); r.code != 0 {
			t.Fatalf("run: %d %s", r.code, r.stderr)
		}
	}
	write(t, filepath.Join(dir, "p"), "phases.yaml", "version: 1\nphases: [{name: a, steps: [{run: 'echo \"[CHECKPOINT] wait\"'}]}]\n")
	if r := pipeline(t, filepath.Join(dir, "p"), "run", "--state-dir", filepath.Join(dir, ".pipeline")); r.code != exitPaused {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	time.Sleep(10 * time.Millisecond) // the age to exceed, not a synchronisation
	r := pipeline(t, dir, "clean", "--older-than", "5ms", "--keep", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "2 session(s) removed") {
		t.Fatalf("clean: exit %d, %s %s", r.code, r.stdout, r.stderr)
	}
	var list []struct{ Status string }
	out := pipeline(t, dir, "sessions", "-o", "json")
	if err := json.Unmarshal([]byte(out.stdout), &list); err != nil || len(list) != 2 {
		t.Fatalf("sessions after clean: %v %s", err, out.stdout)
	}
	dirs, _ := filepath.Glob(filepath.Join(dir, ".pipeline", "sessions", "2*"))
	if len(dirs) != 2 {
		t.Fatalf("%d session folders left", len(dirs))
	}
}

// resume --phase jumps; complete marks a session done by hand.
func TestResumePhaseJumpAndComplete(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
phases:
  - {name: a, steps: [{run: 'echo "[CHECKPOINT] stop"'}]}
  - {name: b, steps: [{run: 'echo "[CHECKPOINT] stop b"'}]}
  - {name: c, steps: [{run: 'echo c > c.txt'}]}
`)
	if r := pipeline(t, dir, "run"); r.code != exitPaused {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	if r := pipeline(t, dir, "resume", "--phase", "nope"); r.code != exitUsage || !strings.Contains(r.stderr, "a, b, c") {
		t.Fatalf("resume --phase nope: %d %s", r.code, r.stderr)
	}
	if r := pipeline(t, dir, "resume", "--phase", "c"); r.code != 0 {
		t.Fatalf("resume --phase c: %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "c.txt")); err != nil {
		t.Fatal("phase c did not run")
	}
	s := status(t, dir)
	// The phase it paused in and the one it jumped over show as skipped.
	if s.Status != "completed" || s.Phases[0].Status != "skipped" || s.Phases[1].Status != "skipped" || s.Phases[2].Human != 1 {
		t.Fatalf("status %+v", s)
	}
	if r := pipeline(t, dir, "run", "--new"); r.code != exitPaused {
		t.Fatalf("run --new: %d %s", r.code, r.stderr)
	}
	id := status(t, dir).ID
	if r := pipeline(t, dir, "complete", id); r.code != 0 {
		t.Fatalf("complete: %d %s", r.code, r.stderr)
	}
	if s := status(t, dir, id); s.Status != "completed" {
		t.Fatalf("after complete: %+v", s)
	}
	if r := pipeline(t, dir, "resume", id); r.code != exitUsage || !strings.Contains(r.stderr, "nothing to resume") {
		t.Fatalf("resume of a completed session: %d %s", r.code, r.stderr)
	}
}

// A kill -9 of the runner: the step's leader dies with it (parent-death
// signal); what the step started is stopped by the next run.
func TestOrphansOfAKilledRunnerAreStopped(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
phases:
  - name: a
    steps: [{run: 'if [ -f again ]; then echo quick; exit 0; fi; : > again; sleep 600 & echo "child $!"; wait'}]
`)
	run := pipelineStart(t, dir, "run")
	pid := run.awaitPID(t, "child ")
	run.cmd.Process.Signal(syscall.SIGKILL)
	run.exit(t)
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the child died with the runner already (%v): this test proves nothing", err)
	}
	r := pipeline(t, dir, "resume")
	// Found by the step's process group, or (killed before the group was
	// recorded) by the session's mark in its environment.
	if r.code != 0 || !strings.Contains(r.stderr, "stopped what the last runner's step left running") &&
		!strings.Contains(r.stderr, "the last runner's steps left running outside their process group") {
		t.Fatalf("resume: exit %d, %s", r.code, r.stderr)
	}
	proctest.AwaitExit(t, pid)
}

// Every session command prints JSON with --output json.
func TestSessionCommandsPrintJSON(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nphases:\n  - {name: a, steps: [{run: '[ -f again ] || { : > again; echo \"[CHECKPOINT] halt\"; }'}]}\n  - {name: b, steps: [{run: 'echo done'}]}\n")
	decode := func(r result, v any) {
		t.Helper()
		if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
			t.Fatalf("not JSON (exit %d): %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
		}
	}
	var s statusJSON
	r := pipeline(t, dir, "run", "-o", "json")
	decode(r, &s)
	if r.code != exitPaused || s.Status != "paused" || s.PauseReason != "checkpoint" || !strings.Contains(r.stderr, "[CHECKPOINT] halt") {
		t.Fatalf("run -o json: exit %d, %+v, stderr %s", r.code, s, r.stderr)
	}
	var answer map[string]string
	decode(pipeline(t, dir, "pause", "--notes", "n", "-o", "json"), &answer)
	if answer["session"] != s.ID || answer["result"] != "paused, notes added" {
		t.Fatalf("pause -o json: %v", answer)
	}
	r = pipeline(t, dir, "resume", "-o", "json")
	decode(r, &s)
	if r.code != 0 || s.Status != "completed" {
		t.Fatalf("resume -o json: exit %d, %+v", r.code, s)
	}
	var piece map[string]any
	logs := pipeline(t, dir, "logs", "-o", "json")
	lines := strings.Split(strings.TrimSpace(logs.stdout), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &piece); err != nil || piece["transcript"] != "b/1-run.log" || piece["text"] != "done\n" {
		t.Fatalf("logs -o json: %v %q", err, logs.stdout)
	}
	decode(pipeline(t, dir, "complete", s.ID, "-o", "json"), &answer)
	if answer["result"] != "completed" {
		t.Fatalf("complete -o json: %v", answer)
	}
	var cleaned struct {
		Removed []string `json:"removed"`
		DryRun  bool     `json:"dry_run"`
	}
	decode(pipeline(t, dir, "clean", "--older-than", "1h", "--dry-run", "-o", "json"), &cleaned)
	if !cleaned.DryRun || cleaned.Removed == nil {
		t.Fatalf("clean -o json: %+v", cleaned)
	}
}

// Regression: status wrote a snapshot (and the index) of a session whose
// runner died, and a read opened the event log for writing. The commands
// that only read sessions never write to the store: the tree is the same,
// byte for byte and time for time, before and after them, for a paused
// session and for one whose runner was killed.
func TestReadCommandsNeverWrite(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
phases:
  - name: one
    steps: [{run: 'echo "[CHECKPOINT] look"; sleep 30'}]
`)
	if r := pipeline(t, dir, "run", "--grace", "1s"); r.code != exitPaused {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	readAll := func() {
		for _, args := range [][]string{{"status"}, {"status", "-v"}, {"status", "-o", "json"}, {"sessions"},
			{"sessions", "-o", "json"}, {"logs"}, {"logs", "-o", "json"}} {
			if r := pipeline(t, dir, args...); r.code != 0 {
				t.Fatalf("%v: exit %d, %s", args, r.code, r.stderr)
			}
		}
	}
	before := filetree.Of(t, filepath.Join(dir, ".pipeline"))
	readAll()
	if after := filetree.Of(t, filepath.Join(dir, ".pipeline")); !maps.Equal(before, after) {
		t.Errorf("reading a paused session wrote to the store:\nbefore %v\nafter  %v", before, after)
	}

	// A runner killed while its step runs leaves a session marked running.
	write(t, dir, "phases.yaml", `version: 1
phases:
  - name: one
    steps: [{run: 'echo started; sleep 30'}]
`)
	run := pipelineStart(t, dir, "run", "--new")
	run.await(t, "| started")
	run.cmd.Process.Kill()
	run.exit(t)
	before = filetree.Of(t, filepath.Join(dir, ".pipeline"))
	readAll()
	if s := status(t, dir); s.Status != "paused" || s.PauseReason != "runner-died" {
		t.Errorf("a killed runner's session shows as %+v", s)
	}
	if after := filetree.Of(t, filepath.Join(dir, ".pipeline")); !maps.Equal(before, after) {
		t.Errorf("reading a crashed session wrote to the store:\nbefore %v\nafter  %v", before, after)
	}

	// A runner that died between its last event and its snapshot: the
	// log says completed, the snapshot and the index lag behind.
	id := completedWithALaggingSnapshot(t, dir, "--new")
	before = filetree.Of(t, filepath.Join(dir, ".pipeline"))
	readAll()
	if s := status(t, dir, id); s.Status != "completed" {
		t.Errorf("the replayed log says %q, want completed", s.Status)
	}
	if after := filetree.Of(t, filepath.Join(dir, ".pipeline")); !maps.Equal(before, after) {
		t.Errorf("reading a session whose snapshot lags wrote to the store:\nbefore %v\nafter  %v", before, after)
	}
}

// completedWithALaggingSnapshot runs a session of a new pipeline in dir
// to a pause, resumes it to its end, then puts back the snapshot of the
// pause: the store as a runner killed between its last event and its
// snapshot leaves it. It returns the session's id.
func completedWithALaggingSnapshot(t *testing.T, dir string, runFlags ...string) string {
	t.Helper()
	write(t, dir, "phases.yaml", "version: 1\nphases: [{name: one, steps: [{run: 'echo \"[CHECKPOINT] look\"; sleep 30'}]}, {name: two, steps: [{run: 'true'}]}]\n")
	if r := pipeline(t, dir, append([]string{"run", "--grace", "1s"}, runFlags...)...); r.code != exitPaused {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	id := status(t, dir).ID
	folder := filepath.Join(dir, ".pipeline", "sessions", id)
	atPause, ok := snapshotOf(t, folder)
	if !ok {
		t.Fatal("the paused session has no snapshot")
	}
	write(t, dir, "phases.yaml", "version: 1\nphases: [{name: one, steps: [{run: 'true'}]}, {name: two, steps: [{run: 'true'}]}]\n")
	if r := pipeline(t, dir, "resume"); r.code != 0 {
		t.Fatalf("resume: exit %d, %s", r.code, r.stderr)
	}
	// A long session's stops are written to state.json after the event:
	// its log has no states, its state.json is the pause's.
	stripStates(t, folder)
	if err := os.WriteFile(filepath.Join(folder, "state.json"), atPause, 0o600); err != nil {
		t.Fatal(err)
	}
	return id
}

// Regression (found by make soak): a runner that died between its last
// event (completed) and its snapshot left the index saying paused; run
// took the index's word, opened the completed session to resume it, and
// exited 2 "nothing to resume". It brings the index up to date under the
// lock and starts a new session.
func TestRunAfterALaggingSnapshotStartsANewSession(t *testing.T) {
	dir := t.TempDir()
	id := completedWithALaggingSnapshot(t, dir)
	// The index as if the runner died before writing it, too.
	index := filepath.Join(dir, ".pipeline", "index.tsv")
	content, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	var pausedLine string
	for _, line := range strings.SplitAfter(string(content), "\n") {
		if strings.Contains(line, "\tpaused\t") {
			pausedLine = line
		}
	}
	if pausedLine == "" {
		t.Fatalf("no paused line in the index:\n%s", content)
	}
	if err := os.WriteFile(index, []byte(string(content)+pausedLine), 0o600); err != nil {
		t.Fatal(err)
	}
	var list []struct{ ID, Status string }
	if err := json.Unmarshal([]byte(pipeline(t, dir, "sessions", "-o", "json").stdout), &list); err != nil || len(list) != 1 || list[0].Status != "paused" {
		t.Fatalf("the test needs an index that says paused: %+v %v", list, err)
	}
	r := pipeline(t, dir, "run")
	if r.code != 0 || strings.Contains(r.stderr, "resuming") {
		t.Errorf("run after a lagging snapshot: exit %d, %s", r.code, r.stderr)
	}
	list = nil
	if err := json.Unmarshal([]byte(pipeline(t, dir, "sessions", "-o", "json").stdout), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Status != "completed" || list[1].ID != id || list[1].Status != "completed" {
		t.Errorf("sessions after run: %+v", list)
	}
}

// After a kill -9 of the runner, a daemon a step started with setsid
// (out of the step's process group, so the recorded group misses it) is
// found by the session's mark and stopped: by resume, which opens that
// session, and by run --new, which opens another one of the same pipeline
// and spec.
func TestSetsidDaemonsOfAKilledRunnerAreStopped(t *testing.T) {
	for _, next := range [][]string{{"resume"}, {"run", "--new"}} {
		t.Run(strings.Join(next, " "), func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "phases.yaml", `version: 1
phases:
  - name: a
    steps: [{run: 'if [ -f again ]; then exit 0; fi; : > again; setsid sleep 600 & echo "daemon $!"; sleep 600'}]
`)
			run := pipelineStart(t, dir, "run")
			pid := run.awaitPID(t, "daemon ")
			run.cmd.Process.Signal(syscall.SIGKILL)
			run.exit(t)
			if err := syscall.Kill(pid, 0); err != nil {
				t.Fatalf("the daemon died with the runner already (%v): this test proves nothing", err)
			}
			r := pipeline(t, dir, next...)
			if r.code != 0 || !strings.Contains(r.stderr, "outside their process group") {
				t.Fatalf("%v: exit %d, %s", next, r.code, r.stderr)
			}
			proctest.AwaitExit(t, pid)
		})
	}
}
