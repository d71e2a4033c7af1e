package local_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/clock"
)

// What a run keeps of a git work tree (each checkpoint's tree, each
// phase's tree and HEAD before and files_changed, each step's write
// scope), checked against git's own view of the work tree; and how many
// looks at the work tree (git write-tree) it takes for that.

// stepsView keeps each step's result as the runner gives it; then, when
// set, runs after for it (in the runner's goroutine, after the step's
// last look at the work tree and before its end is recorded).
type stepsView struct {
	*testView
	mu      sync.Mutex
	results []stepSeen
	after   func(stepSeen)
}

type stepSeen struct {
	Phase, Step string
	Attempt     int
	Result      engine.StepResult
}

func (v *stepsView) StepFinished(info local.StepInfo, r engine.StepResult) {
	seen := stepSeen{info.Phase, info.Step, info.Attempt, r}
	v.mu.Lock()
	v.results = append(v.results, seen)
	after := v.after
	v.mu.Unlock()
	if after != nil {
		after(seen)
	}
}

func (v *stepsView) steps() []stepSeen {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.results)
}

// gitRepoWith makes a git work tree of one commit holding files, with
// phases.yaml among them; the steps commit as t@t.
func gitRepoWith(t *testing.T, files map[string]string) (*harness, *stepsView) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed for this test")
	}
	for _, kv := range [][2]string{{"GIT_AUTHOR_NAME", "t"}, {"GIT_AUTHOR_EMAIL", "t@t"}, {"GIT_COMMITTER_NAME", "t"}, {"GIT_COMMITTER_EMAIL", "t@t"}} {
		t.Setenv(kv[0], kv[1])
	}
	h := newHarness(t, "version: 1\nphases: [{name: none, steps: [{run: \"true\"}]}]\n", clock.Real{})
	for name, text := range files {
		path := filepath.Join(h.dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, h.dir, "init", "-q", "-b", "main")
	gitIn(t, h.dir, "add", "-A")
	gitIn(t, h.dir, "commit", "-qm", "init")
	plan, err := spec.Load(h.file, "")
	if err != nil {
		t.Fatal(err)
	}
	h.plan = plan
	v := &stepsView{testView: h.view}
	h.driver.View = v
	return h, v
}

// gitIn runs git in dir and returns what it printed.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitLogged puts a git first on PATH that writes its arguments, one
// call a line, to the file it returns, then runs the real git.
func gitLogged(t *testing.T) string {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("git is needed for this test")
	}
	bin, log := t.TempDir(), filepath.Join(t.TempDir(), "git.log")
	script := "#!/bin/sh\necho \"$*\" >> '" + log + "'\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return log
}

// treesWritten counts the git write-tree calls of a gitLogged log.
func treesWritten(t *testing.T, log string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if line == "write-tree" {
			n++
		}
	}
	return n
}

