package filewatch_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/internal/clock"
	"github.com/pipeline-dev/pipeline/internal/filewatch"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// watching is a running Watcher with the paths it has taken in.
type watching struct {
	t        *testing.T
	w        *filewatch.Watcher
	observed chan string
}

func watch(t *testing.T, targets filewatch.Targets, debounce time.Duration, clk clock.Clock) *watching {
	t.Helper()
	w, err := filewatch.NewWatcher(targets, debounce, clk)
	if err != nil {
		t.Fatal(err)
	}
	wt := &watching{t: t, w: w, observed: make(chan string, 4096)}
	w.Observed = func(path string) { wt.observed <- path }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("watcher: %v", err)
		}
	})
	return wt
}

// awaitObserved waits until the watcher has taken in an event of path.
func (wt *watching) awaitObserved(path string) {
	wt.t.Helper()
	deadline := time.After(testwait.Failsafe)
	for {
		select {
		case p := <-wt.observed:
			if p == path {
				return
			}
		case <-deadline:
			wt.t.Fatalf("no event of %s", path)
		}
	}
}

// next returns the next change.
func (wt *watching) next() []string {
	wt.t.Helper()
	select {
	case c := <-wt.w.Changes():
		return c.Paths
	case <-time.After(testwait.Failsafe):
		wt.t.Fatal("no change reported")
	}
	return nil
}

// awaitChangeOf reads changes until one names path.
func (wt *watching) awaitChangeOf(path string) {
	wt.t.Helper()
	for {
		if slices.Contains(wt.next(), path) {
			return
		}
	}
}

// noMoreChanges checks that nothing else was reported.
func (wt *watching) noMoreChanges() {
	wt.t.Helper()
	select {
	case c := <-wt.w.Changes():
		wt.t.Errorf("an extra change: %v", c.Paths)
	default:
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// mkSentinel makes a folder: one event, which the watcher takes in after
// every event before it. A test awaits it before it moves the fake clock.
func mkSentinel(t *testing.T, dir string, n int) string {
	t.Helper()
	path := filepath.Join(dir, "sentinel-"+strconv.Itoa(n))
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

func start() *clock.Fake { return clock.NewFake(time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)) }

// The ways editors save a file are each one change of that file: a write
// in place, a temporary file renamed over it, a delete then a create.
// Their swap, backup and temporary files are not changes.
func TestWatchEditorSaves(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.md")
	writeFile(t, spec, "v1")
	clk := start()
	// "*" would match the editors' files too: only the ignore list keeps
	// them out.
	wt := watch(t, filewatch.Targets{Root: dir, Globs: []string{"*"}}, time.Second, clk)

	saves := []struct {
		name string
		save func()
	}{
		{"write in place", func() { writeFile(t, spec, "v2") }},
		{"temp file renamed over", func() {
			tmp := filepath.Join(dir, "spec.md.tmp.123")
			writeFile(t, tmp, "v3")
			if err := os.Rename(tmp, spec); err != nil {
				t.Fatal(err)
			}
		}},
		{"delete then create", func() {
			if err := os.Remove(spec); err != nil {
				t.Fatal(err)
			}
			writeFile(t, spec, "v4")
		}},
		{"vim", func() {
			writeFile(t, filepath.Join(dir, ".spec.md.swp"), "swap")
			writeFile(t, filepath.Join(dir, "4913"), "")
			os.Remove(filepath.Join(dir, "4913"))
			if err := os.Rename(spec, spec+"~"); err != nil {
				t.Fatal(err)
			}
			writeFile(t, spec, "v5")
		}},
		{"JetBrains", func() {
			writeFile(t, spec+"___jb_tmp___", "v6")
			if err := os.Rename(spec, spec+"___jb_old___"); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(spec+"___jb_tmp___", spec); err != nil {
				t.Fatal(err)
			}
			os.Remove(spec + "___jb_old___")
		}},
	}
	for i, s := range saves {
		s.save()
		// The sentinel's one event comes after every event of the save.
		sentinel := mkSentinel(t, dir, i)
		wt.awaitObserved(sentinel)
		clk.Advance(time.Second)
		if got := wt.next(); !slices.Equal(got, []string{sentinel, spec}) {
			t.Errorf("%s: change %v, want the spec and the sentinel only", s.name, got)
		}
		wt.noMoreChanges()
	}
}

// A burst of 100 writes is one change, reported once the burst has been
// quiet for the debounce, and not before.
func TestWatchDebouncesABurst(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.md")
	writeFile(t, spec, "v0")
	clk := start()
	wt := watch(t, filewatch.Targets{Root: dir, Files: []string{spec}, Globs: []string{"*.txt"}}, 200*time.Millisecond, clk)
	for i := 0; i < 100; i++ {
		writeFile(t, spec, strconv.Itoa(i))
	}
	wt.awaitObserved(mkSentinel(t, dir, 0))
	clk.Advance(199 * time.Millisecond)
	wt.noMoreChanges()
	clk.Advance(time.Millisecond)
	if got := wt.next(); !slices.Equal(got, []string{spec}) {
		t.Errorf("change %v", got)
	}
	clk.Advance(time.Hour)
	wt.noMoreChanges()
}

// fsnotify does not recurse: a folder made after the watch began is
// watched as it appears, with a spec written in it at once, at any depth,
// and under a glob's base that did not exist yet.
func TestWatchNewFolders(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "specs"), 0o700); err != nil {
		t.Fatal(err)
	}
	wt := watch(t, filewatch.Targets{Root: dir, Globs: []string{"specs/**/*.md", "later/**/README.md"}}, 0, clock.Real{})

	deep := filepath.Join(dir, "specs", "046-x", "notes", "a")
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(deep, "spec.md")
	writeFile(t, spec, "new")
	wt.awaitChangeOf(spec)
	// Written again, once its folder is surely watched.
	writeFile(t, spec, "again")
	wt.awaitChangeOf(spec)

	later := filepath.Join(dir, "later", "001")
	if err := os.MkdirAll(later, 0o700); err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(later, "README.md")
	writeFile(t, readme, "new")
	wt.awaitChangeOf(readme)

	// A folder that goes and comes back is watched again.
	if err := os.RemoveAll(filepath.Join(dir, "specs", "046-x")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, spec, "back")
	wt.awaitChangeOf(spec)
}

// Targets can change while the watcher runs: a glob dropped is no longer
// watched, a file added is.
func TestWatchSetTargets(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.md"), filepath.Join(dir, "sub", "b.md")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	clk := start()
	wt := watch(t, filewatch.Targets{Root: dir, Globs: []string{"*.md"}}, time.Second, clk)
	writeFile(t, a, "1")
	wt.awaitObserved(mkSentinel(t, dir, 0))
	clk.Advance(time.Second)
	if got := wt.next(); !slices.Equal(got, []string{a}) {
		t.Errorf("change %v, want %s", got, a)
	}
	if err := wt.w.SetTargets(filewatch.Targets{Root: dir, Files: []string{b}}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, a, "2")
	writeFile(t, b, "1")
	wt.awaitObserved(mkSentinel(t, filepath.Join(dir, "sub"), 1))
	clk.Advance(time.Second)
	if got := wt.next(); !slices.Equal(got, []string{b}) {
		t.Errorf("change %v, want only %s", got, b)
	}
	wt.noMoreChanges()
	if _, err := filewatch.NewWatcher(filewatch.Targets{Root: dir, Globs: []string{"specs/[.md"}}, 0, nil); err == nil {
		t.Error("a malformed glob was accepted")
	}
}
