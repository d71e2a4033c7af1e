package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// replayStatus is what the tests read of a replay's status -o json.
type replayStatus struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	ReplayOf *struct {
		Session string `json:"session"`
		Model   string `json:"model"`
		Agent   string `json:"agent"`
		Spec    string `json:"spec"`
	} `json:"replay_of"`
}

func decodeJSON[T any](t *testing.T, r result) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("%v: %s\n%s", err, r.stdout, r.stderr)
	}
	return v
}

// The quickstart, run to its checkpoint and resumed with notes by a
// human, is replayed with another model: the replay stops at the same
// checkpoint and resumes itself there with the same notes, unattended,
// and completes. The model reaches the agent ({model} in its command),
// the notes reach the replay's resume context, and the replay says what
// it replays.
func TestReplayQuickstartWithAnotherModel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "quickstart")
	if out, err := exec.Command("cp", "-r", filepath.Join("..", "..", "examples", "quickstart"), dir).CombinedOutput(); err != nil {
		t.Fatalf("copying the quickstart: %v\n%s", err, out)
	}
	// The scripted agent gets the model as its second argument and says it.
	edit(t, filepath.Join(dir, "phases.yaml"), `command: [./scripted-agent.sh, "{prompt}"]`, `command: [./scripted-agent.sh, "{prompt}", "{model}"]`)
	edit(t, filepath.Join(dir, "scripted-agent.sh"), `prompt="$1"`, "prompt=\"$1\"\necho \"agent: model [$2]\"")
	if r := pipeline(t, dir, "run", "--grace", "1s"); r.code != exitPaused {
		t.Fatalf("run: exit %d, want 3 at the checkpoint:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	const notes = "the design is fine; go on"
	r := pipeline(t, dir, "resume", "--notes", notes, "-o", "json")
	if r.code != 0 {
		t.Fatalf("resume: exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	original := decodeJSON[replayStatus](t, r).ID
	// The work tree as the original found it: the agent's own marks gone.
	for _, f := range []string{".design-checkpoint", "greeting.txt"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}

	r = pipeline(t, dir, "replay", original, "--model", "other-model", "--grace", "1s", "-o", "json")
	if r.code != 0 {
		t.Fatalf("replay: exit %d, want 0 (completed, unattended):\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	replay := decodeJSON[replayStatus](t, r)
	if replay.Status != "completed" || replay.ReplayOf == nil || replay.ReplayOf.Session != original || replay.ReplayOf.Model != "other-model" {
		t.Fatalf("replay's status: %+v, want completed, replay_of %s with other-model", replay, original)
	}
	if !strings.Contains(r.stderr, "resumed by a human at the 1st stop at design/agent (checkpoint)") {
		t.Errorf("the replay did not say it resumed at the checkpoint:\n%s", r.stderr)
	}
	// The spec as the original started went with it when it was exported.
	archive := filepath.Join(t.TempDir(), "original.tgz")
	if r := pipeline(t, dir, "export", original, "-o", archive); r.code != 0 {
		t.Fatalf("export: exit %d\n%s", r.code, r.stderr)
	}
	if out, err := exec.Command("tar", "tzf", archive).Output(); err != nil || !strings.Contains(string(out), original+"/spec-at-start.md\n") {
		t.Errorf("the export does not hold spec-at-start.md (%v):\n%s", err, out)
	}
	status := decodeJSON[replayStatus](t, pipeline(t, dir, "status", replay.ID, "-o", "json"))
	if status.ReplayOf == nil || status.ReplayOf.Session != original {
		t.Errorf("status -o json: replay_of %+v, want %s", status.ReplayOf, original)
	}
	if r := pipeline(t, dir, "status", replay.ID); !strings.Contains(r.stdout, "replay of  "+original+" (model other-model)") {
		t.Errorf("status does not say what the session replays:\n%s", r.stdout)
	}
	if r := pipeline(t, dir, "sessions"); !strings.Contains(r.stdout, "completed, replay of "+original) {
		t.Errorf("sessions does not mark the replay:\n%s", r.stdout)
	}

	// The model reached the agent: every turn of the replay, none of the
	// original's.
	for id, want := range map[string]string{original: "agent: model []", replay.ID: "agent: model [other-model]"} {
		logs := pipeline(t, dir, "logs", id)
		if strings.Count(logs.stdout, "agent: model [") != 4 || strings.Count(logs.stdout, want) != 4 {
			t.Errorf("session %s: want 4 turns saying %q:\n%s", id, want, logs.stdout)
		}
	}
	// The human's notes reached the replay's resume context, at the
	// design's second prompt (after the checkpoint), not before.
	prompts := pipeline(t, dir, "logs", replay.ID, "--prompts", "--phase", "design", "-o", "json")
	var design []string
	for _, line := range strings.Split(strings.TrimSpace(prompts.stdout), "\n") {
		var piece struct{ Prompt, Text string }
		if json.Unmarshal([]byte(line), &piece) == nil && piece.Prompt == "design/1-agent.prompt" {
			design = append(design, piece.Text)
		}
	}
	text := strings.Join(design, "")
	first, second, found := strings.Cut(text, "the next prompt sent to this attempt")
	if !found || strings.Contains(first, notes) || !strings.Contains(second, "## Human notes") || !strings.Contains(second, "- "+notes) {
		t.Errorf("the design's prompts, want the notes in the second's resume context only:\n%s", text)
	}

	// Diff: the same story, another model.
	d := pipeline(t, dir, "diff", original, replay.ID)
	if d.code != 0 || !strings.Contains(d.stdout, "no divergence") ||
		!strings.Contains(d.stdout, "A  "+original+" (quickstart), completed, agents command\n") ||
		!strings.Contains(d.stdout, "B  "+replay.ID+" (quickstart), completed, agents command/other-model, replay of "+original+" (model other-model)\n") {
		t.Errorf("diff: exit %d, want 0 and both sessions named:\n%s\n%s", d.code, d.stdout, d.stderr)
	}
	var j struct {
		Same bool `json:"same"`
		B    struct {
			ReplayOf struct{ Session, Model string } `json:"replay_of"`
			Agents   []string                        `json:"agents"`
		} `json:"b"`
		Phases []struct {
			Name   string                  `json:"name"`
			Status struct{ A, B string }   `json:"status"`
			Fired  struct{ A, B []string } `json:"triggers_fired"`
		} `json:"phases"`
	}
	dj := pipeline(t, dir, "diff", original, replay.ID, "-o", "json")
	if err := json.Unmarshal([]byte(dj.stdout), &j); err != nil || dj.code != 0 {
		t.Fatalf("diff -o json: exit %d, %v:\n%s", dj.code, err, dj.stdout)
	}
	if !j.Same || j.B.ReplayOf.Session != original || !slices.Equal(j.B.Agents, []string{"command/other-model"}) ||
		len(j.Phases) != 3 || !slices.Equal(j.Phases[0].Fired.B, []string{"checkpoint"}) || j.Phases[2].Status.B != "completed" {
		t.Errorf("diff -o json: %+v", j)
	}
}

// A replay whose agent fails the build once: the diff says the sessions
// diverged at build, in its attempts and exit codes, and shows the file
// only the replay changed and the summaries' diff. The spec changed since
// the original started: the replay reads it as it was then (the plan
// phase's decision quotes it, and is the same in both).
func TestDiffOfAReplayThatFailsOnce(t *testing.T) {
	dir, env := gitRepo(t)
	write := func(name, content string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("phases.yaml", `version: 1
name: flaky
spec: spec.md
agent: {kind: command, command: [./agent.sh, "{prompt}", "{model}"]}
defaults:
  retry: {when: exit_code != 0, backoff: 0s, escalate_when: attempt > 3}
phases:
  - name: plan
    prompt: Plan it.
  - name: build
    prompt: Build it.
`, 0o644)
	write("spec.md", "# greeting v1\n", 0o644)
	write("agent.sh", `#!/bin/sh
case "$1" in
*Build*)
	if [ "$2" = flaky ] && [ ! -f .failed-once ]; then : > .failed-once; echo "build broke"; exit 1; fi
	echo built > out.txt
	echo "[SUMMARY] built by ${2:-the default model}" ;;
*)
	echo "[DECISION] follow $(head -n 1 "$PIPELINE_SPEC")" ;;
esac
`, 0o755)
	gitOut(t, dir, env, "add", "phases.yaml", "spec.md", "agent.sh")
	gitOut(t, dir, env, "commit", "-q", "-m", "start")
	r := pipelineEnv(t, dir, env, "run", "-o", "json")
	if r.code != 0 {
		t.Fatalf("run: exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	original := decodeJSON[replayStatus](t, r).ID
	write("spec.md", "# greeting v2\n", 0o644)
	if err := os.Remove(filepath.Join(dir, "out.txt")); err != nil {
		t.Fatal(err)
	}
	r = pipelineEnv(t, dir, env, "replay", original, "--model", "flaky", "-o", "json")
	if r.code != 0 {
		t.Fatalf("replay: exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	replay := decodeJSON[replayStatus](t, r)
	if !strings.Contains(r.stderr, "the spec spec.md changed since session "+original+" started") || replay.ReplayOf == nil || replay.ReplayOf.Spec == "" {
		t.Errorf("the replay did not say it reads the spec as it started (replay_of %+v):\n%s", replay.ReplayOf, r.stderr)
	}

	d := pipelineEnv(t, dir, env, "diff", original, replay.ID)
	if d.code != exitDiverged || !strings.Contains(d.stdout, "diverged at phase build: attempts 1 → 2; exit codes [0] → [1 0]\n") {
		t.Errorf("diff: exit %d, want 1 and the divergence at build:\n%s\n%s", d.code, d.stdout, d.stderr)
	}
	for _, want := range []string{"+.failed-once", "-[SUMMARY] built by the default model", "+[SUMMARY] built by flaky"} {
		if !strings.Contains(d.stdout, want) && !strings.Contains(d.stdout, strings.Replace(want, "[SUMMARY] ", "", 1)) {
			t.Errorf("diff does not show %q:\n%s", want, d.stdout)
		}
	}
	var j struct {
		Same       bool `json:"same"`
		Divergence struct {
			Phase string   `json:"phase"`
			What  []string `json:"what"`
		} `json:"divergence"`
		Phases []struct {
			Name      string                    `json:"name"`
			Attempts  struct{ A, B, Delta int } `json:"attempts"`
			ExitCodes struct{ A, B []int }      `json:"exit_codes"`
			Decisions struct{ A, B []string }   `json:"decisions"`
			Added     []string                  `json:"files_added"`
			Removed   []string                  `json:"files_removed"`
			Summary   []string                  `json:"summary_diff"`
			Differs   []string                  `json:"differs"`
		} `json:"phases"`
	}
	dj := pipelineEnv(t, dir, env, "diff", original, replay.ID, "-o", "json")
	if err := json.Unmarshal([]byte(dj.stdout), &j); err != nil || dj.code != exitDiverged {
		t.Fatalf("diff -o json: exit %d, %v:\n%s", dj.code, err, dj.stdout)
	}
	if j.Same || j.Divergence.Phase != "build" || !slices.Equal(j.Divergence.What, []string{"attempts", "exit_codes"}) || len(j.Phases) != 2 {
		t.Fatalf("diff -o json: %+v", j)
	}
	plan, build := j.Phases[0], j.Phases[1]
	if len(plan.Differs) != 0 || !slices.Equal(plan.Decisions.A, []string{"follow # greeting v1"}) || !slices.Equal(plan.Decisions.B, plan.Decisions.A) {
		t.Errorf("plan: %+v; want the same decision, from the spec as it started", plan)
	}
	if build.Attempts.A != 1 || build.Attempts.B != 2 || build.Attempts.Delta != 1 || !slices.Equal(build.ExitCodes.B, []int{1, 0}) ||
		!slices.Equal(build.Added, []string{".failed-once"}) || len(build.Removed) != 0 ||
		!slices.Contains(build.Summary, "+built by flaky") {
		t.Errorf("build: %+v", build)
	}
	// The other way round: the file is removed, and the divergence the same.
	back := pipelineEnv(t, dir, env, "diff", replay.ID, original, "-o", "json")
	if !strings.Contains(back.stdout, `"files_removed": [
        ".failed-once"
      ]`) || back.code != exitDiverged {
		t.Errorf("diff B A: exit %d:\n%s", back.code, back.stdout)
	}
}

// A replay of phases that are no longer the original's is refused, and
// so is an agent kind that cannot run: exit 2, nothing started.
func TestReplayRefusals(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "phases.yaml")
	if err := os.WriteFile(file, []byte("version: 1\nphases: [{name: one, steps: [{run: 'true'}]}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := pipeline(t, dir, "run", "-o", "json")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	id := decodeJSON[replayStatus](t, r).ID
	if r := pipeline(t, dir, "replay", id, "--agent", "cobol"); r.code != exitUsage || !strings.Contains(r.stderr, "--agent must be claude, gemini, codex or command") {
		t.Errorf("replay --agent cobol: exit %d:\n%s", r.code, r.stderr)
	}
	if err := os.WriteFile(file, []byte("version: 1\nphases: [{name: one, steps: [{run: 'true'}]}, {name: two, steps: [{run: 'true'}]}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := pipeline(t, dir, "replay", id); r.code != exitUsage || !strings.Contains(r.stderr, "session "+id+" ran the phases one; the pipeline now has one → two") {
		t.Errorf("replay of other phases: exit %d:\n%s", r.code, r.stderr)
	}
	if r := pipeline(t, dir, "sessions", "-o", "json"); strings.Count(r.stdout, `"id"`) != 1 {
		t.Errorf("a refused replay made a session:\n%s", r.stdout)
	}
	if r := pipeline(t, dir, "diff", id, "20991231-000000000-ffffff"); r.code != exitUsage {
		t.Errorf("diff with a session not there: exit %d, want 2:\n%s", r.code, r.stderr)
	}
}

// edit replaces old with new in file, which must hold old.
func edit(t *testing.T, file, old, new string) {
	t.Helper()
	content, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(content), old) {
		t.Fatalf("%s: %v, or no %q in it", file, err, old)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(string(content), old, new, 1)), 0o755); err != nil {
		t.Fatal(err)
	}
}

// A replay that stops where the original did not stays stopped (exit
// 3), and keeps the original's interventions still to give: a later
// pipeline resume of the replay gives each at its point, unattended.
func TestReplayStopsWhereTheOriginalDidNotAndResumeGivesTheRest(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("phases.yaml", `version: 1
name: gates
agent: {kind: command, command: [./agent.sh, "{prompt}", "{model}"]}
phases:
  - name: plan
    prompt: Plan it.
  - name: build
    prompt: Build it.
`)
	// Each session checkpoints once in build; with the model "pausy",
	// once in plan too.
	write("agent.sh", `#!/bin/sh
mark=".cp-$PIPELINE_PHASE-$PIPELINE_SESSION"
case "$1" in
*Build*) [ -f "$mark" ] || { : > "$mark"; echo "[CHECKPOINT] look at the build"; } ;;
*) [ "$2" = pausy ] && [ ! -f "$mark" ] && { : > "$mark"; echo "[CHECKPOINT] look at the plan"; } ;;
esac
echo "done: $(echo "$1" | grep -c 'use the blue greeting') notes seen"
`)
	if r := pipeline(t, dir, "run"); r.code != exitPaused {
		t.Fatalf("run: exit %d, want the build's checkpoint:\n%s", r.code, r.stderr)
	}
	r := pipeline(t, dir, "resume", "--notes", "use the blue greeting", "-o", "json")
	if r.code != 0 {
		t.Fatalf("resume: exit %d:\n%s", r.code, r.stderr)
	}
	original := decodeJSON[replayStatus](t, r).ID

	r = pipeline(t, dir, "replay", original, "--model", "pausy", "-o", "json")
	replay := decodeJSON[replayStatus](t, r)
	if r.code != exitPaused || replay.Status != "paused" ||
		!strings.Contains(r.stderr, "the original did not stop here; 1 of its interventions are still to give, at the 1st stop at build/agent (checkpoint)") {
		t.Fatalf("replay: exit %d (%s), want 3 at the plan's checkpoint, saying what is still to give:\n%s", r.code, replay.Status, r.stderr)
	}
	r = pipeline(t, dir, "resume", replay.ID, "--notes", "the plan is fine", "-o", "json")
	if r.code != 0 || decodeJSON[replayStatus](t, r).Status != "completed" ||
		!strings.Contains(r.stderr, `resumed by a human at the 1st stop at build/agent (checkpoint); resuming with what they gave: resume notes "use the blue greeting"`) {
		t.Fatalf("resume of the replay: exit %d, want it completed through the build's checkpoint:\n%s", r.code, r.stderr)
	}
	logs := pipeline(t, dir, "logs", replay.ID, "--phase", "build")
	if !strings.Contains(logs.stdout, "done: 1 notes seen") {
		t.Errorf("the build's resumed turn did not get the original's notes:\n%s", logs.stdout)
	}
	st := decodeJSON[struct {
		Model  string
		Phases []struct {
			Notes []string `json:"notes"`
		} `json:"phases"`
	}](t, pipeline(t, dir, "status", replay.ID, "-o", "json"))
	if len(st.Phases) != 2 || !slices.Equal(st.Phases[0].Notes, []string{"the plan is fine"}) || !slices.Equal(st.Phases[1].Notes, []string{"use the blue greeting"}) {
		t.Errorf("the replay's notes, phase by phase: %+v", st.Phases)
	}
}
