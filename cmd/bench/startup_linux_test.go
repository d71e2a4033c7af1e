package main

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDropCachedDropsAFileNoProcessMaps checks the drop -startup's (a)
// relies on: a file just written is all in the cache, dropCached leaves
// none of it there, and pages a process maps and touched stay (which
// dropCached then reports).
func TestDropCachedDropsAFileNoProcessMaps(t *testing.T) {
	path := filepath.Join(diskDir(t), "binary")
	if err := os.WriteFile(path, make([]byte, 64*os.Getpagesize()), 0o755); err != nil {
		t.Fatal(err)
	}
	if kept, all := resident(t, path); kept != all || all != 64 {
		t.Fatalf("a file just written: %d of %d pages in the cache, want 64 of 64", kept, all)
	}
	dropCached(path)
	if kept, _ := resident(t, path); kept != 0 {
		t.Fatalf("after dropCached: %d pages in the cache, want 0", kept)
	}

	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, 64*os.Getpagesize(), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	sum := 0
	for i := 0; i < len(m); i += os.Getpagesize() {
		sum += int(m[i])
	}
	dropCached(path)
	if kept, _ := resident(t, path); kept == 0 {
		t.Fatalf("pages a process maps: none left in the cache after dropCached (sum %d), want them kept", sum)
	}
}

func resident(t *testing.T, path string) (kept, all int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return residentPages(f)
}

// diskDir is a folder on the project's disk (under its bin/, which git
// ignores), where -startup keeps its binaries: the page cache of tmpfs,
// where the test's temporary folder may be, is its storage and is not
// dropped.
func diskDir(t *testing.T) string {
	t.Helper()
	if err := os.MkdirAll("../../bin", 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("../../bin", "drop-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	if fs.Type == unix.TMPFS_MAGIC {
		t.Skip("the project's disk is tmpfs: its pages cannot be dropped")
	}
	return dir
}
