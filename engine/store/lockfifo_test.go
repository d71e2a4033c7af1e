package store

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A FIFO in place of a key's lock file (planted, or left by a tool that
// knew no better) holds no lock: the readers that ask whether the lock is
// held (pipeline pause, status, sessions) answer at once that it is not,
// rather than block for ever in the open of a FIFO no one writes to.
func TestAFIFOInPlaceOfTheLockFileBlocksNoReader(t *testing.T) {
	st := newStore(t)
	defer st.Close()
	const key = "k1"
	if err := os.MkdirAll(filepath.Join(st.Root, "locks"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(st.Root, "locks", key+".lock"), 0o600); err != nil {
		t.Fatal(err)
	}
	type answer struct{ held, released bool }
	answered := make(chan answer, 1)
	go func() {
		held := st.Held(key)
		answered <- answer{held: held, released: st.WaitReleased(key, time.Second)}
	}()
	select {
	case a := <-answered:
		if a.held || !a.released {
			t.Errorf("a FIFO for a lock file: Held %v, WaitReleased %v; want false, true", a.held, a.released)
		}
	case <-time.After(10 * time.Second):
		// The goroutine stays blocked in open(2): the FIFO's writer end
		// is opened to free it before the test ends.
		f, err := os.OpenFile(filepath.Join(st.Root, "locks", key+".lock"), os.O_WRONLY|unix.O_NONBLOCK, 0)
		if err == nil {
			defer f.Close()
		}
		t.Fatal("Held and WaitReleased of a key whose lock file is a FIFO did not answer in 10s")
	}
}
