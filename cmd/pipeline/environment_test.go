package main

import (
	"github.com/pipeline-dev/pipeline/app"

	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// unprivileged runs the built command in dir as a user whom file
// permissions bind: this user, or nobody when the tests run as root (whom
// no permission stops). dir and its files must be readable by others.
func unprivileged(t *testing.T, dir string, args ...string) result {
	t.Helper()
	bin := binary
	cmd := exec.Command(bin, args...)
	if os.Geteuid() == 0 {
		// nobody cannot reach the binary in the tests' private folder.
		shared := sharedDir(t)
		bin = filepath.Join(shared, "pipeline")
		copyFile(t, binary, bin, 0o755)
		cmd = exec.Command(bin, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	cmd.Dir = dir
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatal(err)
	}
	return result{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
}

// sharedDir is a new folder that every user can enter.
func sharedDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pipeline-env-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(path, 0o755) // so that RemoveAll can empty it
			}
			return nil
		})
		os.RemoveAll(dir)
	})
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func copyFile(t *testing.T, from, to string, mode fs.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

const minimalPipeline = `version: 1
agent: {kind: command, command: [sh, -c, 'echo done']}
phases: [{name: only}]
`

// wantEnvironmentError checks that r is exit 2 with the error and the hint
// to keep the sessions elsewhere: never 1, which says a step failed.
func wantEnvironmentError(t *testing.T, what string, r result, message string) {
	t.Helper()
	if r.code != exitUsage || !strings.Contains(r.stderr, message) || !strings.Contains(r.stderr, "hint: ") ||
		!strings.Contains(r.stderr, "--state-dir") {
		t.Errorf("%s: exit %d, want 2 with %q and a hint naming --state-dir; stderr:\n%s", what, r.code, message, r.stderr)
	}
}

func TestUnreadablePhasesYAMLExits2(t *testing.T) {
	dir := sharedDir(t)
	write(t, dir, "phases.yaml", minimalPipeline)
	if err := os.Chmod(filepath.Join(dir, "phases.yaml"), 0); err != nil {
		t.Fatal(err)
	}
	for _, command := range []string{"run", "plan"} {
		wantEnvironmentError(t, command, unprivileged(t, dir, command), "phases.yaml: permission denied")
	}
}

func TestStateDirThatIsAFileExits2(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", minimalPipeline)
	write(t, dir, ".pipeline", "not a folder")
	wantEnvironmentError(t, "run", pipeline(t, dir, "run"), ".pipeline: not a directory")
	if content, err := os.ReadFile(filepath.Join(dir, ".pipeline")); err != nil || string(content) != "not a folder" {
		t.Errorf("the file in the way was changed: %q, %v", content, err)
	}
}

func TestReadOnlyFolderExits2(t *testing.T) {
	dir := sharedDir(t)
	write(t, dir, "phases.yaml", minimalPipeline)
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	wantEnvironmentError(t, "run", unprivileged(t, dir, "run"), "permission denied")
}

func TestPhasesYAMLThatIsAFolderExits2(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "phases.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	wantEnvironmentError(t, "run", pipeline(t, dir, "run"), "is a directory")
}

// Errors of the machine map to exit 2 by their errno, however they are
// wrapped, with a hint that names the path; a read-only or full disk
// too, which a test cannot make.
func TestEnvironmentErrorsExit2(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EACCES, syscall.EPERM, syscall.EROFS, syscall.ENOTDIR, syscall.EISDIR, syscall.ENOSPC, syscall.EDQUOT} {
		err := &commandError{fmt.Errorf("recording the session: %w", &fs.PathError{Op: "open", Path: "/srv/.pipeline/x", Err: errno})}
		if got := exitCode(err); got != exitUsage {
			t.Errorf("%v: exit %d, want 2", errno, got)
		}
		if hint := app.Hint(err); !strings.Contains(hint, "/srv/.pipeline/x") || !strings.Contains(hint, "--state-dir") {
			t.Errorf("%v: hint %q", errno, hint)
		}
	}
	if hint := app.Hint(&fs.PathError{Op: "mkdir", Path: "p", Err: syscall.EROFS}); !strings.Contains(hint, "read-only") {
		t.Errorf("EROFS: hint %q", hint)
	}
	// A step's failure and other errors keep their codes.
	if got := exitCode(&commandError{errors.New("boom")}); got != exitFailed {
		t.Errorf("a plain error: exit %d, want 1", got)
	}
	if hint := app.Hint(&commandError{errors.New("boom")}); hint != "" {
		t.Errorf("a plain error has a hint: %q", hint)
	}
}
