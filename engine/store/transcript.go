package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// Transcript is the transcript of one attempt of a step, made at its
// first byte: a step that writes nothing leaves no file behind, nor the
// transcripts/ and transcripts/<phase>/ folders it would be in. Each is
// an inode the disk must allocate, and allocating them was a large part
// of what a short run's start-up cost (ext4 without a journal skips every
// inode of the group freed lately). Readers take a transcript that is not
// there for an empty one.
//
// Its writes may come from several goroutines at once (a step's standard
// output and error): one makes the file, the others wait for it and
// append to the same one.
type Transcript struct {
	x           *Session
	phase, file string

	mu     sync.Mutex
	f      *os.File
	err    error // why the file could not be made: every write fails so
	closed bool
}

// Write appends p to the transcript, making it (and its folders, 0700;
// the file 0600) if this is its first byte. An empty p makes nothing.
func (t *Transcript) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	f, err := t.made()
	if err != nil {
		return 0, err
	}
	return f.Write(p)
}

// WriteString appends s, as Write does.
func (t *Transcript) WriteString(s string) (int, error) { return t.Write([]byte(s)) }

// made is the transcript's file, made on the first call; the walk and
// the folders go through the store as every other file of the session
// does, so a session folder deleted or moved away is not made again.
func (t *Transcript) made() (*os.File, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closed:
		return nil, &fs.PathError{Op: "write", Path: filepath.Join(t.x.Dir, "transcripts", t.phase, t.file), Err: os.ErrClosed}
	case t.f == nil && t.err == nil:
		t.f, t.err = t.x.createStepFile(t.phase, t.file)
	}
	return t.f, t.err
}

// Size is how many bytes the transcript holds now: 0 when no byte was
// ever written to it, by this run of the step or an earlier one.
func (t *Transcript) Size() (int64, error) {
	t.mu.Lock()
	f := t.f
	t.mu.Unlock()
	if f != nil {
		info, err := f.Stat()
		if err != nil {
			return 0, err
		}
		return info.Size(), nil
	}
	st, err := t.x.store.lstat(t.x.rel + "/transcripts/" + t.phase + "/" + t.file)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	return st.Size, err
}

// Close closes the file, if a byte made it; the writes after it fail.
func (t *Transcript) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	if t.f == nil {
		return nil
	}
	return t.f.Close()
}

// StandingTranscript is the transcript, below root (a session's
// transcripts folder), of the step a session stands at (phase, attempt
// and step as its state names them; step "" when the state names none):
// the one that failed, for the readers that show a failure's last lines.
// It may not be there: a step that wrote nothing has none, and its
// output is empty. Without a step, it is the last of the phase's
// transcripts (OrderedStepFiles), or "".
func StandingTranscript(root, phase string, attempt int, step string) string {
	if step != "" && name(step) == nil && name(phase) == nil {
		return filepath.Join(root, phase, transcriptName(max(attempt, 1), step))
	}
	paths := OrderedStepFiles(root, phase, map[string]int{phase: 0}, false)
	if len(paths) == 0 {
		return ""
	}
	return paths[len(paths)-1]
}
