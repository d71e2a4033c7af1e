package cachetest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/cachetest"
)

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