// workTreeNow is the tree of the work tree as it is (git's own look,
// through a throwaway index).
func workTreeNow(t *testing.T, dir string) string {
	t.Helper()
	env := append(os.Environ(), "GIT_INDEX_FILE="+filepath.Join(t.TempDir(), "index"))
	for _, args := range [][]string{{"read-tree", "HEAD"}, {"add", "-A", "--", "."}, {"write-tree"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		if args[0] == "write-tree" {
			return strings.TrimSpace(string(out))
		}
	}
	return ""
}

func filesOf(t *testing.T, dir, commit string) []string {
	t.Helper()
	return strings.Fields(gitIn(t, dir, "ls-tree", "-r", "--name-only", commit))
}

func treeOf(t *testing.T, dir, commit string) string {
	t.Helper()
	return gitIn(t, dir, "rev-parse", commit+"^{tree}")
}

// completed runs the harness's session to its end, which must be a
// completion.
func completed(t *testing.T, h *harness) engine.State {
	t.Helper()
	s := h.await(h.start())
	if s.Status != engine.StatusCompleted {
		t.Fatalf("status %s\n%s", s.Status, h.view.saidText())
	}
	return s
}

// isTheWorkTree checks that a checkpoint holds the work tree as it is.
func isTheWorkTree(t *testing.T, h *harness, checkpoint string) {
	t.Helper()
	if got, now := treeOf(t, h.dir, checkpoint), workTreeNow(t, h.dir); got != now {
		t.Errorf("checkpoint %s holds tree %s, the work tree is %s\n%s", checkpoint, got, now, h.view.saidText())
	}
}

// wantFiles checks a phase's files_changed.
func wantFiles(t *testing.T, s engine.State, phase string, files ...string) {
	t.Helper()
	for _, p := range s.Phases {
		if p.Name == phase {
			if !slices.Equal(p.Files, files) {
				t.Errorf("phase %s: files changed %q, want %q", phase, p.Files, files)
			}
			return
		}
	}
	t.Errorf("no phase %s", phase)
}

// phasesStartFromTheirCheckpoints: nothing wrote the work tree between
// a phase's checkpoint and the next phase's first look.
func phasesStartFromTheirCheckpoints(t *testing.T, h *harness, s engine.State) {
	t.Helper()
	for i := 0; i+1 < len(s.Phases); i++ {
		p, next := s.Phases[i], s.Phases[i+1]
		if p.Checkpoint == "" || next.TreeBefore == "" {
			continue
		}
		if got := treeOf(t, h.dir, p.Checkpoint); got != next.TreeBefore {
			t.Errorf("phase %s starts from tree %s, its predecessor's checkpoint holds %s", next.Name, next.TreeBefore, got)
		}
	}
}

// TestAPhasesCheckpointIsItsStepsLastLook: the phase's checkpoint is the
// tree its step's last look (for files_changed) wrote, not a tree
// written again: a run of two phases writes five trees where it wrote
// seven (the start; each phase's first step as it starts, and as it
// ends). The checkpoints and files_changed are what git sees.
func TestAPhasesCheckpointIsItsStepsLastLook(t *testing.T) {
	h, _ := gitRepoWith(t, map[string]string{"phases.yaml": `version: 1
phases:
  - name: first
    steps: [{run: 'echo one > a.txt'}]
  - name: second
    steps: [{run: 'echo two > b.txt'}]
`})
	log := gitLogged(t)
	s := completed(t, h)
	if n := treesWritten(t, log); n != 5 {
		b, _ := os.ReadFile(log)
		t.Fatalf("%d trees written, want 5:\n%s", n, b)
	}
	wantFiles(t, s, "first", "a.txt")
	wantFiles(t, s, "second", "b.txt")
	id := h.sess.ID()
	for ref, want := range map[string][]string{
		"00-start":  {"phases.yaml"},
		"01-first":  {"a.txt", "phases.yaml"},
		"02-second": {"a.txt", "b.txt", "phases.yaml"},
	} {
		if got := filesOf(t, h.dir, "refs/pipeline/"+id+"/"+ref); !slices.Equal(got, want) {
			t.Errorf("checkpoint %s holds %q, want %q", ref, got, want)
		}
	}
	phasesStartFromTheirCheckpoints(t, h, s)
	isTheWorkTree(t, h, "refs/pipeline/"+id+"/02-second")
}

// TestTheLastCheckpointHoldsTheSpecsStatus: the session writes its
// spec's status as it completes, after the step's last look at the work
// tree: the phase's checkpoint is the work tree with that write, not the
// tree the step left. A status held at in-progress by an unchecked item
// is not written, and the checkpoint is the tree the step left.
func TestTheLastCheckpointHoldsTheSpecsStatus(t *testing.T) {
	for _, c := range []struct{ name, spec, start, last string }{
		{"completed", "---\nstatus: planned\n---\n# Greeting\n", "status: in-progress", "status: complete"},
		{"held", "---\nstatus: planned\n---\n# Spec\n\n- [ ] not yet\n", "status: in-progress", "status: in-progress"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, _ := gitRepoWith(t, map[string]string{
				"spec.md":     c.spec,
				"phases.yaml": "version: 1\nspec: spec.md\nphases:\n  - name: one\n    steps: [{run: 'echo a > a.txt'}]\n  - name: two\n    steps: [{run: 'echo b > b.txt'}]\n",
			})
			s := completed(t, h)
			phasesStartFromTheirCheckpoints(t, h, s)
			for commit, want := range map[string]string{s.StartCheckpoint: c.start, s.Phases[1].Checkpoint: c.last} {
				if text := gitIn(t, h.dir, "show", commit+":spec.md"); !strings.Contains(text, want+"\n") {
					t.Errorf("checkpoint %s keeps the spec\n%s\nwant %q in it", commit, text, want)
				}
			}
			isTheWorkTree(t, h, s.Phases[1].Checkpoint)
		})
	}
}

// TestACheckpointAfterARevertKeepsTheFilesPutBack: a step's change
// outside its phase's writes, put back (on_out_of_scope: revert), is in
// neither the phase's files_changed nor its checkpoint.
func TestACheckpointAfterARevertKeepsTheFilesPutBack(t *testing.T) {
	h, _ := gitRepoWith(t, map[string]string{
		"keep.txt": "as committed\n",
		"phases.yaml": `version: 1
phases:
  - name: docs
    writes: [docs]
    on_out_of_scope: revert
    steps: [{run: 'mkdir -p docs && echo new > docs/a.md && echo changed > keep.txt'}]
`,
	})
	s := completed(t, h)
	wantFiles(t, s, "docs", "docs/a.md")
	ref := "refs/pipeline/" + h.sess.ID() + "/01-docs"
	if text := gitIn(t, h.dir, "show", ref+":keep.txt"); text != "as committed" {
		t.Errorf("the checkpoint keeps keep.txt as %q, want it put back", text)
	}
	if got := filesOf(t, h.dir, ref); !slices.Contains(got, "docs/a.md") {
		t.Errorf("the checkpoint lacks the step's own change: %q", got)
	}
}

