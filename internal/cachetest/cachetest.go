// Package cachetest gives a package's tests a user cache folder of their
// own: pipeline keeps its plan cache (256 entries) and the answers of git
// check-ignore in the user's cache folder, and tests that shared the
// user's would evict the user's entries and see each other's.
package cachetest

import (
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

// Isolate points $XDG_CACHE_HOME, for this process and the programs it
// starts, at a new temporary folder, and returns what removes it. The Go
// build cache, which is under the same folder unless GOCACHE says
// otherwise, stays where it was: a go build or go list that a test runs
// is not made from nothing.
func Isolate() (cleanup func(), err error) {
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
	if err := os.Setenv("XDG_CACHE_HOME", dir); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return func() { os.RemoveAll(dir) }, nil
}
