package store

import (
	"bytes"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// fileSizeLimit is the RLIMIT_FSIZE a child sets so that a larger write
// fails with EFBIG, as it would on a full disk, without root or a mount.
const fileSizeLimit = 1024

// limitFileSize puts this process under fileSizeLimit until the returned
// function lifts it (the test binary itself writes files as it ends, a
// coverage profile). SIGXFSZ is ignored so a write past the limit returns
// EFBIG instead of the signal killing the process.
func limitFileSize(t *testing.T) (lift func()) {
	t.Helper()
	signal.Ignore(syscall.SIGXFSZ)
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	lim := old
	lim.Cur = fileSizeLimit
	if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &old); err != nil {
			t.Fatal(err)
		}
	}
}

// Issue 8: WriteAtomic shadowed err, so a failed write (a full disk) was
// synced, renamed over the good file and reported as success: a truncated
// state.json replaced the whole one.
func TestWriteAtomicWriteErrorKeepsOldFile(t *testing.T) {
	if isChild(t) {
		st, err := Open(os.Getenv("PIPELINE_STORE_TEST_DIR"))
		if err != nil {
			t.Fatal(err)
		}
		lift := limitFileSize(t)
		err = st.writeAtomic("state.json", bytes.Repeat([]byte("x"), 4*fileSizeLimit), true)
		lift()
		fmt.Printf("WriteAtomic: %v\n", err)
		return
	}
	dir := newStore(t).Root
	path := filepath.Join(dir, "state.json")
	old := []byte(`{"format":1,"seq":7,"state":{}}`)
	if err := os.WriteFile(path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := childCommand(t, "PIPELINE_STORE_TEST_DIR="+dir).Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "WriteAtomic: write ") || !strings.Contains(string(out), "file too large") {
		t.Errorf("WriteAtomic past the file size limit did not report the write error; child said:\n%s", out)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, old) {
		t.Errorf("state.json after a failed write holds %d bytes (%.20q...), want the old %d bytes", len(got), got, len(old))
	}
	assertNoTempFiles(t, dir)
}

// assertNoTempFiles fails if a WriteAtomic temp file was left in dir.
func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	left, err := filepath.Glob(filepath.Join(dir, ".tmp-*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("temp files left behind: %v", left)
	}
}

// Issue 8, the same fault in the event log: a write cut short by a full
// disk left half a line at the end of events.jsonl, and the next append
// (after a resume) was glued to it, making that event unreadable.
func TestAppendWriteErrorLeavesNoTornLine(t *testing.T) {
	root := os.Getenv("PIPELINE_STORE_TEST_DIR")
	if isChild(t) {
		st, err := Open(root)
		if err != nil {
			t.Fatal(err)
		}
		x, err := st.Session("s1")
		if err != nil {
			t.Fatal(err)
		}
		lift := limitFileSize(t)
		payload := []byte(`{"Notes":"` + strings.Repeat("n", 200) + `"}`)
		for {
			if _, err := x.Append("Noted", payload); err != nil {
				fmt.Printf("Append %d: %v\n", x.Seq()+1, err)
				break
			}
		}
		lift()
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		return
	}
	st := newStore(t)
	x, err := st.Create(Meta{ID: "s1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := childCommand(t, "PIPELINE_STORE_TEST_DIR="+st.Root).Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "file too large") {
		t.Fatalf("no append failed past the file size limit; child said:\n%s", out)
	}
	// A resume: the log is read, and appended to.
	x, err = st.Session("s1")
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	last := x.Seq()
	if last == 0 {
		t.Fatalf("no whole event kept; child said:\n%s", out)
	}
	if _, err := x.Append("Noted", []byte(`{"Notes":"after"}`)); err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	err = x.Events(0, func(seq int64, _ string, _ []byte) error {
		seqs = append(seqs, seq)
		return nil
	})
	if err != nil {
		t.Fatalf("reading the log after a failed append and a resumed one: %v", err)
	}
	if int64(len(seqs)) != last+1 || seqs[len(seqs)-1] != last+1 {
		t.Errorf("events %v, want 1..%d", seqs, last+1)
	}
}
