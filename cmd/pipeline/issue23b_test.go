package main

import (
	"strings"
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
