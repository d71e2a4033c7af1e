package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// status in text says why a session paused: the trigger with its
// expression and values, and the phase's summary (the agent's last line).
func TestStatusTextShowsTheCause(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: command, command: [sh, -c, 'echo "error: the build broke at foo.go:3"; exit 1']}
defaults:
  pause_when: {failure: exit_code != 0}
  retry: {when: "false"}
phases: [{name: build}]
`)
	if r := pipeline(t, dir, "run"); r.code != exitPaused {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	out := pipeline(t, dir, "status").stdout
	for _, want := range []string{"cause    failure (exit_code != 0) with exit_code=1\n", "summary  error: the build broke at foo.go:3\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in status:\n%s", want, out)
		}
	}
	var s struct {
		ElapsedMS *int64 `json:"elapsed_ms"`
		Pause     struct {
			Expression string         `json:"expression"`
			Values     map[string]any `json:"values"`
		} `json:"pause"`
		Phases []struct {
			DurationMS *int64 `json:"duration_ms"`
		} `json:"phases"`
	}
	if err := json.Unmarshal([]byte(pipeline(t, dir, "status", "-o", "json").stdout), &s); err != nil {
		t.Fatal(err)
	}
	if s.ElapsedMS == nil || len(s.Phases) != 1 || s.Phases[0].DurationMS == nil || s.Pause.Expression != "exit_code != 0" {
		t.Errorf("status -o json: no durations in milliseconds or no pause: %+v", s)
	}
}

// liveProject is an agent that prints words (tokens), then waits on the
// FIFO gate.
func liveProject(t *testing.T) (dir, gate string) {
	t.Helper()
	dir = t.TempDir()
	gate = filepath.Join(t.TempDir(), "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "agent.sh", `echo "the quick brown fox jumps over the lazy dog, again and again and again"
echo waiting
read go < "`+gate+`"
`)
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: command, command: [sh, ./agent.sh]}
phases: [{name: design}]
`)
	return dir, gate
}

// status of a running session shows the live tokens, time and step; the
// runner updates them while the step runs.
func TestStatusOfARunningSessionIsLive(t *testing.T) {
	dir, gate := liveProject(t)
	run := pipelineStart(t, dir, "run")
	run.await(t, "waiting")
	var s struct {
		Status string `json:"status"`
		Tokens int    `json:"tokens"`
		Step   string `json:"step"`
		Live   *struct {
			Step       string `json:"step"`
			StepTokens int    `json:"step_tokens"`
		} `json:"live"`
	}
	// The live file is written once a second: wait for the one written
	// after the output.
	awaitWritten(t, filepath.Join(dir, ".pipeline"), "live tokens in status", func() bool {
		r := pipeline(t, dir, "status", "-o", "json")
		if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
			t.Fatalf("status: %v %s", err, r.stderr)
		}
		return s.Live != nil && s.Live.StepTokens > 0
	})
	if s.Status != "running" || s.Tokens != s.Live.StepTokens || s.Live.Step != "agent" || s.Step != "agent" {
		t.Errorf("status of the running session: %+v, live %+v", s, *s.Live)
	}
	text := pipeline(t, dir, "status").stdout
	if !strings.Contains(text, "step     agent running for ") || !strings.Contains(text, "(live, updated ") {
		t.Errorf("status in text shows no live step:\n%s", text)
	}
	if err := os.WriteFile(gate, []byte("go\n"), 0); err != nil {
		t.Fatal(err)
	}
	if code := run.exit(t); code != exitCompleted {
		t.Fatalf("run: exit %d", code)
	}
	if final := pipeline(t, dir, "status", "-o", "json").stdout; strings.Contains(final, `"live"`) {
		t.Errorf("a session that ended shows live progress: %s", final)
	}
}

