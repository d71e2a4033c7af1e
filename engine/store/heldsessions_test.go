package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// A session folder moved away while a run holds it (a user's mv, out of
// the store or to another session's name) takes none of the files the
// run writes by name after: they go to the folder at the session's name,
// as before the store kept the folder open, or fail.
func TestAHeldFolderMovedAwayTakesNoWrite(t *testing.T) {
	for _, where := range []string{"out of the store", "to another session's name"} {
		t.Run(where, func(t *testing.T) {
			st := newStore(t)
			x := newSession(t, st)
			if err := x.WriteFile("before", []byte("x")); err != nil {
				t.Fatal(err)
			}
			moved := filepath.Join(filepath.Dir(st.Root), "elsewhere")
			if where != "out of the store" {
				moved = st.sessionDir("s2")
			}
			if err := os.Rename(x.Dir, moved); err != nil {
				t.Fatal(err)
			}
			err := x.WriteFile("after", []byte("x"))
			if _, statErr := os.Lstat(filepath.Join(moved, "after")); statErr == nil {
				t.Errorf("a write of s1 landed in the folder moved to %s (WriteFile: %v)", moved, err)
			}
			if err == nil {
				t.Error("WriteFile into a session whose folder was moved away succeeded")
			}
		})
	}
}

// A session folder swapped for a link while a run holds it: a write is
// refused as a link (ErrSymlink), and lands neither in the folder moved
// away nor where the link points.
func TestAHeldFolderSwappedForALinkIsRefused(t *testing.T) {
	st := newStore(t)
	x := newSession(t, st)
	outside := t.TempDir()
	moved := filepath.Join(filepath.Dir(st.Root), "moved")
	if err := os.Rename(x.Dir, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, x.Dir); err != nil {
		t.Fatal(err)
	}
	err := x.WriteFile("after", []byte("x"))
	if !errors.Is(err, ErrSymlink) {
		t.Errorf("WriteFile through a link: %v, want ErrSymlink", err)
	}
	for _, dir := range []string{moved, outside} {
		if _, statErr := os.Lstat(filepath.Join(dir, "after")); statErr == nil {
			t.Errorf("a write of s1 landed in %s", dir)
		}
	}
}

// A session folder replaced by another at its name (import --replace's
// rename aside, then in) while it is held: a write by name goes to the
// folder at the name.
func TestAHeldFolderReplacedWritesToTheOneAtItsName(t *testing.T) {
	st := newStore(t)
	x := newSession(t, st)
	aside := st.sessionDir(removedPrefix + "s1")
	if err := os.Rename(x.Dir, aside); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(x.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := x.WriteFile("after", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(x.Dir, "after")); err != nil {
		t.Errorf("the write is not in the folder at the session's name: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(aside, "after")); err == nil {
		t.Error("the write landed in the folder moved aside")
	}
}

// openFds counts the files this process has open.
func openFds(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	return len(entries)
}

// A long-lived process (mcp, the web UI, watch) makes and opens many
// sessions with one Store: each one's kept folder is closed with it, the
// ones deleted under it too.
func TestHeldFoldersAreClosedWithTheirSessions(t *testing.T) {
	st := newStore(t)
	defer st.Close()
	warm, err := st.Create(Meta{ID: "warm", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	warm.Close()
	before := openFds(t)
	for i := range 50 {
		id := fmt.Sprintf("s%d", i)
		x, err := st.Create(Meta{ID: id, Key: "k"})
		if err != nil {
			t.Fatal(err)
		}
		if err := x.WriteFile("f", []byte("x")); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			// Deleted under it (clean, by hand): a walk lets it go.
			if err := os.RemoveAll(x.Dir); err != nil {
				t.Fatal(err)
			}
			if err := x.WriteFile("f", []byte("x")); err == nil {
				t.Error("a write into a deleted session succeeded")
			}
		}
		x.Close()
		if i%2 == 1 {
			y, err := st.Session(id)
			if err != nil {
				t.Fatal(err)
			}
			y.Close()
		}
	}
	if after := openFds(t); after > before {
		t.Errorf("%d files open after 50 sessions made and closed, %d before", after, before)
	}
	if len(st.held) != 0 {
		t.Errorf("the store still keeps %d folders", len(st.held))
	}
}

// Sessions of one id held, walked and let go of at once, in one Store:
// no walk uses a folder closed under it (run with -race).
func TestHeldFoldersUnderConcurrentUse(t *testing.T) {
	st := newStore(t)
	defer st.Close()
	x, err := st.Create(Meta{ID: "s1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if !st.holdSession("s1") {
					errs <- errors.New("holdSession refused a folder that is there")
					return
				}
				file := fmt.Sprintf("f%d-%d", g, i)
				if err := x.WriteFile(file, []byte(file)); err != nil {
					errs <- err
				}
				if content, err := x.ReadFile(file); err != nil || string(content) != file {
					errs <- fmt.Errorf("read %s back: %q %v", file, content, err)
				}
				st.letGo("s1")
			}
		}()
	}
	wg.Wait()
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(st.held) != 0 {
		t.Errorf("the store still keeps %d folders", len(st.held))
	}
	if _, err := os.Lstat(filepath.Join(x.Dir, "f3-49")); errors.Is(err, fs.ErrNotExist) {
		t.Error("the last write is not in the session's folder")
	}
}
