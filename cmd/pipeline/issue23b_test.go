package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Issue 23, item 11: the needs-human hook got an empty $PIPELINE_NOTE and
// status -o json had no pause_note. Both name the step that failed, its
// exit code and its last error line.
func TestIssue23NeedsHumanNoteReachesHookAndStatus(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
on: {needs-human: 'printf "%s" "$PIPELINE_NOTE" > note.txt'}
defaults: {retry: {when: exit_code != 0, backoff: 0s, escalate_when: attempt > 1}}
phases: [{name: build, steps: [{name: lint, run: 'echo checking; echo "error: cannot import module tokenize2" >&2; exit 7'}]}]
`)
	if r := pipeline(t, dir, "run"); r.code != exitPaused {
		t.Fatalf("run: exit %d, want 3: %s", r.code, r.stderr)
	}
	want := `step "lint" failed (exit code 7): error: cannot import module tokenize2`
	if got := readFile(t, dir, "note.txt"); got != want {
		t.Errorf("$PIPELINE_NOTE %q, want %q", got, want)
	}
	if s := status(t, dir); s.PauseReason != "needs-human" || s.PauseNote != want {
		t.Errorf("status: pause_reason %q, pause_note %q; want needs-human, %q", s.PauseReason, s.PauseNote, want)
	}
	if r := pipeline(t, dir, "status"); !strings.Contains(r.stdout, "cannot import module tokenize2") {
		t.Errorf("status does not say what failed:\n%s", r.stdout)
	}
}

// Issue 23, item 16: run --only said "completed: 3 phases" though one ran
// and two were skipped; so did its --quiet outcome line.
func TestIssue23CompletedSaysHowManyPhasesRan(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
phases:
  - {name: design, steps: [{run: 'true'}]}
  - {name: build, steps: [{run: 'true'}]}
  - {name: docs, steps: [{run: 'true'}]}
`)
	for _, args := range [][]string{{"run", "--only", "build"}, {"run", "--only", "build", "--quiet"}} {
		r := pipeline(t, dir, args...)
		if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "completed: 1 phase run, 2 skipped") ||
			strings.Contains(r.stdout+r.stderr, "3 phases") {
			t.Errorf("%v: exit %d:\n%s%s", args, r.code, r.stdout, r.stderr)
		}
	}
	if r := pipeline(t, dir, "run", "--new"); r.code != 0 || !strings.Contains(r.stdout+r.stderr, "completed: 3 phases") {
		t.Errorf("run --new: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// Issue 23, item 15: with an older session paused and the newest failed,
// pipeline run resumed the older one. It takes the newest (failed: a new
// session starts), and says which session it did not resume.
func TestIssue23RunDoesNotResumeAnOlderPausedSession(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
phases:
  - name: build
    steps: [{run: 'if [ -f fail ]; then exit 1; fi; echo "[CHECKPOINT] look"'}]
`)
	if r := pipeline(t, dir, "run"); r.code != exitPaused {
		t.Fatalf("run: exit %d, want 3: %s", r.code, r.stderr)
	}
	paused := status(t, dir).ID
	write(t, dir, "fail", "")
	if r := pipeline(t, dir, "run", "--new"); r.code != 1 {
		t.Fatalf("run --new: exit %d, want 1: %s", r.code, r.stderr)
	}
	failed := status(t, dir).ID
	r := pipeline(t, dir, "run")
	if strings.Contains(r.stderr, "resuming session "+paused) {
		t.Fatalf("run resumed the older paused session %s though the newest, %s, failed:\n%s", paused, failed, r.stderr)
	}
	for _, want := range []string{"session " + paused + " is paused", failed + " (failed)", "pipeline resume " + paused} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("run does not say %q:\n%s", want, r.stderr)
		}
	}
}

// Issue 23, item 5: run and resume ignored a .pipeline/memory.json that
// is not a project memory. They exit 2 as memory --project does, naming
// the file and what to do.
func TestIssue23CorruptProjectMemoryStopsRunAndResume(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nphases: [{name: build, steps: [{run: 'echo \"[CHECKPOINT] look\"'}]}]\n")
	if r := pipeline(t, dir, "run"); r.code != exitPaused {
		t.Fatalf("run: exit %d, want 3: %s", r.code, r.stderr)
	}
	write(t, dir, ".pipeline/memory.json", `{"version": 1, "pinned_facts": [`)
	path := filepath.Join(".pipeline", "memory.json")
	for _, args := range [][]string{{"run"}, {"run", "--new"}, {"resume"}, {"memory", "--project"}} {
		r := pipeline(t, dir, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, path+" is not a project memory") ||
			!strings.Contains(r.stderr, "pipeline memory pin --project writes a new one") {
			t.Errorf("%v over a broken memory.json: exit %d, want 2 naming it:\n%s", args, r.code, r.stderr)
		}
	}
	if s := status(t, dir); s.Status != "paused" {
		t.Errorf("the session is %s after the refusals, want paused", s.Status)
	}
}

// Issue 23, item 8: ten memory pin at once on a paused session said "the
// session is running" and the pins stayed invisible until the next
// resume; on a completed session one was stranded as a
// memory-request-*.json. Every pin is recorded at once, none is left.
func TestIssue23ConcurrentMemoryPins(t *testing.T) {
	for _, tc := range []struct{ name, step string }{
		{"paused", `echo "[CHECKPOINT] look"`},
		{"completed", "true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "phases.yaml", "version: 1\nphases: [{name: build, steps: [{run: '"+tc.step+"'}]}]\n")
			pipeline(t, dir, "run")
			if s := status(t, dir); s.Status != tc.name {
				t.Fatalf("status %s, want %s", s.Status, tc.name)
			}
			var wg sync.WaitGroup
			results := make([]result, 10)
			for i := range results {
				wg.Go(func() { results[i] = pipeline(t, dir, "memory", "pin", fmt.Sprintf("fact number %d", i)) })
			}
			wg.Wait()
			for i, r := range results {
				if r.code != 0 || strings.Contains(r.stdout+r.stderr, "running") {
					t.Errorf("pin %d: exit %d: %s%s", i, r.code, r.stdout, r.stderr)
				}
			}
			if m := memoryOf(t, dir, nil); len(m.Pinned) != 10 {
				t.Errorf("%d of 10 pins recorded: %+v", len(m.Pinned), m.Pinned)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".pipeline", "sessions", "*", "memory-request-*")); len(left) > 0 {
				t.Errorf("requests stranded: %v", left)
			}
		})
	}
}

// Issue 23, item 6: with ~400 project facts (165 KB) every run --new of a
// {prompt} argument agent failed ("argument list too long"). The facts of
// a first prompt keep within the resume context's budget.
func TestIssue23ManyProjectFactsFitAFirstPrompt(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: command, command: [sh, -c, 'printf %s "$1" > prompt.txt', sh, "{prompt}"]}
phases: [{name: build, prompt: Build it.}]
`)
	var items []string
	for i := range 400 {
		items = append(items, fmt.Sprintf(`{"id": %d, "text": "fact %d: %s", "at": "2026-11-25T09:00:00Z", "source": "human"}`,
			i+1, i, strings.Repeat("the build needs the vendored parser ", 11)))
	}
	write(t, dir, ".pipeline/memory.json", `{"version": 1, "last_id": 400, "pinned_facts": [`+strings.Join(items, ",")+`]}`)
	r := pipeline(t, dir, "run", "--new")
	if r.code != 0 {
		t.Fatalf("run --new with 400 project facts: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	prompt := readFile(t, dir, "prompt.txt")
	if len(prompt) > 4*4*3000 || !strings.Contains(prompt, "- fact 0: ") || !strings.Contains(prompt, "more (pipeline memory --project lists them)") ||
		!strings.Contains(prompt, "Build it.") {
		t.Errorf("the first prompt (%d bytes):\n%.500s", len(prompt), prompt)
	}
}
