package store

import (
	"os"
	"os/exec"
	"testing"
)

// childEnv, set in the environment of a re-run of this test binary, makes
// the test it names act as the child a parent test needs (a process that
// holds a lock, a process with a file size limit) instead of running.
const childEnv = "PIPELINE_STORE_TEST_CHILD"

// isChild reports whether this process is a child started by childCommand
// for the running test.
func isChild(t *testing.T) bool {
	return os.Getenv(childEnv) == t.Name()
}

// childCommand re-runs the test binary with only the calling test
// selected, in child mode, with extra environment.
func childCommand(t *testing.T, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=" + t.Name()}, env...)...)
	cmd.Stderr = os.Stderr
	return cmd
}
