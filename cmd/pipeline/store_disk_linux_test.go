package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// These tests need a small disk to fill, or a folder made read-only under
// a root that can write anywhere: a tmpfs of their own. Each runs again in
// a child of the test binary, in new user and mount namespaces, where it
// may mount one without privileges (as root, a mount namespace alone
// does). The mounts end with the child.

// namespaceEnv, in a child's environment, names the test it runs inside
// the namespaces.
const namespaceEnv = "PIPELINE_TEST_IN_NAMESPACE"

// inNamespace returns true in the child, where the test goes on (its
// mounts private to it), and false in the parent, once the child has
// run and its result has been reported. A machine where neither user
// namespaces nor root are available fails the test: it is not skipped.
func inNamespace(t *testing.T) bool {
	t.Helper()
	if os.Getenv(namespaceEnv) == t.Name() {
		// Mounts must not reach the parent's namespace.
		if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
			t.Fatalf("making the mounts private: %v", err)
		}
		return true
	}
	attempts := []*syscall.SysProcAttr{{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}}
	if os.Geteuid() == 0 {
		attempts = append(attempts, &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS})
	}
	var startErrs []error
	for _, attr := range attempts {
		cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), namespaceEnv+"="+t.Name())
		cmd.SysProcAttr = attr
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			startErrs = append(startErrs, err)
			continue
		}
		err := cmd.Wait()
		t.Logf("in new namespaces:\n%s", out.String())
		if err != nil {
			t.Fatalf("the test failed in its namespaces: %v", err)
		}
		if !strings.Contains(out.String(), "--- PASS: "+t.Name()) {
			t.Fatal("the test did not run in its namespaces")
		}
		return false
	}
	t.Fatalf(`this test mounts a small tmpfs, which needs user namespaces or root, and neither is available (%v).
Enable unprivileged user namespaces (sysctl user.max_user_namespaces=15000, kernel.unprivileged_userns_clone=1,
kernel.apparmor_restrict_unprivileged_userns=0; check with: unshare -rm true) or run the tests as root.`, errors.Join(startErrs...))
	return false
}

// mountTmpfs mounts a tmpfs of size bytes, private to this user, at a new
// folder.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		t.Fatalf("mounting a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fill writes path until the disk is full, and checks that it is.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, chunk := range []int{64 << 10, 4 << 10, 1} {
		buf := make([]byte, chunk)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("filling the disk: %v", err)
				}
				break
			}
		}
	}
}

