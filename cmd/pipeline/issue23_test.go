package main

import (
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/fsnotify/fsnotify"
)

// Issue 23, item 3: a spec whose pipeline.phases names one phase of four
// ran one phase without a word, and validate said "ok … 1 phases".
// validate and plan warn on standard error at the list, naming what is
// dropped, and validate counts "1 phase".
func TestIssue23ValidateWarnsOfDroppedPhasesAndCountsOnePhase(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nspec: spec.md\nagent: {kind: claude}\nphases: [{name: design}, {name: implementation}, {name: testing}, {name: review}]\n")
	write(t, dir, "spec.md", "---\npipeline:\n  phases:\n    - name: review\n      auto_advance: false\n---\n# spec\n")
	r := pipeline(t, dir, "validate")
	if r.code != 0 || r.stdout != "ok  phases.yaml: 1 phase, with spec spec.md\n" {
		t.Errorf("validate: exit %d, stdout %q; want 0 and ok … 1 phase", r.code, r.stdout)
	}
	for _, out := range []result{r, pipeline(t, dir, "plan")} {
		if !strings.Contains(out.stderr, "spec.md:3:3: warning: pipeline.phases names only 1 phase") ||
			!strings.Contains(out.stderr, "design, implementation, testing are not run") {
			t.Errorf("stderr %q: want the warning at spec.md:3:3 naming the dropped phases", out.stderr)
		}
	}
	write(t, dir, "spec.md", "# no frontmatter\n")
	write(t, dir, "phases.yaml", "version: 1\nagent: {kind: claude}\nphases: [{name: design}]\n")
	if r := pipeline(t, dir, "validate"); r.stdout != "ok  phases.yaml: 1 phase\n" || r.stderr != "" {
		t.Errorf("validate: stdout %q, stderr %q; want ok … 1 phase and no warning", r.stdout, r.stderr)
	}
}

// Issue 23, item 25: a forged line of index.tsv with the id
// ../../../pwned was listed by sessions, and clean stopped on it with exit
// 1 after removing the other sessions. Both skip it with a warning on
// standard error, exit 0, and leave what is outside the store alone.
func TestIssue23ForgedIndexLineDoesNotStopClean(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "project/phases.yaml", "version: 1\nphases: [{name: a, steps: [{run: 'true'}]}]\n")
	project := filepath.Join(dir, "project")
	if r := pipeline(t, project, "run"); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	write(t, dir, "pwned/keep.txt", "mine")
	index := filepath.Join(project, ".pipeline", "index.tsv")
	f, err := os.OpenFile(index, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("../../../pwned\tk\tcompleted\t\t\t0\t0\t1\t1\tp\t\tphases.yaml\n")
	f.Close()
	r := pipeline(t, project, "sessions")
	if r.code != 0 || strings.Contains(r.stdout, "pwned") || !strings.Contains(r.stderr, "warning: ") || !strings.Contains(r.stderr, "index.tsv line 3 is not a line of the sessions index") {
		t.Errorf("sessions: exit %d, stdout %q, stderr %q; want 0, the forged line skipped with a warning", r.code, r.stdout, r.stderr)
	}
	r = pipeline(t, project, "clean", "--older-than", "1ns", "--keep", "0")
	if r.code != 0 || !strings.Contains(r.stdout, "1 session(s) removed") || !strings.Contains(r.stderr, "skipped") {
		t.Errorf("clean: exit %d, stdout %q, stderr %q; want 0 and the real session removed", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned", "keep.txt")); err != nil {
		t.Errorf("outside the store: %v", err)
	}
}

// Issue 23, item 7: Ctrl+C during an import (exit 130) left its
// .new-import-* folder, gigabytes of it, for good. Interrupted while it
// reads, even from a pipe that says nothing more, it removes its folder
// and dies of the interrupt as before.
func TestIssue23InterruptedImportRemovesItsFolder(t *testing.T) {
	dir := t.TempDir()
	from, to := filepath.Join(dir, "from"), filepath.Join(dir, "to")
	for _, p := range []string{from, to} {
		write(t, p, "phases.yaml", "version: 1\nphases: [{name: a, steps: [{run: 'seq 1 200000'}]}]\n")
	}
	if r := pipeline(t, from, "run"); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	archive := filepath.Join(dir, "s.tar.gz")
	if r := pipeline(t, from, "export", "-o", archive); r.code != 0 {
		t.Fatalf("export: exit %d: %s", r.code, r.stderr)
	}
	content, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	sessions := filepath.Join(to, ".pipeline", "sessions")
	if err := os.MkdirAll(sessions, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(to, ".pipeline"), 0o700)
	made := folderMade(t, sessions, ".new-import-")
	cmd := exec.Command(binary, "import", "-")
	cmd.Dir = to
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	// Most of the archive, then nothing more: it waits on its input.
	go stdin.Write(content[:len(content)-64])
	<-made
	cmd.Process.Signal(os.Interrupt)
	err = cmd.Wait()
	status, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case signal.Ignored(os.Interrupt):
		// Started with SIGINT ignored (this test run as a background job
		// of a non-interactive shell), as the import was: it stops and
		// leaves the signal ignored, exiting 130.
		if status.Signaled() || status.ExitStatus() != 130 {
			t.Errorf("import, SIGINT ignored from the start: %v (%s); want exit 130", err, stderr.String())
		}
	case !status.Signaled() || status.Signal() != syscall.SIGINT:
		t.Errorf("import: %v (%s); want it dead of SIGINT (exit 130 in a shell)", err, stderr.String())
	}
	names, _ := os.ReadDir(sessions)
	for _, n := range names {
		t.Errorf("left in the sessions folder: %s", n.Name())
	}
}

