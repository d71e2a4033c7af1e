package store

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// within runs f and fails the test when it has not returned by the
// failsafe: a read that waits for a FIFO's writer never returns.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(testwait.Failsafe):
		t.Fatalf("%s did not return", what)
	}
}

// storeOfTwoKeys is a store of 300 sessions of key k and 300 of key
// other, with k's digest written.
func storeOfTwoKeys(t *testing.T) *Store {
	t.Helper()
	st := newStore(t)
	now := time.Unix(0, 1_800_000_000_000_000_000)
	for i := range 300 {
		status := []string{"completed", "paused", "failed"}[i%3]
		for _, k := range []string{"k", "other"} {
			id := fmt.Sprintf("20261127-%09d-%s", i, k)
			if err := os.MkdirAll(filepath.Join(st.Root, "sessions", id), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := st.index(Summary{ID: id, Key: k, Pipeline: "p", Status: status, Created: now, Updated: now}); err != nil {
				t.Fatal(err)
			}
		}
	}
	openOf(t, st, "k")
	return st
}

// Whatever stands at keys/KEY (a FIFO no one writes, a file of many
// megabytes, a link to a good digest, a folder, a digest zero-filled or
// cut after its header as a power cut leaves a file written without a
// sync), a run's search reads the index instead, at once, without
// reading a large file into memory.
func TestOpenOfPassesOverWhatIsNotADigest(t *testing.T) {
	st := storeOfTwoKeys(t)
	path := filepath.Join(st.Root, keysFolder, "k")
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	header, _, _ := bytes.Cut(good, []byte{'\n'})
	want := openOfWant(t, st.Root, "k")
	elsewhere := filepath.Join(t.TempDir(), "digest")
	if err := os.WriteFile(elsewhere, good, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, plant := range map[string]func() error{
		"a FIFO":      func() error { return unix.Mkfifo(path, 0o600) },
		"a huge file": func() error { return os.Truncate(path, 64<<20) },
		"a link":      func() error { return os.Symlink(elsewhere, path) },
		"a folder":    func() error { return os.Mkdir(path, 0o700) },
		"zero-filled": func() error { return os.WriteFile(path, make([]byte, len(good)), 0o600) },
		"its header":  func() error { return os.WriteFile(path, append(header, '\n'), 0o600) },
		"header, zeros": func() error {
			return os.WriteFile(path, append(append(header, '\n'), make([]byte, len(good)-len(header)-1)...), 0o600)
		},
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.RemoveAll(path); err != nil {
				t.Fatal(err)
			}
			if name == "a huge file" {
				if err := os.WriteFile(path, good, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := plant(); err != nil {
				t.Fatal(err)
			}
			fresh, err := Open(st.Root)
			if err != nil {
				t.Fatal(err)
			}
			defer fresh.Close()
			var got []string
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			within(t, "OpenOf", func() { got = openOf(t, fresh, "k") })
			runtime.ReadMemStats(&after)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("OpenOf gave %q, want %q", got, want)
			}
			if fresh.opened.from != 0 {
				t.Errorf("read the index from byte %d, as from a digest", fresh.opened.from)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
				t.Errorf("OpenOf allocated %d bytes", grew)
			}
		})
	}
}

// A FIFO in place of the index's lock file (its content is the sessions
// folder's sweep stamp) does not hold Open, which reads the stamp, for
// ever; nor one in place of a key's lock file, Holder.
func TestAFIFOInTheStoreHoldsNoRead(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".pipeline")
	st, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "locks"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(root, "locks", "k.lock"), 0o600); err != nil {
		t.Fatal(err)
	}
	var holderErr error
	within(t, "Holder", func() { _, holderErr = st.Holder("k") })
	if holderErr == nil {
		t.Error("Holder read a FIFO as a lock file")
	}
	st.Close()
	if err := os.Remove(filepath.Join(root, indexLockName)); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(root, indexLockName), 0o600); err != nil {
		t.Fatal(err)
	}
	within(t, "Open", func() {
		if st, err := Open(root); err == nil {
			st.Close()
		}
	})
}

// The index's inode number, freed when clean's compaction replaces the
// file, is given to a later file (ext4 reuses them first): a digest of
// the old index, which names that number, must not be read as a digest
// of the new one, even when its last line ends where the digest says.
// The new index here is the old one with a paused session since failed
// (a line of the same length), and the digest is made to name its
// inode, as a reused number would.
func TestOpenOfPassesOverADigestOfAnIndexWhoseInodeWasReused(t *testing.T) {
	st := storeOfTwoKeys(t)
	index := filepath.Join(st.Root, indexName)
	content, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	changed := bytes.Replace(content, []byte("\tk\tpaused\t"), []byte("\tk\tfailed\t"), 1)
	if bytes.Equal(changed, content) {
		t.Fatal("no paused session of k")
	}
	d, err := parseDigest("k", mustRead(t, filepath.Join(st.Root, keysFolder, "k")))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(index+".new", changed, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(index+".new", index); err != nil {
		t.Fatal(err)
	}
	var now unix.Stat_t
	if err := unix.Stat(index, &now); err != nil {
		t.Fatal(err)
	}
	d.dev, d.ino = uint64(now.Dev), now.Ino
	st.writeDigest(&d)
	want := openOfWant(t, st.Root, "k")
	fresh, err := Open(st.Root)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if got := openOf(t, fresh, "k"); !reflect.DeepEqual(got, want) {
		t.Errorf("OpenOf gave %q, want %q", got, want)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return content
}

// A key that is no key (a path, a name with ..) is searched as
// SessionsOf searches it, and names no digest: nothing is written
// beside the store or in its keys folder.
func TestOpenOfOfAKeyThatIsAPath(t *testing.T) {
	st := storeOfTwoKeys(t)
	for _, key := range []string{"../../escape", "a/b", "..", "K"} {
		if _, err := st.OpenOf(key); err != nil {
			t.Errorf("OpenOf(%q): %v", key, err)
		}
	}
	names, err := os.ReadDir(filepath.Join(st.Root, keysFolder))
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0].Name() != "k" {
		t.Errorf("the keys folder holds %v", names)
	}
	if _, err := os.Lstat(filepath.Join(filepath.Dir(st.Root), "escape")); err == nil {
		t.Error("a digest was written outside the store")
	}
}

// A digest is read back as it was written whatever the index's device,
// inode and birth: an inode number of 64 bits (an NFS file id, an
// overlay's inode with its layer in the high bits) or a birth before
// 1970 did not parse, and the digest never counted (the index was read
// whole, and the digest written again, at every run).
func TestADigestOfAnyInodeReadsBack(t *testing.T) {
	st := storeOfTwoKeys(t)
	d, err := parseDigest("k", mustRead(t, filepath.Join(st.Root, keysFolder, "k")))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dev, ino uint64
		birth    int64
	}{{1<<64 - 1, 1<<63 + 5, 1}, {0, 1 << 63, -1_000_000_007}, {42, 7, 0}} {
		d.dev, d.ino, d.birth = c.dev, c.ino, c.birth
		st.writeDigest(&d)
		back, err := parseDigest("k", mustRead(t, filepath.Join(st.Root, keysFolder, "k")))
		if err != nil {
			t.Errorf("%+v: %v", c, err)
			continue
		}
		if back.dev != c.dev || back.ino != c.ino || back.birth != c.birth || back.offset != d.offset || back.lines != d.lines || len(back.briefs) != len(d.briefs) {
			t.Errorf("%+v: read back %d %d %d %d %d %d briefs", c, back.dev, back.ino, back.birth, back.offset, back.lines, len(back.briefs))
		}
	}
}