// Issue 9, a full disk: a run whose record cannot be written pauses with
// reason store-error, exits 3 and never says completed; no file of the
// store is left truncated or with part of a line; run --new on the full
// disk is refused (exit 2, nothing made); clean on it leaves the index
// whole; once space is freed, resume continues the session to its end.
func TestFullDiskPausesTheRunAndResumeFinishesIt(t *testing.T) {
	if !inNamespace(t) {
		return
	}
	disk := mountTmpfs(t, "1m")
	state := filepath.Join(disk, "state")
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
phases:
  - name: one
    steps: [{run: 'echo started; while [ ! -f go-on ]; do sleep 0.01; done; echo finishing'}]
  - name: two
    steps: [{run: 'yes output | head -n 4000'}]
`)
	// The second step's output (its tail goes into the event that ends it,
	// and into the snapshot) needs more room than a step frees as it ends
	// (its process file, a page): the disk stays full for the record.
	// Finished sessions of another pipeline, for clean.
	write(t, filepath.Join(dir, "other"), "phases.yaml", "version: 1\nphases: [{name: a, steps: [{run: 'true'}]}]\n")
	for i := 0; i < 2; i++ {
		if r := pipeline(t, filepath.Join(dir, "other"), "run", "--new", "--state-dir", state); r.code != 0 {
			t.Fatalf("other run: exit %d, %s", r.code, r.stderr)
		}
	}

	run := pipelineStart(t, dir, "run", "--state-dir", state, "--grace", "1s")
	run.await(t, "| started")
	fill(t, filepath.Join(disk, "filler"))
	write(t, dir, "go-on", "")
	var out []string
	for done := false; !done; {
		select {
		case line := <-run.lines:
			out = append(out, line)
		case code := <-run.done:
			for len(run.lines) > 0 {
				out = append(out, <-run.lines)
			}
			shown := strings.Join(out, "\n")
			if code != exitPaused {
				t.Fatalf("the run on a full disk exited %d, want %d (paused)\n%s\n%s", code, exitPaused, shown, run.stderr.String())
			}
			if !strings.Contains(shown, "paused: store-error: no space left on device") {
				t.Errorf("the run did not say why it paused:\n%s", shown)
			}
			if strings.Contains(shown, "completed") {
				t.Errorf("the run said completed:\n%s", shown)
			}
			if !strings.Contains(run.stderr.String(), "pipeline resume") {
				t.Errorf("the run did not say how to go on: %s", run.stderr.String())
			}
			t.Logf("the run on a full disk (exit %d):\n%s\n%s", code, shown, run.stderr.String())
			done = true
		}
	}
	storeReadable(t, state)
	id := status(t, dir, "--state-dir", state).ID
	before := eventsOf(t, state, id)

	// The failed writes gave back what they had taken: fill that too.
	fill(t, filepath.Join(disk, "filler-2"))
	r := pipeline(t, dir, "run", "--new", "--state-dir", state)
	if r.code != exitUsage || !strings.Contains(r.stderr, "no space left on device") || !strings.Contains(r.stderr, "--state-dir") {
		t.Errorf("run --new on a full disk: exit %d, %s", r.code, r.stderr)
	}
	if made, _ := filepath.Glob(filepath.Join(state, "sessions", "*")); len(made) != 3 {
		t.Errorf("run --new on a full disk left %v", made)
	}
	storeReadable(t, state)

	r = pipeline(t, dir, "clean", "--older-than", "1ms", "--keep", "0", "--state-dir", state)
	t.Logf("clean on a full disk: exit %d, %s%s", r.code, r.stdout, r.stderr)
	if r.code != 0 && r.code != exitUsage {
		t.Errorf("clean on a full disk: exit %d, %s", r.code, r.stderr)
	}
	storeReadable(t, state)
	indexMatchesFolders(t, dir, state)

	for _, filler := range []string{"filler", "filler-2"} {
		if err := os.Remove(filepath.Join(disk, filler)); err != nil {
			t.Fatal(err)
		}
	}
	r = pipeline(t, dir, "resume", "--state-dir", state)
	if r.code != 0 {
		t.Fatalf("resume once space is freed: exit %d, %s %s", r.code, r.stdout, r.stderr)
	}
	if s := status(t, dir, "--state-dir", state); s.ID != id || s.Status != "completed" {
		t.Errorf("after resume: %+v", s)
	}
	if after := eventsOf(t, state, id); !bytes.HasPrefix(after, before) {
		t.Errorf("events recorded before the disk was full were changed:\nbefore %s\nafter %s", before, after)
	}
	storeReadable(t, state)
	indexMatchesFolders(t, dir, state)
}

// Issue 9: a store the environment keeps from being written (a read-only
// folder; a folder that cannot be made) is exit 2 with the way out, never
// 1, and nothing is left half made.
func TestReadOnlyStoreExits2(t *testing.T) {
	if !inNamespace(t) {
		return
	}
	disk := mountTmpfs(t, "1m")
	state := filepath.Join(disk, "state")
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nphases: [{name: a, steps: [{run: 'echo \"[CHECKPOINT] wait\"'}]}, {name: b, steps: [{run: 'true'}]}]\n")
	if r := pipeline(t, dir, "run", "--state-dir", state); r.code != exitPaused {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	id := status(t, dir, "--state-dir", state).ID
	if err := syscall.Mount("", disk, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("making the tmpfs read-only: %v", err)
	}
	for _, args := range [][]string{
		{"run"}, {"run", "--new"}, {"resume"}, {"pause", "--notes", "n"}, {"complete", id},
		{"clean", "--older-than", "1ms"}, {"run", "--state-dir", filepath.Join(disk, "elsewhere")},
	} {
		if len(args) < 2 || args[1] != "--state-dir" {
			args = append(args, "--state-dir", state)
		}
		r := pipeline(t, dir, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "read-only file system") || !strings.Contains(r.stderr, "--state-dir") {
			t.Errorf("%v on a read-only store: exit %d, %s", args, r.code, r.stderr)
		}
	}
	if s := status(t, dir, "--state-dir", state); s.Status != "paused" || s.ID != id {
		t.Errorf("status on a read-only store: %+v", s)
	}
}
