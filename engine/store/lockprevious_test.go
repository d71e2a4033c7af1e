package store

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Lock.Previous reads the holder a lock file names through the file the
// lock took: whatever else is there (a huge file, garbage, a FIFO, a
// link) gives no holder, and Lock neither hangs on it nor follows it.
func TestLockPreviousOfAHostileHolderFile(t *testing.T) {
	key := "abc123"
	started := time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC)
	cases := []struct {
		name      string
		plant     func(t *testing.T, path string)
		mayRefuse bool // Lock may refuse the file (not a regular file)
	}{
		{"a holder", func(t *testing.T, path string) {
			content, err := holderJSON(Holder{PID: 1, Session: "20261128-010000000-abcdef", Started: started})
			if err != nil {
				t.Fatal(err)
			}
			writeFileT(t, path, content)
		}, false},
		{"past the limit", func(t *testing.T, path string) {
			content, _ := holderJSON(Holder{PID: 1, Session: "20261128-010000000-abcdef", Started: started})
			writeFileT(t, path, append(content, strings.Repeat(" ", holderLimit)...))
		}, false},
		{"sparse and huge", func(t *testing.T, path string) {
			writeFileT(t, path, nil)
			if err := os.Truncate(path, 1<<40); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"garbage", func(t *testing.T, path string) { writeFileT(t, path, []byte("\x00\xff{\"pid\":")) }, false},
		{"JSON of the wrong types", func(t *testing.T, path string) {
			writeFileT(t, path, []byte(`{"session":"../../etc","pid":"x"}`))
		}, false},
		{"a FIFO", func(t *testing.T, path string) {
			if err := unix.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"a link", func(t *testing.T, path string) {
			target := filepath.Join(t.TempDir(), "holder")
			content, _ := holderJSON(Holder{PID: 1, Session: "20261128-010000000-abcdef", Started: started})
			writeFileT(t, target, content)
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := newStore(t)
			defer st.Close()
			if err := os.MkdirAll(filepath.Join(st.Root, "locks"), 0o700); err != nil {
				t.Fatal(err)
			}
			rel, _ := lockRel(key)
			c.plant(t, st.path(rel))
			done := make(chan struct{})
			var lock *Lock
			var err error
			go func() {
				defer close(done)
				lock, err = st.Lock(key, Holder{PID: os.Getpid(), Started: time.Now()})
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Lock hangs on the lock file")
			}
			if err != nil {
				if !c.mayRefuse {
					t.Fatalf("Lock: %v", err)
				}
				return
			}
			defer lock.Release()
			got := lock.Previous()
			if c.name == "a holder" {
				if got.Session != "20261128-010000000-abcdef" || got.PID != 1 {
					t.Errorf("Previous: %+v, want the holder written", got)
				}
				return
			}
			if !reflect.DeepEqual(got, Holder{}) {
				t.Errorf("Previous of %s: %+v, want no holder", c.name, got)
			}
		})
	}
}

func writeFileT(t *testing.T, path string, content []byte) {
	t.Helper()
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
}
