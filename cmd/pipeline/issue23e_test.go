package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/engine/compare"
	"github.com/pipeline-dev/pipeline/internal/render"
)

// Issue 23, defect 22 (first part): pipeline run in an empty folder did
// not say that pipeline init writes a phases.yaml; validate --spec was an
// unknown flag; init's last line ended "in .".
func TestIssue23EmptyFolderValidateSpecAndInitSayWhatToDo(t *testing.T) {
	empty := t.TempDir()
	for _, cmd := range [][]string{{"run"}, {"plan"}, {"validate"}} {
		if r := pipeline(t, empty, cmd...); r.code != exitUsage || !strings.Contains(r.stderr, "pipeline init") {
			t.Errorf("%v in an empty folder: exit %d, %s; want exit 2 naming pipeline init", cmd, r.code, r.stderr)
		}
	}

	dir := t.TempDir()
	r := pipeline(t, dir, "init")
	if last := lastLine(r.stdout); r.code != 0 || strings.HasSuffix(last, " in .") || !strings.Contains(last, "pipeline validate") {
		t.Errorf("init: exit %d, last line %q", r.code, last)
	}
	if r := pipeline(t, dir, "init", "sub"); r.code != 0 || !strings.Contains(lastLine(r.stdout), "cd sub") {
		t.Errorf("init sub: exit %d, last line %q; want it to say cd sub", r.code, lastLine(r.stdout))
	}
	write(t, dir, "other.md", "---\nagent_phases: [{design: Focus on the API}]\n---\n# other\n")
	write(t, dir, "bad.md", "---\nagent_phases: 42\n---\n")
	if r := pipeline(t, dir, "validate", "--spec", "other.md"); r.code != 0 || !strings.Contains(r.stdout, "with spec other.md") {
		t.Errorf("validate --spec other.md: exit %d, %s%s", r.code, r.stdout, r.stderr)
	}
	if r := pipeline(t, dir, "validate", "phases.yaml", "--spec", "bad.md"); r.code != exitUsage || !strings.Contains(r.stderr, "bad.md") {
		t.Errorf("validate --spec bad.md: exit %d, %s%s; want the spec's problem", r.code, r.stdout, r.stderr)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// Issue 23, defect 22: resume --phase reveiw had no did-you-mean. Every
// argument that names a phase says which phase it may have meant.
func TestIssue23EveryPhaseArgumentSaysDidYouMean(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nphases:\n  - {name: design, steps: [{run: 'echo \"[CHECKPOINT] look\"'}]}\n  - {name: review, steps: [{run: 'true'}]}\n")
	if r := pipeline(t, dir, "run"); r.code != exitPaused {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	for _, cmd := range [][]string{{"run", "--from", "reveiw"}, {"run", "--only", "reveiw"}, {"resume", "--phase", "reveiw"},
		{"rewind", "--to", "reveiw"}, {"fork", "--at", "reveiw"}, {"logs", "--phase", "reveiw"}} {
		if r := pipeline(t, dir, cmd...); r.code != exitUsage || !strings.Contains(r.stderr, `did you mean "review"?`) {
			t.Errorf("%v: exit %d, %s; want exit 2 with did you mean \"review\"?", cmd, r.code, r.stderr)
		}
	}
}

// Issue 23, defect 22: memory task done "write wc" closed nothing and
// offered nothing when the task was "write the wc.py script"; pin and
// task add did not say the number they gave. A task done that matches no
// task closely enough names the nearest one and how to close it; pin,
// task add and task done say the item's number.
func TestIssue23MemoryTaskDoneOffersTheNearestTaskAndEditsEchoIDs(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nphases:\n  - {name: design, steps: [{run: 'echo \"[CHECKPOINT] look\"'}]}\n")
	if r := pipeline(t, dir, "run"); r.code != exitPaused {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	r := pipeline(t, dir, "memory", "task", "add", "write the wc.py script")
	if r.code != 0 || !strings.Contains(r.stdout, "#1 write the wc.py script") {
		t.Errorf("task add: exit %d, %q; want the task's number", r.code, r.stdout)
	}
	if r := pipeline(t, dir, "memory", "pin", "tabs, not spaces"); r.code != 0 || !strings.Contains(r.stdout, "#2 tabs, not spaces") {
		t.Errorf("pin: exit %d, %q; want the fact's number", r.code, r.stdout)
	}
	r = pipeline(t, dir, "memory", "task", "done", "write wc")
	if r.code != exitUsage || !strings.Contains(r.stderr, `did you mean #1 "write the wc.py script"?`) || !strings.Contains(r.stderr, "pipeline memory task done 1") {
		t.Errorf("task done \"write wc\": exit %d, %s; want a did-you-mean with the command", r.code, r.stderr)
	}
	if r := pipeline(t, dir, "memory", "task", "done", "1"); r.code != 0 || !strings.Contains(r.stdout, "#1 write the wc.py script") {
		t.Errorf("task done 1: exit %d, %q", r.code, r.stdout)
	}
}

// Issue 23, defect 22: sessions showed "completed" where status said
// "completed (by hand)", and sessions -o json had no by_hand.
func TestIssue23SessionsSaysCompletedByHand(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nphases:\n  - {name: design, steps: [{run: 'echo \"[CHECKPOINT] look\"'}]}\n")
	if r := pipeline(t, dir, "run"); r.code != exitPaused {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	if r := pipeline(t, dir, "complete"); r.code != 0 {
		t.Fatalf("complete: exit %d, %s", r.code, r.stderr)
	}
	if r := pipeline(t, dir, "sessions"); r.code != 0 || !strings.Contains(r.stdout, "completed (by hand)") {
		t.Errorf("sessions: exit %d, %s; want completed (by hand)", r.code, r.stdout)
	}
	r := pipeline(t, dir, "sessions", "-o", "json")
	var list []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 || list[0]["by_hand"] != true || list[0]["pause_reason"] != nil {
		t.Errorf("sessions -o json: %v, %s", err, r.stdout)
	}
}

// Issue 23, defect 22: diff printed a phase's files row under column A
// (it is what changed from A to B: the Δ column's), and exit codes of -1
// with no word of what they are.
func TestIssue23DiffFilesInDeltaColumnAndKilledExplained(t *testing.T) {
	r := compare.Result{Phases: []compare.PhaseDiff{{Name: "build", In: "both",
		Status:       compare.StringPair{A: "completed", B: "paused"},
		ExitCodes:    compare.IntsPair{A: []int{0}, B: []int{-1}},
		FilesAdded:   []string{"new.go"},
		FilesRemoved: []string{"old.go"}}}}
	var b strings.Builder
	if err := render.Diff(&b, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	delta := -1
	for _, l := range lines {
		if strings.HasPrefix(l, "PHASE") {
			delta = strings.Index(l, "Δ")
		}
		if strings.HasPrefix(strings.TrimSpace(l), "files") && strings.Index(l, "+new.go -old.go") != delta {
			t.Errorf("the files row %q is not under Δ (at byte %d)", l, delta)
		}
		if strings.HasPrefix(strings.TrimSpace(l), "exit codes") && (strings.Contains(l, "-1") || !strings.Contains(l, "killed")) {
			t.Errorf("the exit codes row %q: want killed for -1", l)
		}
	}
	if !strings.Contains(b.String(), "killed: the step was ended by a signal") {
		t.Errorf("no word of what killed means:\n%s", b.String())
	}
}