// folderMade watches dir and closes the channel it returns when an entry
// whose name starts with prefix is made there.
func folderMade(t *testing.T, dir, prefix string) <-chan struct{} {
	t.Helper()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add(dir); err != nil {
		t.Fatal(err)
	}
	made := make(chan struct{})
	go func() {
		defer w.Close()
		for ev := range w.Events {
			if ev.Has(fsnotify.Create) && strings.HasPrefix(filepath.Base(ev.Name), prefix) {
				close(made)
				return
			}
		}
	}()
	return made
}

// Issue 23, item 7: imports of the same archive at once said "differs
// from the one imported" and exited 2 though it was identical. Every one
// exits 0: one imports it, the others find it there, the same.
func TestIssue23ConcurrentImportsOfOneArchiveAllSucceed(t *testing.T) {
	dir := t.TempDir()
	from, to := filepath.Join(dir, "from"), filepath.Join(dir, "to")
	for _, p := range []string{from, to} {
		write(t, p, "phases.yaml", "version: 1\nphases: [{name: a, steps: [{run: 'seq 1 20000'}]}]\n")
	}
	if r := pipeline(t, from, "run"); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	archive := filepath.Join(dir, "s.tar.gz")
	if r := pipeline(t, from, "export", "-o", archive); r.code != 0 {
		t.Fatalf("export: exit %d: %s", r.code, r.stderr)
	}
	results := make(chan result, 6)
	for i := 0; i < cap(results); i++ {
		go func() { results <- pipelineEnv(t, to, nil, "import", archive) }()
	}
	for i := 0; i < cap(results); i++ {
		if r := <-results; r.code != 0 {
			t.Errorf("import: exit %d: %s", r.code, r.stderr)
		}
	}
	if r := pipeline(t, to, "sessions", "-o", "json"); strings.Count(r.stdout, `"id"`) != 1 {
		t.Errorf("sessions: %s", r.stdout)
	}
}

// Issue 23 (item 22): search with no hit exited 0, where grep exits 1: a
// script could not test for a match. No hit is exit 1, with text or -o
// json; a hit is 0. Searches started at once on a store with no index
// (item 4) all answer.
func TestIssue23SearchExitsOneWithoutAHit(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nphases: [{name: a, steps: [{run: 'echo the wombat digs'}]}]\n")
	if r := pipeline(t, dir, "run"); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	results := make(chan result, 6)
	for range cap(results) {
		go func() { results <- pipelineEnv(t, dir, nil, "search", "wombat") }()
	}
	for range cap(results) {
		if r := <-results; r.code != 0 || !strings.Contains(r.stdout, "«wombat»") || r.stderr != "" {
			t.Errorf("search at once: exit %d, %q, %q; want 0, the hit, nothing on standard error", r.code, r.stdout, r.stderr)
		}
	}
	for _, args := range [][]string{{"search", "koala"}, {"search", "-o", "json", "koala"}} {
		if r := pipeline(t, dir, args...); r.code != exitFailed || r.stderr != "" {
			t.Errorf("%v: exit %d, %q; want 1 and nothing on standard error", args, r.code, r.stderr)
		}
	}
}

// Issue 23, item 27: sessions said "no sessions yet" and exited 0 when
// .pipeline/sessions was a file; a dangling .pipeline link made run say
// "mkdir .pipeline: file exists". Both exit 2 and say what is there.
func TestIssue23BrokenStoreFolderExitsTwoAndSaysWhy(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nphases: [{name: a, steps: [{run: 'true'}]}]\n")
	if err := os.Mkdir(filepath.Join(dir, ".pipeline"), 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, dir, ".pipeline/sessions", "not a folder")
	for _, args := range [][]string{{"sessions"}, {"sessions", "-o", "json"}, {"status"}} {
		if r := pipeline(t, dir, args...); r.code != exitUsage || !strings.Contains(r.stderr, "file named sessions") {
			t.Errorf("%v: exit %d, %q, %q; want 2 and the file named", args, r.code, r.stdout, r.stderr)
		}
	}
	if err := os.RemoveAll(filepath.Join(dir, ".pipeline")); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "state-elsewhere")
	if err := os.Symlink(target, filepath.Join(dir, ".pipeline")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"run"}, {"sessions"}} {
		r := pipeline(t, dir, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "dangling symbolic link to "+target) || strings.Contains(r.stderr, "file exists") {
			t.Errorf("%v: exit %d, %q; want 2, the link and its target named", args, r.code, r.stderr)
		}
	}
}

// Issue 23 (item 22): validate said ok for a command agent whose
// ./path does not exist. It warns at the place (exit 0: an earlier phase
// may build it).
func TestIssue23ValidateWarnsOfAMissingCommand(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nagent: {kind: command, command: [./bin/agent, \"{prompt}\"]}\nphases: [{name: a}]\n")
	r := pipeline(t, dir, "validate")
	if r.code != 0 || !strings.Contains(r.stderr, "phases.yaml:2:34: warning: agent.command: ./bin/agent does not exist") {
		t.Errorf("validate: exit %d, %q; want 0 and the warning at 2:34", r.code, r.stderr)
	}
}
