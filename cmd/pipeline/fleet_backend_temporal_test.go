//go:build temporal

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// storeListing is every file of the session folders of dir's store with
// its size: what a command wrote there shows as a difference.
func storeListing(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	root := filepath.Join(dir, ".pipeline", "sessions")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d\n", strings.TrimPrefix(path, root), info.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A session run on the fleet is known as one by the local commands
// (no --backend): status and sessions say where it runs, in text and
// JSON, never paused (runner-died); resume, pause, complete, rewind and
// export refuse it with exit 2 and the command to use, and write
// nothing: no event in the local copy, no intervention on the fleet.
func TestFleetSessionKnownLocally(t *testing.T) {
	s := fleetServer(t)
	queue := "q-" + strings.ToLower(t.Name())
	fleetWorkers(t, s, queue, 1)
	dir := fleetProject(t, `version: 1
phases:
  - name: build
    steps: [{run: "echo run >> attempts; echo '[CHECKPOINT] look'"}]
    pause_when: {checkpoint: checkpoint}
  - name: test
    steps: [{run: "echo tests pass"}]
`)
	flags := []string{"--backend", "temporal", "--temporal", s.HostPort(), "--task-queue", queue}
	r := pipeline(t, dir, append([]string{"run"}, flags...)...)
	if r.code != exitPaused {
		t.Fatalf("run: exit %d, want 3\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := sessionIDIn(t, r.stderr)
	where := fmt.Sprintf("runs on Temporal at %s (namespace default)", s.HostPort())
	use := fmt.Sprintf("--backend temporal --temporal %s --task-queue %s %s", s.HostPort(), queue, id)

	r = pipeline(t, dir, "status", id)
	if r.code != 0 || !strings.Contains(r.stdout, where) || !strings.Contains(r.stdout, "pipeline status "+use) {
		t.Fatalf("local status of a fleet session: exit %d, want it to say %q\n%s%s", r.code, where, r.stdout, r.stderr)
	}
	var st struct {
		Status string `json:"status"`
		Fleet  struct {
			Address, Namespace string
			TaskQueue          string `json:"task_queue"`
		} `json:"fleet"`
	}
	r = pipeline(t, dir, "status", id, "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Status != "fleet" || st.Fleet.Address != s.HostPort() || st.Fleet.TaskQueue != queue {
		t.Fatalf("local status -o json: %+v (%v)\n%s", st, err, r.stdout)
	}
	r = pipeline(t, dir, "sessions")
	if r.code != 0 || !strings.Contains(r.stdout, where) || strings.Contains(r.stdout, "runner-died") {
		t.Fatalf("local sessions: exit %d, want %q and no runner-died\n%s%s", r.code, where, r.stdout, r.stderr)
	}

	before := storeListing(t, dir)
	fleetBefore := fleetStatusJSON(t, dir, nil, append([]string{id}, flags...)...)
	for _, c := range []struct{ args, want []string }{
		{[]string{"resume", id}, []string{where, "pipeline resume " + use}},
		{[]string{"resume", id, "--dry-run"}, []string{where, "pipeline resume " + use}},
		{[]string{"pause", id, "--notes", "x"}, []string{where, "pipeline pause " + use}},
		{[]string{"complete", id}, []string{where, "pipeline status " + use}},
		{[]string{"rewind", id, "--to", "build"}, []string{where, "pipeline status " + use}},
		{[]string{"export", id, "-o", filepath.Join(t.TempDir(), "x.tar.gz")}, []string{where, "pipeline status " + use}},
	} {
		r := pipeline(t, dir, c.args...)
		if r.code != 2 {
			t.Fatalf("%v of a fleet session: exit %d, want 2\n%s%s", c.args, r.code, r.stdout, r.stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(r.stderr, w) {
				t.Fatalf("%v: the message lacks %q:\n%s", c.args, w, r.stderr)
			}
		}
	}
	if after := storeListing(t, dir); after != before {
		t.Fatalf("the refused commands wrote to the local store:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	fleetAfter := fleetStatusJSON(t, dir, nil, append([]string{id}, flags...)...)
	if fleetAfter.Status != "paused" || fleetAfter.Phases[0].Attempts != fleetBefore.Phases[0].Attempts || len(fleetAfter.Phases[0].Notes) != 0 {
		t.Fatalf("the fleet session changed: %+v, was %+v", fleetAfter, fleetBefore)
	}
	// complete on the fleet: refused, with the reason.
	r = pipeline(t, dir, append([]string{"complete", id}, flags...)...)
	if r.code != 2 || !strings.Contains(r.stderr, "not available on the Temporal fleet") {
		t.Fatalf("complete --backend temporal: exit %d, want 2 with the reason\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "attempts")); string(got) != "run\n" {
		t.Fatalf("the step ran again: %q", got)
	}
}

// Two runs of one pipeline started at the same moment: the server lets
// one start a session (the run lease, a workflow id per pipeline and
// spec with the conflict policy FAIL); the other exits 2 naming it. The
// session that started runs to its end.
func TestFleetDuplicateRunRefused(t *testing.T) {
	s := fleetServer(t)
	queue := "q-" + strings.ToLower(t.Name())
	fleetWorkers(t, s, queue, 1)
	dir := fleetProject(t, `version: 1
phases:
  - name: build
    steps: [{run: "echo $PIPELINE_SESSION >> started; while [ ! -f go ]; do sleep 0.05; done"}]
`)
	env := append(os.Environ(), "PIPELINE_BACKEND=temporal", "PIPELINE_TEMPORAL="+s.HostPort(), "PIPELINE_TEMPORAL_TASK_QUEUE="+queue)
	type ran struct {
		out  strings.Builder
		code int
	}
	runs := make([]*ran, 2)
	exited := make(chan *ran, 2)
	var ready sync.WaitGroup
	gate := make(chan struct{})
	for i := range runs {
		runs[i] = &ran{}
		ready.Add(1)
		go func() {
			r := runs[i]
			cmd := exec.Command(binary, "run")
			cmd.Dir, cmd.Env = dir, env
			cmd.Stdout, cmd.Stderr = &r.out, &r.out
			ready.Done()
			<-gate
			if err := cmd.Start(); err != nil {
				r.code = -1
				exited <- r
				return
			}
			if cmd.Wait() != nil {
				r.code = cmd.ProcessState.ExitCode()
			}
			exited <- r
		}()
	}
	ready.Wait()
	close(gate)
	// The refused run ends while the one that started holds on in its
	// step (until go is written): had both started, neither would end.
	var refused *ran
	select {
	case refused = <-exited:
	case <-time.After(failsafe):
		t.Fatalf("neither run ended in %v: both started?\n%s\n%s", failsafe, runs[0].out.String(), runs[1].out.String())
	}
	started := awaitLines(t, filepath.Join(dir, "started"), 1, "the step of the run that started")[0]
	if refused.code != 2 || !strings.Contains(refused.out.String(), "session "+started) {
		t.Fatalf("the first run to end: exit %d, want 2 naming session %s:\n%s", refused.code, started, refused.out.String())
	}
	t.Logf("refused: %s", refused.out.String())
	write(t, dir, "go", "")
	ok := <-exited
	if ok.code != 0 || !strings.Contains(ok.out.String(), "session "+started+" started") {
		t.Fatalf("the run that started %s: exit %d, want 0\n%s", started, ok.code, ok.out.String())
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "started")); strings.Count(string(got), "\n") != 1 {
		t.Fatalf("steps started: %q, want one", got)
	}
}

// A fleet session whose step failed (run exits 1) is resumed with
// resume --backend temporal: its workflow, closed, runs again from the
// state it ended with, the failed step again, and completes.
func TestFleetFailedSessionResumed(t *testing.T) {
	s := fleetServer(t)
	queue := "q-" + strings.ToLower(t.Name())
	fleetWorkers(t, s, queue, 1)
	dir := fleetProject(t, `version: 1
phases:
  - name: build
    steps: [{run: "echo built >> built"}]
  - name: test
    steps: [{run: "echo try >> tries; test -f fixed"}]
`)
	flags := []string{"--backend", "temporal", "--temporal", s.HostPort(), "--task-queue", queue}
	r := pipeline(t, dir, append([]string{"run"}, flags...)...)
	if r.code != exitFailed {
		t.Fatalf("run: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := sessionIDIn(t, r.stderr)
	if st := fleetStatusJSON(t, dir, nil, append([]string{id}, flags...)...); st.Status != "failed" {
		t.Fatalf("status after the failure: %+v", st)
	}
	write(t, dir, "fixed", "")
	r = pipeline(t, dir, append([]string{"resume", id}, flags...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "completed") {
		t.Fatalf("resume of the failed session: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
	st := fleetStatusJSON(t, dir, nil, append([]string{id}, flags...)...)
	if st.Status != "completed" || st.Phases[1].Attempts != 2 {
		t.Fatalf("status after the resume: %+v; want completed, the test phase run twice", st)
	}
	if built, _ := os.ReadFile(filepath.Join(dir, "built")); string(built) != "built\n" {
		t.Fatalf("the phase that had completed ran again: %q", built)
	}
	// The new run asked for the workflow's changes in its input, as a new
	// session does: it records no version marker (and no upsert with it).
	if markers := versionMarkers(t, fleetClient(t, s), id); markers != 0 {
		t.Errorf("the resumed run recorded %d version markers; want none", markers)
	}
}

// pipeline watch --backend temporal is the watch driver with the fleet
// as its backend: a file under a watch: glob changes, and the paused
// fleet session is resumed there, as -o json reports (resumed for the
// watched change, then completed).
func TestFleetWatchGlobResumes(t *testing.T) {
	s := fleetServer(t)
	queue := "q-" + strings.ToLower(t.Name())
	fleetWorkers(t, s, queue, 1)
	dir := fleetProject(t, `version: 1
watch: ["notes/*.txt"]
phases:
  - name: build
    steps: [{run: "if [ -f notes/go.txt ]; then echo done; else echo '[CHECKPOINT] waiting for notes'; fi"}]
    pause_when: {checkpoint: checkpoint}
`)
	if err := os.Mkdir(filepath.Join(dir, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PIPELINE_BACKEND=temporal", "PIPELINE_TEMPORAL="+s.HostPort(), "PIPELINE_TEMPORAL_TASK_QUEUE="+queue)
	r := pipelineEnv(t, dir, env, "run")
	if r.code != exitPaused {
		t.Fatalf("run: exit %d, want 3\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := sessionIDIn(t, r.stderr)
	watch := exec.Command(binary, "watch", "-o", "json", "--debounce", "50ms")
	watch.Dir, watch.Env = dir, env
	stdout, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	watch.Stderr = &stderr
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		watch.Process.Signal(syscall.SIGTERM)
		watch.Wait()
	})
	events := make(chan map[string]string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var e map[string]string
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				events <- e
			}
		}
		close(events)
	}()
	await := func(kind string) map[string]string {
		t.Helper()
		timeout := time.After(failsafe)
		for {
			select {
			case e, ok := <-events:
				if !ok {
					t.Fatalf("watch ended before %q:\n%s", kind, stderr.String())
				}
				if e["event"] == kind && (kind == "ready" || e["session"] == id) {
					return e
				}
			case <-timeout:
				t.Fatalf("watch never reported %q:\n%s", kind, stderr.String())
			}
		}
	}
	await("ready")
	write(t, dir, "notes/go.txt", "go on\n")
	if e := await("resumed"); e["change"] != "watched" || e["file"] != "notes/go.txt" || e["reason"] != "checkpoint" {
		t.Fatalf("resumed: %v, want for the watched notes/go.txt, paused at a checkpoint", e)
	}
	await("completed")
	if st := fleetStatusJSON(t, dir, env, id); st.Status != "completed" {
		t.Fatalf("status after the watch resumed it: %+v", st)
	}
}
