package cachetest_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/cachetest"
)

// childEnv makes the test binary a child that isolates its cache as a
// helper process of the tests would, prints the folder, and exits
// without removing anything (as one ended by a signal would).
const childEnv = "CACHETEST_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		if _, err := cachetest.Isolate(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Print(os.Getenv("XDG_CACHE_HOME"))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestAChildOfIsolatedTestsKeepsTheirFolder: the test binary started
// again by tests that isolated their cache uses their folder and makes
// none in the temporary folder (where one a killed child made stayed);
// a test binary started by anything else makes its own.
func TestAChildOfIsolatedTestsKeepsTheirFolder(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", os.Getenv("XDG_CACHE_HOME")) // restored after
	t.Setenv("PIPELINE_TEST_CACHE_HOME", "")
	cleanup, err := cachetest.Isolate()
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	dir := os.Getenv("XDG_CACHE_HOME")
	temp := t.TempDir()
	child := func(env ...string) string {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), append([]string{childEnv + "=1", "TMPDIR=" + temp}, env...)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("the child: %v", err)
		}
		return string(out)
	}
	if got := child(); got != dir {
		t.Errorf("a child of the isolated tests uses %q, want their %q", got, dir)
	}
	if made, _ := os.ReadDir(temp); len(made) != 0 {
		t.Errorf("a child of the isolated tests made %d folder(s) in the temporary folder", len(made))
	}
	if got := child("PIPELINE_TEST_CACHE_HOME="); got == dir || !strings.HasPrefix(got, temp) {
		t.Errorf("a test binary not started by isolated tests uses %q, want a folder of its own in %s", got, temp)
	}
}

// TestIsolateMovesTheCacheNotGoBuilds: after Isolate, the plan cache is
// in a temporary folder of its own, which cleanup removes, and the Go
// build cache is where go said it was before.
func TestIsolateMovesTheCacheNotGoBuilds(t *testing.T) {
	before, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal("go env GOCACHE: ", err)
	}
	t.Setenv("XDG_CACHE_HOME", os.Getenv("XDG_CACHE_HOME")) // restored after
	t.Setenv("GOCACHE", os.Getenv("GOCACHE"))
	t.Setenv("PIPELINE_TEST_CACHE_HOME", "") // not a child of isolated tests
	cleanup, err := cachetest.Isolate()
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("XDG_CACHE_HOME")
	if !strings.HasPrefix(dir, os.TempDir()) || spec.CacheDir() != filepath.Join(dir, "pipeline", "plans") {
		t.Errorf("XDG_CACHE_HOME %q, plan cache %q: not a temporary folder", dir, spec.CacheDir())
	}
	after, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil || strings.TrimSpace(string(after)) != strings.TrimSpace(string(before)) {
		t.Errorf("GOCACHE moved: %q -> %q (%v)", before, after, err)
	}
	if err := os.MkdirAll(spec.CacheDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	cleanup()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cleanup left %s: %v", dir, err)
	}
}
