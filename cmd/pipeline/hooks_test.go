package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/internal/proctest"
)

// pausingWithHooks pauses at a checkpoint in its first phase; the hooks
// write what they were given into the pipeline's folder.
const pausingWithHooks = `version: 1
on:
  paused:
    - env | grep ^PIPELINE_ | sort > hook-env.txt; cat > hook-stdin.json; pwd > hook-pwd.txt
    - echo hello from the hook
  completed: echo completed >> hook-completed.txt
phases:
  - {name: design, steps: [{run: 'test -e drafted || { touch drafted; echo "[CHECKPOINT] drafted the API"; }'}]}
  - {name: build, steps: [{run: echo built}]}
`

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A pause runs the paused hooks: in the pipeline's folder, with the
// PIPELINE_* variables and the status JSON on standard input; their output
// goes to the session's transcripts.
func TestPausedHookGetsTheSessionAndStatus(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", pausingWithHooks)
	r := pipeline(t, dir, "run")
	if r.code != 3 {
		t.Fatalf("run: exit %d, want 3: %s", r.code, r.stderr)
	}
	id := status(t, dir).ID
	env := readFile(t, dir, "hook-env.txt")
	for _, want := range []string{"PIPELINE_SESSION=" + id, "PIPELINE_PHASE=design", "PIPELINE_STATUS=paused",
		"PIPELINE_REASON=checkpoint", "PIPELINE_NOTE=drafted the API"} {
		if !strings.Contains(env, want+"\n") {
			t.Errorf("hook environment lacks %s:\n%s", want, env)
		}
	}
	var stdin statusJSON
	if err := json.Unmarshal([]byte(readFile(t, dir, "hook-stdin.json")), &stdin); err != nil {
		t.Fatal(err)
	}
	if stdin.ID != id || stdin.Status != "paused" || stdin.PauseReason != "checkpoint" || stdin.Phase != "design" {
		t.Errorf("status on stdin: %+v", stdin)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if got := strings.TrimSpace(readFile(t, dir, "hook-pwd.txt")); got != dir && got != real {
		t.Errorf("hook ran in %s, want %s", got, dir)
	}
	if logs := pipeline(t, dir, "logs"); !strings.Contains(logs.stdout, "hello from the hook") {
		t.Errorf("the hook's output is not in the logs:\n%s", logs.stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, "hook-completed.txt")); err == nil {
		t.Error("the completed hook ran at a pause")
	}
	if r := pipeline(t, dir, "resume"); r.code != 0 {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	if got := readFile(t, dir, "hook-completed.txt"); got != "completed\n" {
		t.Errorf("completed hook wrote %q", got)
	}
}

// A hook that fails is said and logged; the run's outcome (and exit
// status) is the session's.
func TestAFailingHookDoesNotChangeTheOutcome(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
on: {failed: [echo about to fail; exit 7, echo second hook > second.txt]}
defaults: {retry: {when: "false"}}
phases: [{name: build, steps: [{run: exit 1}]}]
`)
	r := pipeline(t, dir, "run")
	if r.code != 1 {
		t.Fatalf("run: exit %d, want 1 (failed): %s", r.code, r.stderr)
	}
	if out := r.stdout + r.stderr; !strings.Contains(out, "on failed:") || !strings.Contains(out, "exit status 7") {
		t.Errorf("the failed hook is not said:\n%s", out)
	}
	if s := status(t, dir); s.Status != "failed" {
		t.Errorf("status %s", s.Status)
	}
	if got := readFile(t, dir, "second.txt"); got != "second hook\n" {
		t.Errorf("the hook after the failing one did not run: %q", got)
	}
	if logs := pipeline(t, dir, "logs"); !strings.Contains(logs.stdout, "about to fail") {
		t.Errorf("the hook's output is not in the logs:\n%s", logs.stdout)
	}
}

// A needs-human pause runs the paused hooks, then the needs-human ones.
func TestNeedsHumanHook(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
on: {paused: echo paused >> hooks.txt, needs-human: echo "needs-human $PIPELINE_REASON" >> hooks.txt}
defaults: {retry: {when: exit_code != 0, backoff: 0s, escalate_when: attempt > 1}}
phases: [{name: build, steps: [{run: exit 1}]}]
`)
	if r := pipeline(t, dir, "run"); r.code != 3 {
		t.Fatalf("run: exit %d, want 3: %s", r.code, r.stderr)
	}
	if got, want := readFile(t, dir, "hooks.txt"), "paused\nneeds-human needs-human\n"; got != want {
		t.Errorf("hooks ran %q, want %q", got, want)
	}
}

// A hook that leaves a process behind holding its output does not hold
// the runner: the run ends, and the process is stopped.
func TestAHookThatLeavesADaemonDoesNotHangTheRun(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
on: {completed: 'sleep 300 & echo $! > daemon.pid; echo started'}
phases: [{name: build, steps: [{run: echo built}]}]
`)
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "run")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the run hung on its hook:\n%s", out)
	}
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(readFile(t, dir, "daemon.pid")))
	if err != nil {
		t.Fatalf("daemon.pid: %v", err)
	}
	// The runner sent SIGKILL before it exited; the kernel takes a moment
	// to end a killed process: wait for its exit, an event.
	proctest.AwaitExit(t, pid)
}

// The example's hooks: a desktop notification at the pause and a chat
// webhook posted with curl at the end, here to a server on 127.0.0.1.
func TestHooksExample(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed to run examples/hooks: install it (apt-get install curl)")
	}
	dir, bin := t.TempDir(), t.TempDir()
	for _, name := range []string{"phases.yaml", "notify-chat.sh"} {
		content := readFile(t, filepath.Join(repoRoot, "examples", "hooks"), name)
		write(t, dir, name, content)
	}
	if err := os.Chmod(filepath.Join(dir, "notify-chat.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A notify-send that writes down what it was asked to show.
	write(t, bin, "notify-send", "#!/bin/sh\nprintf '%s|' \"$@\" >> \"$NOTIFIED\"\necho >> \"$NOTIFIED\"\n")
	if err := os.Chmod(filepath.Join(bin, "notify-send"), 0o755); err != nil {
		t.Fatal(err)
	}
	posted := make(chan string, 4)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		posted <- r.Header.Get("Content-Type") + " " + string(body)
	}))
	defer server.Close()
	notified := filepath.Join(t.TempDir(), "notified")
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"CHAT_WEBHOOK_URL="+server.URL, "NOTIFIED="+notified)
	if r := pipelineEnv(t, dir, env, "run"); r.code != 3 {
		t.Fatalf("run: exit %d, want 3: %s", r.code, r.stderr)
	}
	if got, want := readFile(t, filepath.Dir(notified), "notified"), "pipeline: phase-complete|phase \"design\" is done; auto_advance is false|\n"; got != want {
		t.Errorf("notify-send got %q, want %q", got, want)
	}
	if r := pipelineEnv(t, dir, env, "resume"); r.code != 0 {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	id := status(t, dir).ID
	select {
	case body := <-posted:
		var msg struct{ Text string }
		if err := json.Unmarshal([]byte(strings.TrimPrefix(body, "application/json ")), &msg); err != nil || !strings.HasPrefix(body, "application/json ") {
			t.Fatalf("webhook got %q: %v", body, err)
		}
		if want := "pipeline session " + id + " is completed in phase build"; msg.Text != want {
			t.Errorf("webhook text %q, want %q", msg.Text, want)
		}
	default:
		t.Fatal("the completed hook posted nothing to the webhook")
	}
}

// Sessions that pipeline watch resumes run their hooks too.
func TestWatchRunsTheHooks(t *testing.T) {
	dir := t.TempDir()
	id := watchedPipeline(t, dir, "on: {paused: 'echo \"paused $PIPELINE_PHASE $PIPELINE_SESSION\" >> hooks.txt'}\n")
	w := watchStart(t, dir)
	write(t, dir, "spec.md", "# The spec\n\nBuild it, and test it.\n")
	w.awaitEvent(t, "resumed", id)
	w.awaitEvent(t, "paused", id)
	w.stop(t)
	// An auto_advance: false pause is at the next phase, as status says.
	if got, want := readFile(t, dir, "hooks.txt"), "paused two "+id+"\npaused three "+id+"\n"; got != want {
		t.Errorf("hooks ran %q, want %q", got, want)
	}
}