// TestAFileWrittenBetweenPhasesIsNoStepsChange: a program outside the
// run (a file watcher, a formatter on save, a dev server, the human)
// writes a file after a step's last look and before the next phase's
// step starts (here: as the step's end is shown). The phase's checkpoint
// is the tree its step left, without the file; the next step is judged
// against the work tree as it starts, so its write scope does not put
// the file back (delete it) and its files_changed does not list it.
func TestAFileWrittenBetweenPhasesIsNoStepsChange(t *testing.T) {
	h, v := gitRepoWith(t, map[string]string{"phases.yaml": `version: 1
phases:
  - name: first
    steps: [{name: one, run: 'echo one > one.txt'}]
  - name: second
    writes: [two/**]
    on_out_of_scope: revert
    steps: [{name: two, run: 'mkdir -p two && echo two > two/x'}]
`})
	late := filepath.Join(h.dir, "late.txt")
	v.after = func(s stepSeen) {
		if s.Step == "one" {
			if err := os.WriteFile(late, []byte("late\n"), 0o644); err != nil {
				t.Error(err)
			}
		}
	}
	s := completed(t, h)
	if _, err := os.Stat(late); err != nil {
		t.Errorf("late.txt, written before phase second started, was put back by its write scope: %v\n%s", err, h.view.saidText())
	}
	wantFiles(t, s, "first", "one.txt")
	wantFiles(t, s, "second", "two/x")
	if got := filesOf(t, h.dir, s.Phases[0].Checkpoint); slices.Contains(got, "late.txt") {
		t.Errorf("phase first's checkpoint holds late.txt, written after its step's last look: %q", got)
	}
	if got := filesOf(t, h.dir, s.Phases[1].TreeBefore); !slices.Contains(got, "late.txt") {
		t.Errorf("phase second starts from a tree without late.txt: %q", got)
	}
}

// manyPhases: two steps a phase, a write scope that puts back, a phase
// skipped by when:, steps that commit, switch branch, reset HEAD and
// delete files; the spec's status moves.
const manyPhases = `
  - name: p1
    steps:
      - {name: a, run: 'echo a > a.txt'}
      - {name: b, run: 'echo b > b.txt'}
  - name: p2
    writes: [docs/**]
    on_out_of_scope: revert
    steps:
      - {name: c, run: 'mkdir -p docs && echo x > docs/x.md && echo changed > keep.txt'}
      - {name: d, run: 'echo y > docs/y.md && echo c > c.txt'}
  - name: p3
    when: phases.p1.files_changed > 100
    steps: [{name: e, run: 'echo skipped > skipped.txt'}]
  - name: p4
    steps: [{name: f, run: 'git add -A && git commit -q --allow-empty -m step4 && git checkout -q -b feature && echo d > d.txt'}]
  - name: p5
    steps: [{name: g, run: 'git reset -q --hard HEAD~1 && echo e > e.txt'}]
  - name: p6
    steps: [{name: h, run: 'rm -f a.txt && echo f > f.txt'}]
`

func runManyPhases(t *testing.T, checkpoint string) (*harness, engine.State) {
	t.Helper()
	h, _ := gitRepoWith(t, map[string]string{
		"keep.txt":    "as committed\n",
		"spec.md":     "---\nstatus: planned\n---\n# Spec\n",
		"phases.yaml": "version: 1\nspec: spec.md\ncheckpoint: " + checkpoint + "\nphases:" + manyPhases,
	})
	s := completed(t, h)
	wantFiles(t, s, "p1", "a.txt", "b.txt")
	wantFiles(t, s, "p2", "docs/x.md", "docs/y.md")
	return h, s
}

func TestManyPhasesCheckpointRefs(t *testing.T) {
	h, s := runManyPhases(t, "refs")
	wantFiles(t, s, "p4", "d.txt")
	wantFiles(t, s, "p6", "f.txt")
	phasesStartFromTheirCheckpoints(t, h, s)
	id := h.sess.ID()
	isTheWorkTree(t, h, "refs/pipeline/"+id+"/06-p6")
	if text := gitIn(t, h.dir, "show", "refs/pipeline/"+id+"/02-p2:keep.txt"); text != "as committed" {
		t.Errorf("p2's checkpoint keeps keep.txt as %q", text)
	}
	if slices.Contains(filesOf(t, h.dir, "refs/pipeline/"+id+"/02-p2"), "c.txt") {
		t.Errorf("p2's checkpoint keeps c.txt, which was put back")
	}
}

