//go:build linux

package store

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// openCounting opens the store at root again and says whether its Open
// listed the sessions folder.
func openCounting(t *testing.T, root string) (*Store, bool) {
	t.Helper()
	st, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	return st, st.sweeps > 0
}

// An Open lists the sessions folder only when it changed since a sweep
// that left nothing, or since the last session a Create made: a store
// of sessions made one after the other is not listed again, and a
// .new- folder a killed maker left is found at the next Open.
func TestOpenSweepsTheSessionsFolderOnlyWhenItChanged(t *testing.T) {
	st := newStore(t)
	root := st.Root
	now := time.Now()
	for i := range 5 {
		x, err := st.Create(Meta{ID: fmt.Sprintf("20261127-23000000%d-abcdef", i), Key: "k", Pipeline: "p", Created: now})
		if err != nil {
			t.Fatal(err)
		}
		x.Close()
	}
	again, swept := openCounting(t, root)
	again.Close()
	if swept {
		t.Error("the Open after five Creates listed the sessions folder: the Creates did not keep its stamp")
	}
	dead := filepath.Join(root, "sessions", ".new-20261127-230000009-abcdef")
	if err := os.MkdirAll(filepath.Join(dead, "transcripts"), 0o700); err != nil {
		t.Fatal(err)
	}
	again, swept = openCounting(t, root)
	again.Close()
	if _, err := os.Stat(dead); !swept || !os.IsNotExist(err) {
		t.Errorf("a .new- folder made by hand: swept %v, the folder: %v", swept, err)
	}
	again, _ = openCounting(t, root) // the one after a sweep that removed: nothing left, stamped
	again.Close()
	again, swept = openCounting(t, root)
	again.Close()
	if swept {
		t.Error("listed again, with nothing changed since a sweep that found nothing")
	}
	if err := os.WriteFile(filepath.Join(root, indexLockName), []byte("sessions swept 1 2 3 4 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	again, swept = openCounting(t, root)
	again.Close()
	if !swept {
		t.Error("a stamp of another folder: not listed")
	}
}

// Creates of several processes' Stores at once, and .new- folders made
// meanwhile by hand (a maker killed at once): every one is swept by the
// next Open, whatever the order the Creates and the folders came in.
func TestOpenSweepsWhatWasMadeBesideCreates(t *testing.T) {
	root := newStore(t).Root
	now := time.Now()
	for round := range 8 {
		var wg sync.WaitGroup
		for w := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st, err := Open(root)
				if err != nil {
					t.Error(err)
					return
				}
				defer st.Close()
				for i := range 4 {
					x, err := st.Create(Meta{ID: fmt.Sprintf("20261127-2%02d%d%d0000-abcdef", round, w, i), Key: "k", Created: now})
					if err != nil {
						t.Error(err)
						return
					}
					x.Close()
				}
			}()
		}
		dead := filepath.Join(root, "sessions", fmt.Sprintf(".new-20261127-1%02d000000-dead00", round))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := os.Mkdir(dead, 0o700); err != nil {
				t.Error(err)
			}
		}()
		wg.Wait()
		st, err := Open(root)
		if err != nil {
			t.Fatal(err)
		}
		st.Close()
		if _, err := os.Stat(dead); !os.IsNotExist(err) {
			t.Fatalf("round %d: %s left after the next Open (%v)", round, filepath.Base(dead), err)
		}
	}
}

// A .new- folder made (its maker then killed) while a Create makes its
// session, between the Create's look at the sessions folder and its
// stamp: the Create leaves the stamp stale, and the next Open sweeps
// the folder. The index lock, held here, keeps the Create at that point.
func TestACreateDoesNotStampAFolderMadeBesideIt(t *testing.T) {
	st := newStore(t)
	for range 2 { // the second Open stamps what the first left
		again, err := Open(st.Root)
		if err != nil {
			t.Fatal(err)
		}
		again.Close()
	}
	_, unlock, err := st.lockIndexFile()
	if err != nil {
		t.Fatal(err)
	}
	id := "20261127-230000001-abcdef"
	created := make(chan error, 1)
	go func() {
		x, err := st.Create(Meta{ID: id, Key: "k", Created: time.Now()})
		if err == nil {
			x.Close()
		}
		created <- err
	}()
	renamed := filepath.Join(st.Root, "sessions", id)
	testwait.Written(t, st.Root, "the session's folder renamed", func() bool { _, err := os.Stat(renamed); return err == nil })
	dead := filepath.Join(st.Root, "sessions", ".new-20261127-230000002-dead00")
	if err := os.Mkdir(dead, 0o700); err != nil {
		t.Fatal(err)
	}
	unlock()
	if err := <-created; err != nil {
		t.Fatal(err)
	}
	again, swept := openCounting(t, st.Root)
	again.Close()
	if _, err := os.Stat(dead); !swept || !os.IsNotExist(err) {
		t.Errorf("the folder made beside the Create: swept %v, the folder: %v", swept, err)
	}
}