// status --watch shows the status again until the session stops running.
func TestStatusWatchRefreshesUntilTheRunEnds(t *testing.T) {
	dir, gate := liveProject(t)
	run := pipelineStart(t, dir, "run")
	run.await(t, "waiting")
	watch := exec.Command(binary, "status", "--watch", "-o", "json")
	watch.Dir = dir
	out, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { watch.Process.Kill() })
	dec := json.NewDecoder(bufio.NewReader(out))
	var statuses []string
	for {
		var s struct {
			Status string `json:"status"`
		}
		if err := dec.Decode(&s); err != nil {
			break
		}
		statuses = append(statuses, s.Status)
		if len(statuses) == 2 {
			if err := os.WriteFile(gate, []byte("go\n"), 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := watch.Wait(); err != nil {
		t.Fatalf("status --watch: %v", err)
	}
	if len(statuses) < 3 || statuses[0] != "running" || statuses[1] != "running" || statuses[len(statuses)-1] != "completed" {
		t.Errorf("status --watch showed %v", statuses)
	}
	if code := run.exit(t); code != exitCompleted {
		t.Fatalf("run: exit %d", code)
	}
}

// The resume hint printed at a pause works pasted as printed, from the
// folder the run was started in: it names the --file and --state-dir the
// run was given.
func TestResumeHintWorksAsPrinted(t *testing.T) {
	top := t.TempDir()
	write(t, top, "my project/phases.yaml", `version: 1
phases:
  - {name: one, steps: [{run: 'true'}], auto_advance: false}
  - {name: two, steps: [{run: 'true'}]}
`)
	r := pipeline(t, top, "run", "my project/phases.yaml", "--state-dir", "state")
	if r.code != exitPaused {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	m := regexp.MustCompile(`continue it with: (pipeline resume .*)\n`).FindStringSubmatch(r.stderr)
	if m == nil || !strings.Contains(m[1], `--file 'my project/phases.yaml' --state-dir state `) {
		t.Fatalf("no resume hint with --file and --state-dir: %s", r.stderr)
	}
	// As a shell would read it.
	resume := exec.Command("sh", "-c", strings.Replace(m[1], "pipeline", binary, 1))
	resume.Dir = top
	if out, err := resume.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", m[1], err, out)
	}
	// The defaults are left out.
	write(t, top, "phases.yaml", `version: 1
phases: [{name: one, steps: [{run: 'true'}], auto_advance: false}, {name: two, steps: [{run: 'true'}]}]
`)
	if r := pipeline(t, top, "run"); !strings.Contains(r.stderr, "continue it with: pipeline resume 20") {
		t.Errorf("the hint of a run with the defaults: %s", r.stderr)
	}
}

// PIPELINE_SPEC is the same path on every run of a session, even when a
// run starts through a link to the project's folder.
func TestPipelineSpecIsTheSameOnEveryRun(t *testing.T) {
	top := t.TempDir()
	seen := filepath.Join(t.TempDir(), "seen")
	write(t, top, "proj/specs/a/README.md", "---\nstatus: planned\n---\n")
	write(t, top, "proj/phases.yaml", `version: 1
spec: specs/a/README.md
phases:
  - {name: one, steps: [{run: 'echo "$PIPELINE_SPEC" >> `+seen+`'}], auto_advance: false}
  - {name: two, steps: [{run: 'echo "$PIPELINE_SPEC" >> `+seen+`'}]}
`)
	if err := os.Symlink(filepath.Join(top, "proj"), filepath.Join(top, "link")); err != nil {
		t.Fatal(err)
	}
	if r := pipeline(t, filepath.Join(top, "proj"), "run"); r.code != exitPaused {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	// As a shell started in the link sees its folder.
	r := pipelineEnv(t, filepath.Join(top, "link"), append(os.Environ(), "PWD="+filepath.Join(top, "link")), "resume")
	if r.code != exitCompleted {
		t.Fatalf("resume: exit %d, %s", r.code, r.stderr)
	}
	got, _ := os.ReadFile(seen)
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	if len(lines) != 2 || lines[0] != lines[1] || !strings.HasSuffix(lines[0], "/proj/specs/a/README.md") {
		t.Errorf("PIPELINE_SPEC of the two runs: %q", lines)
	}
}