func TestManyPhasesCheckpointCommit(t *testing.T) {
	_, s := runManyPhases(t, "commit")
	wantFiles(t, s, "p6", "a.txt", "f.txt")
	for i := 0; i+1 < len(s.Phases); i++ {
		p, next := s.Phases[i], s.Phases[i+1]
		if p.Checkpoint != "" && next.HeadBefore != "" && next.HeadBefore != p.Checkpoint {
			t.Errorf("phase %s starts at HEAD %s, its predecessor committed %s", next.Name, next.HeadBefore, p.Checkpoint)
		}
	}
}

func TestManyPhasesCheckpointOff(t *testing.T) {
	_, s := runManyPhases(t, "off")
	wantFiles(t, s, "p6", "f.txt")
}

// TestRetriesAndDoneWhenJudgeEachAttempt: a phase's steps run again
// (retry, done_when); the write scope judges each attempt's own changes.
func TestRetriesAndDoneWhenJudgeEachAttempt(t *testing.T) {
	h, v := gitRepoWith(t, map[string]string{"phases.yaml": `version: 1
phases:
  - name: flaky
    writes: [out/**]
    on_out_of_scope: revert
    retry: {when: exit_code != 0, backoff: 0s, escalate_when: attempt > 4}
    steps:
      - {name: try, run: 'mkdir -p out && echo $PIPELINE_ATTEMPT >> out/log && echo stray > stray-$PIPELINE_ATTEMPT.txt && test -f out/ok || { touch out/ok; exit 1; }'}
  - name: again
    writes: [n/**]
    on_out_of_scope: revert
    done_when: steps.check.exit_code == 0
    steps:
      - {name: work, run: 'mkdir -p n && echo x >> n/count && echo y > stray.txt'}
      - {name: check, run: 'test $(wc -l < n/count) -ge 2'}
  - name: last
    steps: [{name: z, run: 'echo z > z.txt'}]
`})
	s := completed(t, h)
	phasesStartFromTheirCheckpoints(t, h, s)
	for _, st := range v.steps() {
		if st.Step == "try" || st.Step == "work" {
			if len(st.Result.OutOfScope) != 1 || !st.Result.Reverted {
				t.Errorf("step %s#%d: out of scope %q reverted %v, want its one stray file put back", st.Step, st.Attempt, st.Result.OutOfScope, st.Result.Reverted)
			}
		}
	}
	for _, f := range []string{"stray-1.txt", "stray-2.txt", "stray.txt"} {
		if _, err := os.Stat(filepath.Join(h.dir, f)); err == nil {
			t.Errorf("%s is left", f)
		}
	}
}

// TestAPauseCheckpointIsTheWorkTreeAndTheResumeGoesOn: a pause keeps a
// checkpoint of the work tree as the step left it; a human changes files
// while paused; the resume goes on from there.
func TestAPauseCheckpointIsTheWorkTreeAndTheResumeGoesOn(t *testing.T) {
	h, _ := gitRepoWith(t, map[string]string{"phases.yaml": `version: 1
defaults:
  pause_when: {failure: exit_code != 0}
phases:
  - name: first
    steps: [{name: one, run: 'echo one > one.txt'}]
  - name: second
    writes: [two/**]
    on_out_of_scope: revert
    steps: [{name: two, run: 'mkdir -p two && echo two > two/x && echo s > s.txt && test -f human.txt'}]
  - name: third
    steps: [{name: three, run: 'echo three > three.txt'}]
`})
	s := h.await(h.start())
	if s.Status != engine.StatusPaused || s.PauseCheckpoint == "" {
		t.Fatalf("status %s, pause checkpoint %q\n%s", s.Status, s.PauseCheckpoint, h.view.saidText())
	}
	isTheWorkTree(t, h, s.PauseCheckpoint)
	if err := os.WriteFile(filepath.Join(h.dir, "human.txt"), []byte("by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	events, err := h.sess.Resume(time.Now(), "go on", "")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan engine.State, 1)
	go func() {
		s, err := h.driver.Run(context.Background(), h.sess, events...)
		if err != nil {
			t.Errorf("resume: %v", err)
		}
		done <- s
	}()
	s = h.await(done)
	if s.Status != engine.StatusCompleted {
		t.Fatalf("status %s\n%s", s.Status, h.view.saidText())
	}
	phasesStartFromTheirCheckpoints(t, h, s)
	wantFiles(t, s, "third", "three.txt")
}
