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

// gitRepo makes a git repository in a temp folder, with an identity of
// its own, no system config and a home of its own: the user's git
// configuration is neither read nor touched.
func gitRepo(t *testing.T) (dir string, env []string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed: ", err)
	}
	dir, home := t.TempDir(), t.TempDir()
	env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "GIT_CONFIG_NOSYSTEM=1")
	gitOut(t, dir, env, "init", "-q", "-b", "main")
	gitOut(t, dir, env, "config", "user.name", "t")
	gitOut(t, dir, env, "config", "user.email", "t@example.com")
	gitOut(t, dir, env, "config", "commit.gpgsign", "false")
	return dir, env
}

// gitOut runs git in dir and returns its output, trimmed.
// gitOut runs git in dir with env (nil: this process's) and returns its
// standard output, trimmed.
func gitOut(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// checkpoints reads phases[].checkpoint of status -o json.
func checkpoints(t *testing.T, dir string, env []string) (id string, commits []string) {
	t.Helper()
	r := pipelineEnv(t, dir, env, "status", "-o", "json")
	var s struct {
		ID     string `json:"id"`
		Phases []struct {
			Checkpoint string `json:"checkpoint"`
		} `json:"phases"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("status: %v: %s%s", err, r.stdout, r.stderr)
	}
	for _, p := range s.Phases {
		commits = append(commits, p.Checkpoint)
	}
	return s.ID, commits
}

// The checkpoints of a run: refs under refs/pipeline/<session>/ holding
// the work tree (tracked files, untracked ones that are not ignored) as
// it was when the session started and when each phase completed; HEAD,
// the branch, the index and the stash untouched; status shows them, and
// clean deletes them with the session.
func TestCheckpointRefsKeepTheWorkTreeAndTouchNothingElse(t *testing.T) {
	dir, env := gitRepo(t)
	write(t, dir, "phases.yaml", `version: 1
name: ckpt
phases:
  - name: one
    steps: [{name: write, run: "echo new > untracked.txt; echo log > build.log"}]
  - name: two
    steps: [{name: edit, run: "echo changed > tracked.txt"}]
`)
	write(t, dir, ".gitignore", "*.log\n")
	write(t, dir, "tracked.txt", "first\n")
	write(t, dir, "staged.txt", "first\n")
	gitOut(t, dir, env, "add", ".")
	gitOut(t, dir, env, "commit", "-qm", "start")
	// A stash entry, then a staged change: both are the user's.
	write(t, dir, "staged.txt", "stashed\n")
	gitOut(t, dir, env, "stash", "-q")
	write(t, dir, "staged.txt", "staged\n")
	gitOut(t, dir, env, "add", "staged.txt")
	head, branch := gitOut(t, dir, env, "rev-parse", "HEAD"), gitOut(t, dir, env, "symbolic-ref", "HEAD")
	index, stash := gitOut(t, dir, env, "ls-files", "-s"), gitOut(t, dir, env, "rev-parse", "refs/stash")

	if r := pipelineEnv(t, dir, env, "run"); r.code != 0 {
		t.Fatalf("run: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	id, commits := checkpoints(t, dir, env)
	refs := gitOut(t, dir, env, "for-each-ref", "--format=%(refname) %(objectname)", "refs/pipeline/")
	want := "refs/pipeline/" + id + "/00-start "
	if !strings.Contains(refs, want) {
		t.Errorf("refs:\n%s\nwant one named %s", refs, want)
	}
	for i, name := range []string{"01-one", "02-two"} {
		ref := "refs/pipeline/" + id + "/" + name
		if commits[i] == "" || !strings.Contains(refs, ref+" "+commits[i]) {
			t.Errorf("phase %s: status says checkpoint %q; refs:\n%s", name, commits[i], refs)
		}
	}
	show := func(ref, file string) string {
		cmd := exec.Command("git", "show", ref+":"+file)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.Output()
		if err != nil {
			return "<absent>"
		}
		return strings.TrimSpace(string(out))
	}
	base := "refs/pipeline/" + id + "/"
	for _, c := range []struct{ ref, file, want string }{
		{"00-start", "tracked.txt", "first"}, {"00-start", "staged.txt", "staged"}, {"00-start", "untracked.txt", "<absent>"},
		{"01-one", "untracked.txt", "new"}, {"01-one", "tracked.txt", "first"}, {"01-one", "build.log", "<absent>"},
		{"02-two", "tracked.txt", "changed"}, {"02-two", "untracked.txt", "new"}, {"02-two", "staged.txt", "staged"},
	} {
		if got := show(base+c.ref, c.file); got != c.want {
			t.Errorf("%s:%s is %q, want %q", c.ref, c.file, got, c.want)
		}
	}
	if parent := gitOut(t, dir, env, "rev-parse", base+"01-one^"); parent != head {
		t.Errorf("the checkpoint's parent is %s, want HEAD %s", parent, head)
	}
	if got := gitOut(t, dir, env, "rev-parse", "HEAD"); got != head {
		t.Errorf("HEAD moved: %s → %s", head, got)
	}
	if got := gitOut(t, dir, env, "symbolic-ref", "HEAD"); got != branch {
		t.Errorf("the branch changed: %s → %s", branch, got)
	}
	if got := gitOut(t, dir, env, "ls-files", "-s"); got != index {
		t.Errorf("the index changed:\n%s\nwas\n%s", got, index)
	}
	if got := gitOut(t, dir, env, "rev-parse", "refs/stash"); got != stash {
		t.Errorf("the stash changed: %s → %s", stash, got)
	}
	if got := gitOut(t, dir, env, "stash", "list"); strings.Count(got, "\n") != 0 || got == "" {
		t.Errorf("stash list %q, want the one entry", got)
	}

	r := pipelineEnv(t, dir, env, "status", "-v")
	if !strings.Contains(r.stdout, "CHECKPOINT") || !strings.Contains(r.stdout, commits[1][:12]) {
		t.Errorf("status -v shows no checkpoint:\n%s", r.stdout)
	}

	if r := pipelineEnv(t, dir, env, "clean", "--older-than", "1ns", "--keep", "0"); r.code != 0 || !strings.Contains(r.stdout, id) {
		t.Fatalf("clean: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if refs := gitOut(t, dir, env, "for-each-ref", "refs/pipeline/"); refs != "" {
		t.Errorf("clean left the session's refs:\n%s", refs)
	}
}

// checkpoint: commit commits each phase on the current branch, with a
// message naming the phase and the session.
func TestCheckpointCommitMakesOneCommitPerPhase(t *testing.T) {
	dir, env := gitRepo(t)
	write(t, dir, "phases.yaml", `version: 1
name: ckpt
checkpoint: commit
phases:
  - name: one
    steps: [{name: write, run: "echo one > one.txt"}]
  - name: two
    steps: [{name: nothing, run: "true"}]
  - name: three
    steps: [{name: write, run: "echo three > three.txt"}]
`)
	gitOut(t, dir, env, "add", ".")
	gitOut(t, dir, env, "commit", "-qm", "start")
	if r := pipelineEnv(t, dir, env, "run"); r.code != 0 {
		t.Fatalf("run: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	id, commits := checkpoints(t, dir, env)
	log := gitOut(t, dir, env, "log", "--format=%H %s", "main")
	lines := strings.Split(log, "\n")
	if len(lines) != 4 {
		t.Fatalf("main has %d commits, want start + 3:\n%s", len(lines), log)
	}
	for i, name := range []string{"three", "two", "one"} {
		want := commits[2-i] + " pipeline: phase " + name + " completed (session " + id + ")"
		if lines[i] != want {
			t.Errorf("commit %d is %q, want %q", i, lines[i], want)
		}
	}
	if got := gitOut(t, dir, env, "show", "main~2:one.txt"); got != "one" {
		t.Errorf("phase one's commit holds one.txt %q", got)
	}
	if got := gitOut(t, dir, env, "status", "--porcelain"); got != "" {
		t.Errorf("after the run, git status shows\n%s", got)
	}
	if refs := gitOut(t, dir, env, "for-each-ref", "refs/pipeline/"); strings.Contains(refs, "01-one") {
		t.Errorf("checkpoint: commit made refs for its phases too:\n%s", refs)
	}
}

// A folder that is not in a git work tree runs as before, and says that
// it keeps no checkpoints.
func TestNoGitWorkTreeRunsWithoutCheckpoints(t *testing.T) {
	dir := t.TempDir()
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
	write(t, dir, "phases.yaml", "version: 1\nphases:\n  - name: one\n    steps: [{name: s, run: \"true\"}]\n")
	r := pipelineEnv(t, dir, env, "run")
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if out := r.stdout + r.stderr; !strings.Contains(out, "is not in a git work tree (or git ignores it): this session keeps no checkpoints") {
		t.Errorf("no note that there are no checkpoints:\n%s", out)
	}
	if _, commits := checkpoints(t, dir, env); len(commits) != 1 || commits[0] != "" {
		t.Errorf("checkpoints %q, want none", commits)
	}
}

// fileContent is a file's content, "<absent>" when there is none.
func fileContent(t *testing.T, path string) string {
	t.Helper()
	content, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return "<absent>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(content)
}

// rewind --to PHASE restores the work tree to the checkpoint before the
// phase, and resume runs the phase again as a new attempt; the rewind is
// in the event log. Changes that are in no checkpoint are refused, and
// --force keeps them under a rescued ref first.
func TestRewindRestoresTheFilesAndRunsThePhaseAgain(t *testing.T) {
	dir, env := gitRepo(t)
	write(t, dir, "phases.yaml", `version: 1
name: rewind
phases:
  - name: one
    steps: [{name: write, run: "echo one > one.txt"}]
  - name: two
    steps: [{name: write, run: "echo two >> one.txt; echo two > two.txt"}]
`)
	gitOut(t, dir, env, "add", ".")
	gitOut(t, dir, env, "commit", "-qm", "start")
	head := gitOut(t, dir, env, "rev-parse", "HEAD")
	if r := pipelineEnv(t, dir, env, "run"); r.code != 0 {
		t.Fatalf("run: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if got := fileContent(t, filepath.Join(dir, "one.txt")); got != "one\ntwo\n" {
		t.Fatalf("one.txt after the run: %q", got)
	}
	id, commits := checkpoints(t, dir, env)

	r := pipelineEnv(t, dir, env, "rewind", "--to", "two")
	if r.code != 0 || !strings.Contains(r.stdout, "rewound to the start of phase two (attempt 2)") {
		t.Fatalf("rewind: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if got, two := fileContent(t, filepath.Join(dir, "one.txt")), fileContent(t, filepath.Join(dir, "two.txt")); got != "one\n" || two != "<absent>" {
		t.Errorf("after the rewind one.txt is %q and two.txt %q, want phase one's files", got, two)
	}
	s := pipelineEnvStatus(t, dir, env)
	if s.Status != "paused" || s.PauseReason != "rewound" || s.Phase != "two" || !strings.Contains(s.PauseNote, commits[0][:12]) {
		t.Errorf("after the rewind: %s at %s, reason %q (%s)", s.Status, s.Phase, s.PauseReason, s.PauseNote)
	}
	if r := pipelineEnv(t, dir, env, "resume"); r.code != 0 {
		t.Fatalf("resume: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if got := fileContent(t, filepath.Join(dir, "one.txt")); got != "one\ntwo\n" {
		t.Errorf("one.txt after phase two ran again: %q, want it written once more on phase one's", got)
	}
	s = pipelineEnvStatus(t, dir, env)
	if s.Status != "completed" || s.Phases[1].Attempts != 2 || s.Phases[1].Human == 0 || s.Phases[0].Attempts != 1 {
		t.Errorf("after the resume: %s, phase two %d attempts and %d interventions, phase one %d attempts",
			s.Status, s.Phases[1].Attempts, s.Phases[1].Human, s.Phases[0].Attempts)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, ".pipeline", "*", id, "events.jsonl"))
	if len(logs) != 1 || !strings.Contains(fileContent(t, logs[0]), `"type":"Rewound"`) {
		t.Errorf("no Rewound event in the log %v", logs)
	}

	// Work in no checkpoint: refused, then rescued with --force.
	write(t, dir, "one.txt", "mine\n")
	r = pipelineEnv(t, dir, env, "rewind", "--to", "two")
	if r.code != 2 || !strings.Contains(r.stderr, "in no checkpoint") || !strings.Contains(r.stderr, "--force") {
		t.Errorf("rewind over unsaved work: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if got := fileContent(t, filepath.Join(dir, "one.txt")); got != "mine\n" {
		t.Fatalf("a refused rewind changed one.txt: %q", got)
	}
	r = pipelineEnv(t, dir, env, "rewind", "--to", "two", "--force")
	rescued := "refs/pipeline/" + id + "/rescued-1"
	if r.code != 0 || !strings.Contains(r.stdout, rescued) {
		t.Fatalf("rewind --force: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if got := gitOut(t, dir, env, "show", rescued+":one.txt"); got != "mine" {
		t.Errorf("%s holds one.txt %q, want the work rescued", rescued, got)
	}
	if got := fileContent(t, filepath.Join(dir, "one.txt")); got != "one\n" {
		t.Errorf("after rewind --force one.txt is %q", got)
	}
	if got := gitOut(t, dir, env, "rev-parse", "HEAD"); got != head {
		t.Errorf("HEAD moved: %s → %s", head, got)
	}
}

func pipelineEnvStatus(t *testing.T, dir string, env []string) statusJSON {
	t.Helper()
	return decodeStatus(t, pipelineEnv(t, dir, env, "status", "-o", "json"))
}

// What a human changed while the session was paused is listed in the
// resume context; a file left with conflict markers pauses the session
// again, naming it, until it is resolved.
func TestHumanChangesWhilePausedReachTheResumeContext(t *testing.T) {
	dir, env := gitRepo(t)
	prompt := filepath.Join(t.TempDir(), "prompt.txt")
	env = append(env, "PROMPT_OUT="+prompt)
	write(t, dir, "phases.yaml", `version: 1
name: human
agent: {kind: command, command: [sh, -c, 'cat > "$PROMPT_OUT"']}
phases:
  - name: one
    prompt: first
    auto_advance: false
  - name: two
    prompt: second
    auto_advance: false
  - name: three
    prompt: third
`)
	write(t, dir, "notes.md", "a\n")
	write(t, dir, "conflict.txt", "a\n")
	gitOut(t, dir, env, "add", ".")
	gitOut(t, dir, env, "commit", "-qm", "start")
	if r := pipelineEnv(t, dir, env, "run"); r.code != 3 {
		t.Fatalf("run: exit %d, want the pause after phase one: %s%s", r.code, r.stdout, r.stderr)
	}
	write(t, dir, "notes.md", "a\nedited while paused\n")
	write(t, dir, "added.txt", "new\n")
	if r := pipelineEnv(t, dir, env, "resume"); r.code != 3 {
		t.Fatalf("resume: exit %d, want the pause after phase two: %s%s", r.code, r.stdout, r.stderr)
	}
	got := fileContent(t, prompt)
	section := "## Changed in the work tree while the session was paused"
	if !strings.Contains(got, section) || !strings.Contains(got, "- added.txt\n- notes.md") {
		t.Errorf("the resume context does not list the human's changes:\n%s", got)
	}
	if strings.Contains(got, "conflict.txt") || strings.Contains(got, "phases.yaml") {
		t.Errorf("the resume context lists files nobody changed:\n%s", got)
	}

	write(t, dir, "conflict.txt", "<<<<<<< HEAD\na\n=======\nb\n>>>>>>> other\n")
	r := pipelineEnv(t, dir, env, "resume")
	s := pipelineEnvStatus(t, dir, env)
	if r.code != 3 || s.PauseReason != "conflicts" || !strings.Contains(s.PauseNote, "conflict.txt") || s.Phase != "three" {
		t.Errorf("resume over conflict markers: exit %d, %s at %s, reason %q (%s)\n%s", r.code, s.Status, s.Phase, s.PauseReason, s.PauseNote, r.stderr)
	}
	write(t, dir, "conflict.txt", "a\nb\n")
	if r := pipelineEnv(t, dir, env, "resume"); r.code != 0 {
		t.Fatalf("resume once resolved: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if got := fileContent(t, prompt); !strings.Contains(got, "- conflict.txt") || !strings.Contains(got, "third") {
		t.Errorf("phase three's resume context does not list the resolved file:\n%s", got)
	}
}

// Two forks of a session, each from the checkpoint before a phase, run
// at once in worktrees of their own and both complete; each records its
// parent, and neither touches the parent's files.
func TestTwoForksRunAtOnceInTheirOwnWorktrees(t *testing.T) {
	dir, env := gitRepo(t)
	// Under the forks, phase two waits until both are in it: they run at
	// once, or the step times out.
	write(t, dir, "phases.yaml", `version: 1
name: forks
phases:
  - name: one
    steps: [{name: write, run: "echo one > one.txt"}]
  - name: two
    steps:
      - name: meet
        timeout: 30s
        run: 'if [ -n "$SYNC" ]; then touch "$SYNC/$(basename "$PWD")"; until [ "$(ls "$SYNC" | wc -l)" -ge 2 ]; do sleep 0.05; done; fi; echo two >> one.txt; echo "$PWD" > where.txt'
`)
	gitOut(t, dir, env, "add", ".")
	gitOut(t, dir, env, "commit", "-qm", "start")
	if r := pipelineEnv(t, dir, env, "run"); r.code != 0 {
		t.Fatalf("run: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	parent, commits := checkpoints(t, dir, env)
	head := gitOut(t, dir, env, "rev-parse", "HEAD")

	forkEnv := append(slices.Clone(env), "SYNC="+t.TempDir())
	wt := t.TempDir()
	trees := []string{filepath.Join(wt, "fork-a"), filepath.Join(wt, "fork-b")}
	var cmds []*exec.Cmd
	outs := make([]*strings.Builder, 2)
	for i, tree := range trees {
		cmd := exec.Command(binary, "fork", "--at", "two", "--worktree", tree)
		outs[i] = &strings.Builder{}
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, forkEnv, outs[i], outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("fork %s: %v\n%s", trees[i], err, outs[i])
		}
	}
	for i, tree := range trees {
		if !strings.Contains(outs[i].String(), tree) {
			t.Errorf("fork's output does not name its folder %s:\n%s", tree, outs[i])
		}
		if got := fileContent(t, filepath.Join(tree, "one.txt")); got != "one\ntwo\n" {
			t.Errorf("%s/one.txt is %q, want phase one's checkpoint and phase two's line", tree, got)
		}
		if got := fileContent(t, filepath.Join(tree, "where.txt")); strings.TrimSpace(got) != tree {
			t.Errorf("%s/where.txt is %q: the phase ran elsewhere", tree, got)
		}
		r := pipelineEnv(t, tree, env, "status", "-o", "json")
		var s struct {
			Status string `json:"status"`
			Parent struct {
				Session    string `json:"session"`
				Phase      string `json:"phase"`
				Checkpoint string `json:"checkpoint"`
			} `json:"parent"`
			Phases []struct {
				Status string `json:"status"`
			} `json:"phases"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
			t.Fatalf("status in %s: %v: %s%s", tree, err, r.stdout, r.stderr)
		}
		if s.Status != "completed" || s.Parent.Session != parent || s.Parent.Phase != "two" || s.Parent.Checkpoint != commits[0] ||
			s.Phases[0].Status != "skipped" {
			t.Errorf("the fork in %s: %+v", tree, s)
		}
	}
	if got := fileContent(t, filepath.Join(dir, "one.txt")); got != "one\ntwo\n" {
		t.Errorf("the parent's one.txt became %q", got)
	}
	if got := gitOut(t, dir, env, "rev-parse", "HEAD"); got != head {
		t.Errorf("the parent's HEAD moved: %s → %s", head, got)
	}
	r := pipelineEnv(t, dir, env, "sessions")
	for _, tree := range trees {
		if !strings.Contains(r.stdout, tree) {
			t.Errorf("sessions does not show the fork in %s under its parent:\n%s", tree, r.stdout)
		}
	}
}
