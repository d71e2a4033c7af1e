package engine

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"time"
)

// FileRecorder keeps a session in a folder: events.jsonl (every event,
// appended as it happens), state.json (a snapshot of the state, replaced
// atomically) and transcripts/<phase>/<attempt>-<step>.log. Folders are
// 0700 and files 0600: transcripts hold whatever the agents printed.
//
// The event log is the record: an appended line survives a kill -9 of the
// runner at once, without an fsync on the hot path. The snapshot is
// written, and both files synced, at most once per SnapshotEvery and when
// the run ends.
type FileRecorder struct {
	Dir    string
	events *os.File
	// SnapshotEvery bounds how stale state.json gets during a run.
	SnapshotEvery time.Duration
	last          State
	lastSnapshot  time.Time
	dirty         bool
}

// NewSessionID makes a session id that sorts by start time.
func NewSessionID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// NewFileRecorder opens (creating) the session folder dir.
func NewFileRecorder(dir string) (*FileRecorder, error) {
	if err := os.MkdirAll(filepath.Join(dir, "transcripts"), 0o700); err != nil {
		return nil, err
	}
	events, err := os.OpenFile(filepath.Join(dir, "events.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	return &FileRecorder{Dir: dir, events: events, SnapshotEvery: 2 * time.Second, lastSnapshot: time.Now()}, nil
}

// Transcript creates the transcript file of one step's attempt.
func (f *FileRecorder) Transcript(phase string, attempt int, step string) (io.WriteCloser, error) {
	dir := filepath.Join(f.Dir, "transcripts", phase)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return os.OpenFile(filepath.Join(dir, fmt.Sprintf("%d-%s.log", attempt, step)), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
}

// Record appends the event, and writes the snapshot when the last one is
// older than SnapshotEvery.
func (f *FileRecorder) Record(ev Event, s State) error {
	line, err := json.Marshal(struct {
		Type  string `json:"type"`
		Event Event  `json:"event"`
	}{reflect.TypeOf(ev).Name(), ev})
	if err != nil {
		return err
	}
	if _, err := f.events.Write(append(line, '\n')); err != nil {
		return err
	}
	f.last, f.dirty = s, true
	if time.Since(f.lastSnapshot) >= f.SnapshotEvery {
		return f.Snapshot()
	}
	return nil
}

// Snapshot syncs the event log and replaces state.json with the last state.
func (f *FileRecorder) Snapshot() error {
	if !f.dirty {
		return nil
	}
	if err := f.events.Sync(); err != nil {
		return err
	}
	state, err := json.MarshalIndent(f.last, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(f.Dir, "state.json"), state); err != nil {
		return err
	}
	f.dirty, f.lastSnapshot = false, time.Now()
	return nil
}

// Close writes the last snapshot and closes the event log.
func (f *FileRecorder) Close() error {
	err := f.Snapshot()
	if closeErr := f.events.Close(); err == nil {
		err = closeErr
	}
	return err
}

// writeAtomic replaces path with content: a reader sees the old file or the
// new one, never a part.
func writeAtomic(path string, content []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
