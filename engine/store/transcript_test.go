package store

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// A step that writes nothing leaves no transcript, nor the folders it
// would be in: a new session has no transcripts/, and a transcript
// given, asked its size and closed without a byte makes none.
func TestATranscriptWithoutAByteLeavesNoFile(t *testing.T) {
	st := newStore(t)
	x := newSession(t, st)
	f, err := x.CreateTranscript("build", 1, "run")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := f.Write(nil); n != 0 || err != nil {
		t.Errorf("an empty write: %d, %v", n, err)
	}
	if size, err := f.Size(); size != 0 || err != nil {
		t.Errorf("the size of a transcript not made: %d, %v", size, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(x.Dir, "transcripts")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("transcripts/ is there after a step that wrote nothing: %v", err)
	}
	if _, err := f.WriteString("late\n"); err == nil {
		t.Error("a write after Close succeeded")
	}
	if files, err := st.StepFiles("s1"); err != nil || len(files) != 0 {
		t.Errorf("StepFiles of a session without transcripts/: %v, %v", files, err)
	}
}

// The first byte makes the folders (0700) and the file (0600); Size
// then tells what a run before wrote (markRunAgain's question).
func TestATranscriptIsMadeAtItsFirstByte(t *testing.T) {
	st := newStore(t)
	x := newSession(t, st)
	f, err := x.CreateTranscript("build", 1, "run")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("one\n"); err != nil {
		t.Fatal(err)
	}
	if size, err := f.Size(); size != 4 || err != nil {
		t.Errorf("size of the open transcript: %d, %v, want 4", size, err)
	}
	f.Close()
	path := x.TranscriptPath("build", 1, "run")
	assertMode(t, filepath.Join(x.Dir, "transcripts"), 0o700)
	assertMode(t, filepath.Dir(path), 0o700)
	assertMode(t, path, 0o600)
	again, err := x.CreateTranscript("build", 1, "run")
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if size, err := again.Size(); size != 4 || err != nil {
		t.Errorf("size of the transcript an earlier run wrote: %d, %v, want 4", size, err)
	}
}

// A step's standard output and error write at once: whichever comes
// first makes the file, and both end up in the one file, every write
// whole. Run with -race.
func TestWritersRacingOnATranscriptsFirstByteMakeOneFile(t *testing.T) {
	const writers, lines = 8, 50
	for round := range 20 {
		st := newStore(t)
		x, err := st.Create(Meta{ID: "s1", Key: "k"})
		if err != nil {
			t.Fatal(err)
		}
		f, err := x.CreateTranscript("build", 1, "run")
		if err != nil {
			t.Fatal(err)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := range lines {
					if _, err := fmt.Fprintf(f, "writer %d line %d\n", w, i); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		close(start)
		wg.Wait()
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		content, err := os.ReadFile(x.TranscriptPath("build", 1, "run"))
		if err != nil {
			t.Fatal(err)
		}
		for w := range writers {
			for i := range lines {
				if n := bytes.Count(content, fmt.Appendf(nil, "writer %d line %d\n", w, i)); n != 1 {
					t.Fatalf("round %d: writer %d's line %d is in the transcript %d times", round, w, i, n)
				}
			}
		}
		x.Close()
	}
}

// A session folder moved away before its step's first byte: the
// transcript is not made in the folder moved, nor at its old name (the
// store's rule for a held folder), and the write says so.
func TestATranscriptOfASessionMovedAwayIsNotMade(t *testing.T) {
	st := newStore(t)
	x := newSession(t, st)
	f, err := x.CreateTranscript("build", 1, "run")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	moved := filepath.Join(filepath.Dir(st.Root), "elsewhere")
	if err := os.Rename(x.Dir, moved); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("output\n"); err == nil {
		t.Error("the first byte of a session moved away was written")
	}
	for _, dir := range []string{moved, x.Dir} {
		if _, err := os.Lstat(filepath.Join(dir, "transcripts")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("transcripts/ was made in %s: %v", dir, err)
		}
	}
}

// A transcript's name must be one name: a phase or step that would lead
// out of the session's folder is refused when the transcript is given.
func TestATranscriptOfABadNameIsRefused(t *testing.T) {
	st := newStore(t)
	x := newSession(t, st)
	for _, c := range [][2]string{{"..", "run"}, {"build", "a/b"}, {"", "run"}} {
		if _, err := x.CreateTranscript(c[0], 1, c[1]); err == nil {
			t.Errorf("CreateTranscript(%q, 1, %q) was given", c[0], c[1])
		}
	}
}
