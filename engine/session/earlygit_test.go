package session_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// slowGit puts on PATH a git that takes a while (as on a busy machine or
// a large repository) and appends a line to the file it returns once
// each command it ran has ended.
func slowGit(t *testing.T) (ended string) {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("no git:", err)
	}
	bin := t.TempDir()
	ended = filepath.Join(bin, "ended")
	script := "#!/bin/sh\nsleep 0.3\n" + real + " \"$@\"\nrc=$?\necho \"$*\" >> " + ended + "\nexit $rc\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return ended
}

// An Open refused (another runner holds the key's lock) leaves no git
// running behind it: GitFor, asked while the lock was taken, and the
// paths it asks git for at once, have ended when Open returns.
func TestARefusedOpenLeavesNoGitRunning(t *testing.T) {
	p := newProject(t, twoPhases)
	if out, err := exec.Command("git", "-C", p.dir, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	ended := slowGit(t)
	lock, err := p.st.Lock(session.KeyOf(p.st, p.file, p.plan), store.Holder{PID: os.Getpid(), Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	_, err = p.open(session.Options{Create: session.Always})
	wantRefused(t, err, "")
	if content, _ := os.ReadFile(ended); len(content) == 0 {
		t.Error("Open returned while the git it started still ran")
	}
}

// A long-lived process (pipeline mcp, the web UI, watch) runs many
// sessions with one Store: each run's files in the store, its kept
// session folder and its lock among them, are closed with it.
func TestManyRunsInOneProcessLeaveNoFileOpen(t *testing.T) {
	p := newProject(t, twoPhases)
	defer p.st.Close()
	run := func() {
		s := p.mustOpen(session.Options{Create: session.Always})
		if _, err := s.Apply(s.Start(time.Now())); err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	run() // what a store opens once and keeps (its folders)
	before := filesOpenIn(t, p.dir)
	for range 30 {
		run()
	}
	if after := filesOpenIn(t, p.dir); len(after) > len(before) {
		t.Errorf("files of the project open after 30 more runs: %q; before: %q", after, before)
	}
}

// filesOpenIn lists the files under dir this process has open.
func filesOpenIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal("no /proc/self/fd:", err)
	}
	var open []string
	for _, e := range entries {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(target, dir) {
			open = append(open, target)
		}
	}
	return open
}
