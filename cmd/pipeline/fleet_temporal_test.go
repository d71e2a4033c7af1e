//go:build temporal

package main

// End-to-end tests of the Temporal backend: a real dev server (the
// temporal CLI named by PIPELINE_TEMPORAL_CLI), two real pipeline worker
// processes of the built binary (each hands itself over to
// pipeline-temporal, built beside it), and the session commands with
// --backend temporal (or its environment variables, or the backend:
// block of phases.yaml).

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine/temporal"
	"github.com/pipeline-dev/pipeline/internal/proctest"
	"github.com/pipeline-dev/pipeline/internal/temporaltest"
)

// fleetShared is the dev server the fleet tests share (one start for
// the file, not one per test): each test has task queues and folders of
// its own, so the tests stay independent. It is stopped after the last
// test (afterTests), and the kernel kills it if the test binary dies
// first.
var fleetShared struct {
	once sync.Once
	s    *temporaltest.DevServer
	err  error
}

// fleetServer is the shared dev server, started by the first test that
// asks for it.
func fleetServer(t *testing.T) *temporaltest.DevServer {
	t.Helper()
	fleetShared.once.Do(func() {
		dir, err := os.MkdirTemp("", "pipeline-temporal-")
		if err != nil {
			fleetShared.err = err
			return
		}
		s, err := temporaltest.Start(dir)
		fleetShared.s, fleetShared.err = s, err
		afterTests = append(afterTests, func() error {
			var err error
			if s != nil {
				err = s.Stop()
			}
			return errors.Join(err, os.RemoveAll(dir))
		})
	})
	if fleetShared.err != nil {
		t.Fatalf("temporal dev server: %v", fleetShared.err)
	}
	return fleetShared.s
}

// fleetWorker is a pipeline worker process of the built binary.
type fleetWorker struct {
	cmd *exec.Cmd
	// name is how a step's result in the history names it (host/pid);
	// identity how the server names its poller (pid@host@).
	name, identity string
	log            *workerLog
	exited         chan struct{}
}

func (w *fleetWorker) pid() int { return w.cmd.Process.Pid }

// workerLog keeps what a worker prints, and says when it has said that
// it serves its task queue.
type workerLog struct {
	mu      sync.Mutex
	buf     strings.Builder
	line    strings.Builder
	serving chan string
}

func (l *workerLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for _, b := range p {
		if b != '\n' {
			l.line.WriteByte(b)
			continue
		}
		if line := l.line.String(); l.serving != nil && strings.Contains(line, "serving namespace") {
			l.serving <- line
			l.serving = nil
		}
		l.line.Reset()
	}
	return len(p), nil
}

func (l *workerLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// fleetWorkers starts n pipeline worker processes of the built binary on
// the task queue, and returns once each says what it serves. Each is
// stopped (SIGTERM) when the test ends, unless the test killed it.
func fleetWorkers(t *testing.T, s *temporaltest.DevServer, queue string, n int) []*fleetWorker {
	t.Helper()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	var ws []*fleetWorker
	for i := range n {
		cmd := exec.Command(binary, "worker", "--temporal", s.HostPort(), "--task-queue", queue, "--grace", "1s")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		serving := make(chan string, 1)
		log := &workerLog{serving: serving}
		cmd.Stderr = log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w := &fleetWorker{cmd: cmd, log: log, exited: make(chan struct{}),
			name: fmt.Sprintf("%s/%d", host, cmd.Process.Pid), identity: fmt.Sprintf("%d@%s@", cmd.Process.Pid, host)}
		go func() {
			cmd.Wait()
			close(w.exited)
		}()
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			<-w.exited
		})
		select {
		case line := <-serving:
			if !strings.Contains(line, "task queue "+queue) {
				t.Fatalf("worker %d serves another queue: %q", i, line)
			}
		case <-w.exited:
			t.Fatalf("worker %d exited (%v):\n%s", i, cmd.ProcessState, log.String())
		case <-time.After(failsafe):
			t.Fatalf("worker %d said nothing in %v:\n%s", i, failsafe, log.String())
		}
		ws = append(ws, w)
	}
	return ws
}

// fleetClient dials the dev server, closed when the test ends.
func fleetClient(t *testing.T, s *temporaltest.DevServer) *temporal.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	c, err := temporal.NewClient(ctx, temporal.Target{Address: s.HostPort()}.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// fleetProject writes phases.yaml in a new folder.
func fleetProject(t *testing.T, yaml string) string {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "phases.yaml", yaml)
	return dir
}

