// Package cachetest gives a package's tests a user cache folder of their
// own: pipeline keeps its plan cache (256 entries) and the answers of git
// check-ignore in the user's cache folder, and tests that shared the
// user's would evict the user's entries and see each other's.
package cachetest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Main runs the tests of m with a cache folder of their own (Isolate),
// and is their exit code. A package's TestMain is
//
//	func TestMain(m *testing.M) { os.Exit(cachetest.Main(m)) }
func Main(m *testing.M) int {
	cleanup, err := Isolate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cachetest:", err)
		return 1
	}
	defer cleanup()
	return m.Run()
}

// ownerEnv names the folder Isolate made, in the environment of the
// programs the tests start: a test binary started again as a child of
// its tests (a helper process, which may end by a signal or be killed
// and never remove anything) uses its parent's folder, which the parent
// removes, rather than leave one of its own in the temporary folder.
const ownerEnv = "PIPELINE_TEST_CACHE_HOME"

// Isolate points $XDG_CACHE_HOME, for this process and the programs it
// starts, at a new temporary folder, and returns what removes it. The Go
// build cache, which is under the same folder unless GOCACHE says
// otherwise, stays where it was: a go build or go list that a test runs
// is not made from nothing. In a process started by tests that isolated
// theirs, it keeps their folder, and cleanup leaves it to them.
func Isolate() (cleanup func(), err error) {
	if inherited := os.Getenv(ownerEnv); inherited != "" && inherited == os.Getenv("XDG_CACHE_HOME") {
		return func() {}, nil
	}
	if os.Getenv("GOCACHE") == "" {
		if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
			if gocache := strings.TrimSpace(string(out)); gocache != "" && gocache != "off" {
				os.Setenv("GOCACHE", gocache)
			}
		}
	}
	dir, err := os.MkdirTemp("", "pipeline-test-cache-")
	if err != nil {
		return nil, err
	}
	if err := errors.Join(os.Setenv("XDG_CACHE_HOME", dir), os.Setenv(ownerEnv, dir)); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return func() { os.RemoveAll(dir) }, nil
}
