package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A cache folder keeps its newest maxCacheEntries entries, and evicts
// only once it holds evictSlack more: not at every new plan.
func TestEvictOldEntriesKeepsTheNewestPastTheSlack(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	add := func(i int) {
		name := filepath.Join(dir, fmt.Sprintf("entry-%04d", i))
		if err := os.WriteFile(name, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		// Apart by more than the 1 ms the ages are compared at.
		at := old.Add(time.Duration(i) * 10 * time.Millisecond)
		if err := os.Chtimes(name, at, at); err != nil {
			t.Fatal(err)
		}
	}
	full := maxCacheEntries + evictSlack
	for i := range full {
		add(i)
	}
	evictOldEntries(dir)
	if names := entryNames(t, dir); len(names) != full {
		t.Fatalf("%d entries left of %d, within the slack: want all", len(names), full)
	}
	add(full)
	evictOldEntries(dir)
	names := entryNames(t, dir)
	want := []string{}
	for i := full + 1 - maxCacheEntries; i <= full; i++ {
		want = append(want, fmt.Sprintf("entry-%04d", i))
	}
	if !slices.Equal(names, want) {
		t.Errorf("after the eviction %d entries, %s .. %s; want the newest %d, %s .. %s",
			len(names), names[0], names[len(names)-1], maxCacheEntries, want[0], want[len(want)-1])
	}
}

func entryNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