func fleetStatusJSON(t *testing.T, dir string, env []string, args ...string) statusJSON {
	t.Helper()
	r := pipelineEnv(t, dir, env, append([]string{"status", "-o", "json"}, args...)...)
	if r.code != 0 {
		t.Fatalf("status: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	return decodeStatus(t, r)
}

// awaitListed asks sessions until it lists id: the server's list is
// eventually consistent, and no event says when it has caught up (so it
// asks again every 100ms, up to failsafe).
func awaitListed(t *testing.T, dir string, env []string, id string, args ...string) []app.SessionLine {
	t.Helper()
	deadline := time.Now().Add(failsafe)
	for {
		r := pipelineEnv(t, dir, env, append([]string{"sessions", "-o", "json"}, args...)...)
		if r.code != 0 {
			t.Fatalf("sessions: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		var list []app.SessionLine
		if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
			t.Fatalf("sessions -o json: %v\n%s", err, r.stdout)
		}
		for _, s := range list {
			if s.ID == id {
				return list
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("sessions never listed %s: %s", id, r.stdout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sessionIDIn finds the session id run printed as it started.
func sessionIDIn(t *testing.T, stderr string) string {
	t.Helper()
	for _, line := range strings.Split(stderr, "\n") {
		if rest, ok := strings.CutPrefix(line, "session "); ok && strings.Contains(rest, " started on the Temporal fleet") {
			return strings.Fields(rest)[0]
		}
	}
	t.Fatalf("run named no session:\n%s", stderr)
	return ""
}

// A pipeline of run: steps completes through run --backend temporal
// (exit 0) on two workers; status --backend temporal -o json says so,
// answered from the closed workflow; sessions --backend temporal lists
// it; logs prints its steps' transcripts, which the workers wrote beside
// phases.yaml.
func TestFleetRunCompletes(t *testing.T) {
	s := fleetServer(t)
	queue := "q-" + strings.ToLower(t.Name())
	fleetWorkers(t, s, queue, 2)
	dir := fleetProject(t, `version: 1
phases:
  - name: build
    steps: [{name: compile, run: "echo compiled on $PIPELINE_PHASE"}]
  - name: test
    steps: [{name: unit, run: "echo tests pass"}]
`)
	flags := []string{"--backend", "temporal", "--temporal", s.HostPort(), "--task-queue", queue}
	r := pipeline(t, dir, append([]string{"run"}, flags...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "completed: 2 phases") {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := sessionIDIn(t, r.stderr)
	st := fleetStatusJSON(t, dir, nil, append([]string{id}, flags...)...)
	if st.ID != id || st.Status != "completed" || len(st.Phases) != 2 || st.Phases[1].Status != "completed" {
		t.Fatalf("status: %+v", st)
	}
	// Without the SESSION: the newest of this pipeline.
	if st := fleetStatusJSON(t, dir, nil, flags...); st.ID != id {
		t.Fatalf("status of the pipeline's latest session: %s, want %s", st.ID, id)
	}
	list := awaitListed(t, dir, nil, id, flags...)
	if len(list) != 1 || list[0].Status != "completed" || list[0].Pipeline != filepath.Base(dir) {
		t.Fatalf("sessions: %+v", list)
	}
	r = pipeline(t, dir, append([]string{"logs", id}, flags...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "compiled on build") || !strings.Contains(r.stdout, "tests pass") {
		t.Fatalf("logs: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// A checkpoint pauses the session (run exits 3); status --backend
// temporal shows the checkpoint; pause --notes on the paused session
// and resume --notes continue it to the end (exit 0), and both notes
// reach the agent's next prompt. The backend comes from the backend:
// block of phases.yaml.
func TestFleetCheckpointThenResumeWithNotes(t *testing.T) {
	s := fleetServer(t)
	queue := "q-" + strings.ToLower(t.Name())
	fleetWorkers(t, s, queue, 2)
	// The agent saves each prompt it is sent, and stops at a checkpoint
	// until a prompt carries the human's notes.
	dir := fleetProject(t, fmt.Sprintf(`version: 1
backend: {kind: temporal, address: %q, task_queue: %q, heartbeat_timeout: 2s}
agent:
  kind: command
  command: [sh, -c, 'n=$(ls prompt-*.txt 2>/dev/null | wc -l); printf "%%s" "$0" > prompt-$n.txt; case "$0" in *"use the v2 API"*) echo "[DONE] design";; *) echo "[CHECKPOINT] API drafted";; esac', "{prompt}"]
phases:
  - name: design
    prompt: Design the API.
  - name: build
    steps: [{run: "echo built"}]
`, s.HostPort(), queue))
	r := pipeline(t, dir, "run")
	if r.code != 3 || !strings.Contains(r.stdout, "paused: checkpoint") {
		t.Fatalf("run: exit %d, want 3 (paused)\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := sessionIDIn(t, r.stderr)
	st := fleetStatusJSON(t, dir, nil)
	if st.ID != id || st.Status != "paused" || st.PauseReason != "checkpoint" || st.PauseNote != "API drafted" || st.Phase != "design" {
		t.Fatalf("status: %+v", st)
	}
	// The same pause as text, as a local status prints it.
	r = pipeline(t, dir, "status")
	if r.code != 0 || !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "paused") ||
		!strings.Contains(r.stdout, "checkpoint") || !strings.Contains(r.stdout, "API drafted") {
		t.Fatalf("status (text): exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = pipeline(t, dir, "pause", "--notes", "mind the rate limits")
	if r.code != 0 || !strings.Contains(r.stdout, "paused, notes added") {
		t.Fatalf("pause --notes on a paused session: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = pipeline(t, dir, "resume", "--notes", "use the v2 API")
	if r.code != 0 || !strings.Contains(r.stdout, "completed: 2 phases") {
		t.Fatalf("resume: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
	second, err := os.ReadFile(filepath.Join(dir, "prompt-1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(second), "use the v2 API") || !strings.Contains(string(second), "mind the rate limits") {
		t.Fatalf("the prompt after the resume lacks the notes:\n%s", second)
	}
	st = fleetStatusJSON(t, dir, nil, id)
	if st.Status != "completed" || len(st.Phases[0].Notes) != 2 {
		t.Fatalf("status after the resume: %+v", st)
	}
}

// pause --backend temporal stops a running step on its worker and the
// session pauses: run, which was following it, exits 3; status says who
// paused it, with the notes. resume --notes (a signal) runs the step
// again, to its end this time, and the session completes with the notes
// in its history. The backend comes from the environment.
func TestFleetPauseAndResumeBySignal(t *testing.T) {
	s := fleetServer(t)
	queue := "q-" + strings.ToLower(t.Name())
	fleetWorkers(t, s, queue, 2)
	env := append(os.Environ(), "PIPELINE_BACKEND=temporal", "PIPELINE_TEMPORAL="+s.HostPort(), "PIPELINE_TEMPORAL_TASK_QUEUE="+queue)
	dir := fleetProject(t, `version: 1
backend: {heartbeat_timeout: 2s}
phases:
  - name: build
    steps: [{run: "echo $$ >> started; while [ ! -f go ]; do sleep 0.05; done; echo $$ >> finished"}]
`)
	run := exec.Command(binary, "run")
	run.Dir, run.Env = dir, env
	var stdout, stderr strings.Builder
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Process.Kill() })
	first := awaitLines(t, filepath.Join(dir, "started"), 1, "the step's start")[0]
	r := pipelineEnv(t, dir, env, "pause", "--notes", "hold on")
	if r.code != 0 || !strings.Contains(r.stdout, "paused") {
		t.Fatalf("pause: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	err := run.Wait()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 3 {
		t.Fatalf("run: %v, want exit 3\n%s%s", err, stdout.String(), stderr.String())
	}
	st := fleetStatusJSON(t, dir, env)
	if st.Status != "paused" || st.PauseReason != "paused-by-human" || st.PauseNote != "hold on" {
		t.Fatalf("status: %+v", st)
	}
	// The pause stopped the step: it is gone, and never reached its end.
	proctest.AwaitExit(t, atoi(t, first)) // the paused step
	if _, err := os.Stat(filepath.Join(dir, "finished")); err == nil {
		t.Fatal("the step ran to its end: it was not stopped")
	}
	list := awaitListed(t, dir, env, st.ID, "--active")
	if len(list) != 1 || list[0].Status != "paused" || list[0].PauseReason != "paused-by-human" {
		t.Fatalf("sessions --active: %+v", list)
	}
	write(t, dir, "go", "")
	r = pipelineEnv(t, dir, env, "resume", "--notes", "the API is back")
	if r.code != 0 || !strings.Contains(r.stdout, "completed: 1 phase") {
		t.Fatalf("resume: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
	started := awaitLines(t, filepath.Join(dir, "started"), 2, "the step run again")
	if finished := awaitLines(t, filepath.Join(dir, "finished"), 1, "the step's end"); len(finished) != 1 || finished[0] != started[1] {
		t.Fatalf("finished by %v, want the step run again (%s) only", finished, started[1])
	}
	st = fleetStatusJSON(t, dir, env, st.ID)
	if st.Status != "completed" || !slices.Contains(st.Phases[0].Notes, "hold on") || !slices.Contains(st.Phases[0].Notes, "the API is back") {
		t.Fatalf("status after the resume: %+v", st)
	}
}

// pipeline watch --backend temporal resumes a paused session when its
// spec changes: the new plan source goes with the resume, and the spec's
// diff reaches the agent's next prompt.
func TestFleetWatchResumesOnSpecEdit(t *testing.T) {
	s := fleetServer(t)
	queue := "q-" + strings.ToLower(t.Name())
	fleetWorkers(t, s, queue, 2)
	dir := fleetProject(t, fmt.Sprintf(`version: 1
backend: {kind: temporal, address: %q, task_queue: %q, heartbeat_timeout: 2s}
spec: spec.md
agent:
  kind: command
  command: [sh, -c, 'n=$(ls prompt-*.txt 2>/dev/null | wc -l); printf "%%s" "$0" > prompt-$n.txt; case "$0" in *"endpoint v2"*) echo ok;; *) echo "[CHECKPOINT] which endpoint?";; esac', "{prompt}"]
phases:
  - name: design
    prompt: Design the client.
`, s.HostPort(), queue))
	write(t, dir, "spec.md", "# Client\n\nCall the endpoint.\n")
	r := pipeline(t, dir, "run")
	if r.code != 3 {
		t.Fatalf("run: exit %d, want 3\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := sessionIDIn(t, r.stderr)
	watch := exec.Command(binary, "watch")
	watch.Dir = dir
	stdout, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		watch.Process.Signal(syscall.SIGTERM)
		watch.Wait()
	})
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	awaitLine := func(want string) {
		t.Helper()
		timeout := time.After(failsafe)
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("watch ended before %q", want)
				}
				if strings.Contains(line, want) {
					return
				}
			case <-timeout:
				t.Fatalf("watch never said %q", want)
			}
		}
	}
	awaitLine("watching:")
	write(t, dir, "spec.md", "# Client\n\nCall the endpoint v2.\n")
	awaitLine("session " + id + " resumed")
	// The server's status: no event reaches the test, it asks.
	deadline := time.Now().Add(failsafe)
	for {
		if st := fleetStatusJSON(t, dir, nil, id); st.Status == "completed" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the session did not complete after the resume: %+v", st)
		}
		time.Sleep(100 * time.Millisecond)
	}
	prompt, err := os.ReadFile(filepath.Join(dir, "prompt-1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(prompt), "+Call the endpoint v2.") {
		t.Fatalf("the prompt after the resume lacks the spec's diff:\n%s", prompt)
	}
}

// awaitLines waits until the file at path holds at least n lines, and
// returns them, looking each time its folder is written: the steps write
// it.
func awaitLines(t *testing.T, path string, n int, why string) []string {
	t.Helper()
	var lines []string
	awaitWritten(t, filepath.Dir(path), fmt.Sprintf("%s: %d lines in %s", why, n, path), func() bool {
		// Whole lines only: a writer may be half-way through one.
		data, _ := os.ReadFile(path)
		lines = strings.Split(string(data), "\n")
		return len(lines) > n
	})
	return lines[:len(lines)-1]
}

// versionMarkers counts the version markers of the history of session
// id's current run.
func versionMarkers(t *testing.T, c *temporal.Client, id string) int {
	t.Helper()
	n := 0
	it := c.C.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", id, err)
		}
		if ev.GetMarkerRecordedEventAttributes().GetMarkerName() == "Version" {
			n++
		}
	}
	return n
}

// activityAttempt is one activity of a session as its history holds it:
// the poller (worker identity) that started it and how it ended.
type activityAttempt struct {
	kind, identity, outcome string
}

// activityAttempts reads the activities of session id from the history
// of its current run.
func activityAttempts(t *testing.T, c *temporal.Client, id string) []activityAttempt {
	t.Helper()
	var out []activityAttempt
	index := map[int64]int{}
	it := c.C.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", id, err)
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			index[ev.GetEventId()] = len(out)
			out = append(out, activityAttempt{kind: a.GetActivityType().GetName()})
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			out[index[a.GetScheduledEventId()]].identity = a.GetIdentity()
		}
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil {
			out[index[a.GetScheduledEventId()]].outcome = "completed"
		}
		if a := ev.GetActivityTaskFailedEventAttributes(); a != nil {
			out[index[a.GetScheduledEventId()]].outcome = "failed"
		}
		if a := ev.GetActivityTaskTimedOutEventAttributes(); a != nil {
			out[index[a.GetScheduledEventId()]].outcome = "timed out: " + a.GetFailure().GetTimeoutFailureInfo().GetTimeoutType().String()
		}
	}
	return out
}

// 20 pipelines started at once on two workers all complete: each run
// exits 0, each session's status is completed, and both workers ran
// steps (each step's result in the history names its worker).
func TestFleetTwentyPipelinesAtOnce(t *testing.T) {
	s := fleetServer(t)
	queue := "q-" + strings.ToLower(t.Name())
	ws := fleetWorkers(t, s, queue, 2)
	flags := []string{"--backend", "temporal", "--temporal", s.HostPort(), "--task-queue", queue}
	const n = 20
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = fleetProject(t, fmt.Sprintf(`version: 1
phases:
  - name: build
    steps: [{name: compile, run: "echo built %[1]d"}, {name: link, run: "echo linked %[1]d"}]
  - name: test
    steps: [{run: "echo tested %[1]d"}]
`, i))
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i, dir := range dirs {
		wg.Go(func() {
			cmd := exec.Command(binary, append([]string{"run"}, flags...)...)
			cmd.Dir = dir
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			results[i] = result{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
			if err != nil && cmd.ProcessState == nil {
				results[i] = result{stderr: err.Error(), code: -1}
			}
		})
	}
	wg.Wait()
	c := fleetClient(t, s)
	ran := map[string]int{}
	for i, r := range results {
		if r.code != 0 || !strings.Contains(r.stdout, "completed: 2 phases") {
			t.Fatalf("run %d: exit %d\n%s%s", i, r.code, r.stdout, r.stderr)
		}
		id := sessionIDIn(t, r.stderr)
		if st := fleetStatusJSON(t, dirs[i], nil, append([]string{id}, flags...)...); st.Status != "completed" || len(st.Phases) != 2 {
			t.Fatalf("run %d: status %+v", i, st)
		}
		h, err := c.History(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Steps) != 3 {
			t.Fatalf("run %d: %d steps in the history, want 3: %+v", i, len(h.Steps), h.Steps)
		}
		for _, step := range h.Steps {
			ran[step.Worker]++
		}
	}
	if ran[ws[0].name] == 0 || ran[ws[1].name] == 0 || ran[ws[0].name]+ran[ws[1].name] != 3*n {
		t.Fatalf("steps per worker: %v; want both of %s and %s, %d in all", ran, ws[0].name, ws[1].name, 3*n)
	}
	t.Logf("steps per worker: %v", ran)
}

// A worker killed with SIGKILL mid-step loses nothing: the server takes
// it for lost at the heartbeat timeout (2s here), the workflow records
// Recovered, the step runs again on the other worker, and the pipeline
// completes. The killed worker's step, and what that step started in the
// background, do not live on to write anything.
func TestFleetWorkerKilledMidStep(t *testing.T) {
	s := fleetServer(t)
	queue := "q-" + strings.ToLower(t.Name())
	ws := fleetWorkers(t, s, queue, 2)
	flags := []string{"--backend", "temporal", "--temporal", s.HostPort(), "--task-queue", queue}
	// The step says which worker runs it (its parent), starts a
	// background process, and waits for the file go; both write when
	// they see it.
	dir := fleetProject(t, `version: 1
backend: {heartbeat_timeout: 2s}
phases:
  - name: build
    steps:
      - run: |
          sh -c 'echo $$ >> background; while [ ! -f go ]; do sleep 0.05; done; echo $$ >> late' &
          echo "$$ $PPID" >> attempts
          while [ ! -f go ]; do sleep 0.05; done
          echo $$ >> finished
  - name: test
    steps: [{run: "echo tests pass"}]
`)
	run := exec.Command(binary, append([]string{"run"}, flags...)...)
	run.Dir = dir
	var stdout, stderr strings.Builder
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Process.Kill() })

	first := strings.Fields(awaitLines(t, filepath.Join(dir, "attempts"), 1, "the step's first attempt")[0])
	var a, b *fleetWorker
	switch first[1] {
	case fmt.Sprint(ws[0].pid()):
		a, b = ws[0], ws[1]
	case fmt.Sprint(ws[1].pid()):
		a, b = ws[1], ws[0]
	default:
		t.Fatalf("the step's parent is %s, neither worker (%d, %d)", first[1], ws[0].pid(), ws[1].pid())
	}
	stepA := atoi(t, first[0])
	backgroundA := atoi(t, awaitLines(t, filepath.Join(dir, "background"), 1, "the first attempt's background process")[0])
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.exited
	// The kernel kills the step with its worker (Pdeathsig).
	proctest.AwaitExit(t, stepA) // the killed worker's step

	second := strings.Fields(awaitLines(t, filepath.Join(dir, "attempts"), 2, "the step run again")[1])
	if second[1] != fmt.Sprint(b.pid()) {
		t.Fatalf("the step ran again under %s, not the other worker (%d)", second[1], b.pid())
	}
	// What the killed step left in the background was stopped when the
	// other worker opened the session in the same store (the dead
	// runner's process group is swept, as locally).
	proctest.AwaitExit(t, backgroundA) // the killed worker's step's background process
	write(t, dir, "go", "")
	err := run.Wait()
	if err != nil || !strings.Contains(stdout.String(), "completed: 2 phases") {
		t.Fatalf("run: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	if got := awaitLines(t, filepath.Join(dir, "finished"), 1, "the step's end"); len(got) != 1 || got[0] != second[0] {
		t.Fatalf("finished by %v, want the second attempt only (%s)", got, second[0])
	}
	if late, err := os.ReadFile(filepath.Join(dir, "late")); strings.Contains(string(late), fmt.Sprint(backgroundA)) {
		t.Fatalf("the killed step's background process wrote after its worker died: %q (%v)", late, err)
	}

	id := sessionIDIn(t, stderr.String())
	c := fleetClient(t, s)
	attempts := activityAttempts(t, c, id)
	if len(attempts) != 3 ||
		attempts[0] != (activityAttempt{temporal.ActivityRunStep, a.identity, "timed out: Heartbeat"}) ||
		attempts[1] != (activityAttempt{temporal.ActivityRunStep, b.identity, "completed"}) ||
		attempts[2] != (activityAttempt{temporal.ActivityRunStep, b.identity, "completed"}) {
		t.Fatalf("activities: %+v; want the step timed out on %s, then run on %s", attempts, a.identity, b.identity)
	}
	st := fleetStatusJSON(t, dir, nil, append([]string{id}, flags...)...)
	// The lost worker's run counts as an attempt: the rerun is attempt 2.
	if st.Status != "completed" || st.Phases[0].Status != "completed" || st.Phases[0].Attempts != 2 {
		t.Fatalf("status: %+v; want the build phase completed in 2 attempts", st)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

// The dev server restarted (same port, same database) while a session is
// paused at a checkpoint: the session is still there, paused, and
// resume --notes completes it, the notes in the agent's next prompt.
func TestFleetServerRestartedWhilePaused(t *testing.T) {
	// A server of its own: the restart is this test's.
	s := temporaltest.StartDevServer(t)
	queue := "q-" + strings.ToLower(t.Name())
	fleetWorkers(t, s, queue, 2)
	dir := fleetProject(t, fmt.Sprintf(`version: 1
backend: {kind: temporal, address: %q, task_queue: %q, heartbeat_timeout: 2s}
agent:
  kind: command
  command: [sh, -c, 'n=$(ls prompt-*.txt 2>/dev/null | wc -l); printf "%%s" "$0" > prompt-$n.txt; case "$0" in *"after the restart"*) echo "[DONE] design";; *) echo "[CHECKPOINT] API drafted";; esac', "{prompt}"]
phases:
  - name: design
    prompt: Design the API.
  - name: build
    steps: [{run: "echo built"}]
`, s.HostPort(), queue))
	r := pipeline(t, dir, "run")
	if r.code != 3 || !strings.Contains(r.stdout, "paused: checkpoint") {
		t.Fatalf("run: exit %d, want 3 (paused)\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := sessionIDIn(t, r.stderr)
	s.Restart(t)
	if st := fleetStatusJSON(t, dir, nil, id); st.Status != "paused" || st.PauseReason != "checkpoint" {
		t.Fatalf("status after the restart: %+v", st)
	}
	r = pipeline(t, dir, "resume", "--notes", "go on after the restart")
	if r.code != 0 || !strings.Contains(r.stdout, "completed: 2 phases") {
		t.Fatalf("resume after the restart: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
	prompt, err := os.ReadFile(filepath.Join(dir, "prompt-1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(prompt), "go on after the restart") {
		t.Fatalf("the prompt after the resume lacks the notes:\n%s", prompt)
	}
	if st := fleetStatusJSON(t, dir, nil, id); st.Status != "completed" {
		t.Fatalf("status: %+v", st)
	}
}

// Two sessions of one pipeline and spec may run at once on a fleet (a
// paused one resumed while a run --new one runs): the workers' store
// keeps each apart, and neither is refused as already running.
func TestFleetTwoSessionsOfOnePipelineAtOnce(t *testing.T) {
	s := fleetServer(t)
	queue := "q-" + strings.ToLower(t.Name())
	fleetWorkers(t, s, queue, 1)
	env := append(os.Environ(), "PIPELINE_BACKEND=temporal", "PIPELINE_TEMPORAL="+s.HostPort(), "PIPELINE_TEMPORAL_TASK_QUEUE="+queue)
	dir := fleetProject(t, `version: 1
phases:
  - name: build
    steps: [{run: "echo started >> log-$PIPELINE_SESSION; if [ ! -f first-paused ]; then touch first-paused; echo '[CHECKPOINT] wait'; exit 0; fi; while [ ! -f go ]; do sleep 0.05; done"}]
    pause_when: {checkpoint: checkpoint}
`)
	if r := pipelineEnv(t, dir, env, "run"); r.code != exitPaused {
		t.Fatalf("run: exit %d, want 3\n%s%s", r.code, r.stdout, r.stderr)
	}
	first := fleetStatusJSON(t, dir, env).ID
	second := exec.Command(binary, "run", "--new")
	second.Dir, second.Env = dir, env
	var out strings.Builder
	second.Stdout, second.Stderr = &out, &out
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { second.Process.Kill() })
	// The second session's step runs (and holds on) on the worker.
	awaitNames(t, dir, "second's step", func(names []string) bool {
		return slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "log-") && n != "log-"+first })
	})
	resume := exec.Command(binary, "resume", first, "--notes", "go on")
	resume.Dir, resume.Env = dir, env
	var resumed strings.Builder
	resume.Stdout, resume.Stderr = &resumed, &resumed
	if err := resume.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resume.Process.Kill() })
	// Both steps run at once on the one worker before either may end.
	awaitLines(t, filepath.Join(dir, "log-"+first), 2, "the first session's step run again")
	write(t, dir, "go", "")
	if err := resume.Wait(); err != nil {
		t.Fatalf("resume of the first session while the second ran: %v, want exit 0\n%s", err, resumed.String())
	}
	if err := second.Wait(); err != nil {
		t.Fatalf("the second session: %v\n%s", err, out.String())
	}
}

// awaitNames waits until the folder's names satisfy ok, looking each
// time the folder changes.
func awaitNames(t *testing.T, dir, what string, ok func([]string) bool) {
	t.Helper()
	awaitWritten(t, dir, what, func() bool {
		entries, _ := os.ReadDir(dir)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return ok(names)
	})
}

// On two workers, a pipeline in a git work tree run on the fleet keeps a
// checkpoint ref per phase, runs its on: completed hook, and takes a pin
// made (pipeline memory pin) while it was paused into the next step's
// prompt: the effects are Decide's actions, carried out on the workers.
func TestFleetEffectsThroughTheCommandLine(t *testing.T) {
	s := fleetServer(t)
	queue := "q-" + strings.ToLower(t.Name())
	fleetWorkers(t, s, queue, 2)
	dir, env := gitRepo(t)
	write(t, dir, "phases.yaml", fmt.Sprintf(`version: 1
backend: {kind: temporal, address: %q, task_queue: %q, heartbeat_timeout: 2s}
agent:
  kind: command
  command: [sh, -c, 'n=$(ls prompt-*.txt 2>/dev/null | wc -l); printf "%%s" "$0" > prompt-$n.txt; echo "work $n" > work-$n.txt; if [ "$n" = 0 ]; then echo "[CHECKPOINT] design drafted"; else echo "[DONE] build"; fi', "{prompt}"]
on:
  paused: 'echo "$PIPELINE_REASON" > hook-paused.txt'
  completed: 'echo "$PIPELINE_SESSION $PIPELINE_STATUS" > hook-ran.txt'
phases:
  - name: design
    prompt: Design it.
  - name: build
    prompt: Build it.
`, s.HostPort(), queue))
	write(t, dir, ".gitignore", "prompt-*.txt\nhook-*.txt\n")
	gitOut(t, dir, env, "add", "-A")
	gitOut(t, dir, env, "commit", "-qm", "start")
	r := pipelineEnv(t, dir, env, "run")
	if r.code != exitPaused {
		t.Fatalf("run: exit %d, want 3\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := sessionIDIn(t, r.stderr)
	// The pause's hook ran on a worker before run returned, as locally.
	if paused, err := os.ReadFile(filepath.Join(dir, "hook-paused.txt")); err != nil || strings.TrimSpace(string(paused)) != "checkpoint" {
		t.Errorf("the on: paused hook, when run returned: %q, %v", paused, err)
	}
	// The pin goes to the session's workflow (phases.yaml names the
	// fleet); the working set shows it from there.
	if pin := pipelineEnv(t, dir, env, "memory", "pin", "--session", id, "the port is 8443"); pin.code != 0 || !regexp.MustCompile(`pinned: #[0-9]+ the port is 8443`).MatchString(pin.stdout) {
		t.Fatalf("memory pin: exit %d\n%s%s", pin.code, pin.stdout, pin.stderr)
	}
	if ws := pipelineEnv(t, dir, env, "memory", id); ws.code != 0 || !strings.Contains(ws.stdout, "the port is 8443") {
		t.Fatalf("memory: exit %d\n%s%s", ws.code, ws.stdout, ws.stderr)
	}
	// Here, its copy holds no working set: a change made here is refused
	// with the command to use.
	local := pipelineEnv(t, dir, env, "memory", "pin", "--backend", "local", "--session", id, "lost")
	if local.code != exitUsage || !strings.Contains(local.stderr, "memory pin --backend temporal") {
		t.Errorf("memory pin --backend local on a fleet session: exit %d\n%s", local.code, local.stderr)
	}
	if r := pipelineEnv(t, dir, env, "resume", id); r.code != 0 {
		t.Fatalf("resume: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
	build, err := os.ReadFile(filepath.Join(dir, "prompt-1.txt"))
	if err != nil || !strings.Contains(string(build), "the port is 8443") {
		t.Errorf("the build step's prompt lacks the pin made while paused (%v):\n%s", err, build)
	}
	refs := gitOut(t, dir, env, "for-each-ref", "--format=%(refname)", "refs/pipeline/"+id+"/")
	for _, phase := range []string{"design", "build"} {
		if !strings.Contains(refs, "-"+phase+"\n") && !strings.HasSuffix(refs, "-"+phase) {
			t.Errorf("no checkpoint ref of phase %s:\n%s", phase, refs)
		}
	}
	// The build phase's checkpoint holds what its step wrote.
	if files := gitOut(t, dir, env, "ls-tree", "-r", "--name-only", "refs/pipeline/"+id+"/02-build"); !strings.Contains(files, "work-1.txt") {
		t.Errorf("the build checkpoint lacks the step's file:\n%s", files)
	}
	// The hook ran on a worker as the workflow ended; resume waited for
	// it, as a local run does.
	hook, err := os.ReadFile(filepath.Join(dir, "hook-ran.txt"))
	if err != nil || strings.TrimSpace(string(hook)) != id+" completed" {
		t.Errorf("the on: completed hook: %q, %v", hook, err)
	}
}
