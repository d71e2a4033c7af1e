package store

// A stop recorded by the log: the event that stops a short session (a
// pause, the end, a failure) is appended with the state it leaves, on
// one line of events.jsonl, and the log is synced, instead of a state.json
// written beside it (a fourth inode, a rename and two fsyncs on the
// critical path of a short run). Readers start from the last such line as
// they start from state.json: what the run decided is on disk, not made
// again from the log through a phases.yaml that may have changed since.
//
// The line is {"seq":N,"type":T,"format":F,"state":{...},"event":{...}}:
// an event line with two fields more, which the event's readers (and
// builds that predate the line, whose json.Unmarshal skips unknown fields)
// do not see; its seq is the event's, so the log stays numbered from 1 in
// order.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"

	"golang.org/x/sys/unix"
)

// StateInLogMost bounds the log that takes a stop's state: a stop that
// would make it longer writes state.json, as does every stop of a session
// that has one. Opening a session scans its log whole, and keeps a copy of
// its last state line: the bound keeps both cheap, and a session stopped
// and resumed many times from copying its state into its log each time.
// (BenchmarkLoadStateStopInLog: a stopped session loads from its log no
// slower than from state.json at any size measured, so reading does not
// set the bound; the copies do.)
const StateInLogMost = 64 << 10

// stateLine is a line of the log with a stop's state.
type stateLine struct {
	Seq    int64           `json:"seq"`
	Type   string          `json:"type"`
	Format int             `json:"format"`
	State  json.RawMessage `json:"state"`
	Event  json.RawMessage `json:"event"`
}

// stateLineJSON is json.Marshal(stateLine{seq, typ, Format, state,
// payload}), with room for the line's newline. A type that JSON would
// escape is refused: isStateLine could not find the line.
func stateLineJSON(seq int64, typ string, payload, state []byte) ([]byte, error) {
	b := make([]byte, 0, len(payload)+len(state)+64)
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `,"type":`...)
	b, plain := appendPlainString(b, typ)
	if !plain {
		return nil, fmt.Errorf("event type %q cannot carry a state", typ)
	}
	b = append(b, `,"format":`...)
	b = strconv.AppendInt(b, Format, 10)
	b = append(b, `,"state":`...)
	b, compact := appendRawJSON(b, state)
	if compact {
		b = append(b, `,"event":`...)
		b, compact = appendRawJSON(b, payload)
	}
	if !compact {
		// Its fields in the same order: isStateLine finds it all the same.
		return json.Marshal(stateLine{Seq: seq, Type: typ, Format: Format, State: state, Event: payload})
	}
	return append(b, '}'), nil
}

// isStateLine tells, from its first bytes, whether a line of the log
// carries a stop's state: {"seq":N,"type":"T","format":.
func isStateLine(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte(`{"seq":`))
	if !ok {
		return false
	}
	comma := bytes.IndexByte(rest, ',')
	if comma < 0 {
		return false
	}
	rest, ok = bytes.CutPrefix(rest[comma:], []byte(`,"type":"`))
	if !ok {
		return false
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return false
	}
	return bytes.HasPrefix(rest[end:], []byte(`","format":`))
}

// noteState keeps the line seq of the log when it carries a state: the
// last one is the session's snapshot when it has no later state.json.
func (x *Session) noteState(seq int64, line []byte) {
	if isStateLine(line) {
		x.stateSeq, x.stateLine = seq, append(x.stateLine[:0], line...)
	}
}

// loggedSnapshot is the state of the log's last state line, as
// ReadSnapshot gives it, as of the line's place in the log (the seq the
// scan read first: JSON would take the last of a seq given twice); none
// gives nil.
func (x *Session) loggedSnapshot() (int64, []byte, error) {
	if x.stateLine == nil {
		return 0, nil, nil
	}
	l, err := parseStateLine(x.stateLine)
	if errors.Is(err, errFormat) {
		return 0, nil, formatError(x.Meta.ID, l.Format)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("session %s: the state of event %d in events.jsonl is not readable: %w", x.Meta.ID, x.stateSeq, err)
	}
	return x.stateSeq, l.State, nil
}

// errFormat is a state line of a format this pipeline does not read.
var errFormat = errors.New("a format this pipeline does not read")

// parseStateLine decodes a state line, refusing one of another format
// (errFormat) or without a state, which read would be a snapshot of an
// empty state as of the line: every event before it skipped.
func parseStateLine(line []byte) (stateLine, error) {
	var l stateLine
	if err := json.Unmarshal(line, &l); err != nil {
		return l, err
	}
	if l.Format < OldestFormat || l.Format > Format {
		return l, errFormat
	}
	if len(l.State) == 0 || string(l.State) == "null" {
		return l, errors.New("it carries no state")
	}
	return l, nil
}

// checkStateLine refuses a line of the log whose stop's state this
// pipeline would not read (of another format, or none); other lines pass.
func checkStateLine(line []byte) error {
	if !isStateLine(line) {
		return nil
	}
	l, err := parseStateLine(line)
	if errors.Is(err, errFormat) {
		return fmt.Errorf("its state is in format %d; this pipeline reads formats %d to %d", l.Format, OldestFormat, Format)
	}
	return err
}

// TakesState tells whether a stop whose state is stateLen bytes goes into
// the log (AppendState) rather than state.json: the log is short, and the
// session has no state.json, which once written stays the snapshot its
// readers (the search index among them) start from.
func (x *Session) TakesState(stateLen int) bool {
	if x.readOnly || x.events == nil || x.size+int64(stateLen) > StateInLogMost {
		return false
	}
	// A doubt (an error other than its absence) writes state.json.
	_, err := x.store.lstat(x.rel + "/" + stateName)
	return errors.Is(err, unix.ENOENT)
}

// AppendState appends the event that stops the session with the state it
// leaves, and syncs the log (and what makes it found: the session's
// folder, a new session's own sync): once it returns, the stop is on the
// disk as a snapshot would have put it. A stop that cannot be made
// durable is taken back out of the log, which is left as it was.
func (x *Session) AppendState(typ string, payload, state []byte) (int64, error) {
	if x.readOnly {
		return 0, fmt.Errorf("session %s was opened for reading", x.Meta.ID)
	}
	line, err := stateLineJSON(x.seq+1, typ, payload, state)
	if err != nil {
		return 0, err
	}
	seq, err := x.appendLine(line)
	if err != nil {
		return 0, err
	}
	prevSeq, prevLine := x.stateSeq, x.stateLine
	x.stateSeq, x.stateLine = seq, line
	if err := x.syncStop(); err != nil {
		x.stateSeq, x.stateLine = prevSeq, prevLine
		if undo := x.Unappend(); undo != nil {
			return 0, errors.Join(err, fmt.Errorf("taking the event back: %w", undo))
		}
		return 0, err
	}
	return seq, nil
}

// syncStop makes the log durable where a snapshot would have been: its
// content, its name in the session's folder (synced with a new session,
// in the background since its start; once otherwise), and the session's
// own (waitCreated: meta.json, the sessions folder).
func (x *Session) syncStop() error {
	err := syncLog(x.events)
	if err == nil && !x.folderSynced {
		if err = x.store.syncFile(x.rel); err == nil {
			x.folderSynced = true
		}
	}
	if err != nil {
		return fmt.Errorf("session %s: syncing events.jsonl: %w", x.Meta.ID, err)
	}
	return x.waitCreated()
}

// syncLog writes the log's content to the disk; a variable, for the
// tests of a sync that fails.
var syncLog = fdatasyncLog

// StatSnapshot stats the file that holds session id's snapshot, named
// StateFile whichever it is: state.json, or without one the log, whose
// last state line is the snapshot (AppendState). A session without
// either is fs.ErrNotExist.
func (s *Store) StatSnapshot(id string) (SessionFile, error) {
	f, err := s.StatSessionFile(id, StateFile)
	if errors.Is(err, fs.ErrNotExist) {
		f, err = s.StatSessionFile(id, eventsName)
	}
	f.Rel = StateFile
	return f, err
}

// ReadSnapshotFile returns session id's snapshot as state.json holds it
// ({"format":F,"seq":N,"state":{...}}), from state.json or from its log
// (see StatSnapshot), with the file it came from as it was before it was
// read: a change after it shows at the next stat. A session with neither
// file is fs.ErrNotExist; a log without a stop's state gives no content
// (its readers take it as read until it changes, not every time); a
// state line that cannot be read is given as it is. Where state.json and
// a state line are of the same event (an older build's replay wrote the
// file), this reads state.json, where ReadSnapshot takes the line: its
// readers (search, the dashboard) would otherwise scan every log that has
// a state.json, for notes and attempts a replay gives alike.
func (s *Store) ReadSnapshotFile(id string) (SessionFile, []byte, error) {
	file, err := s.StatSessionFile(id, StateFile)
	if err == nil {
		content, err := s.readFile(sessionRel(id) + "/" + StateFile)
		return file, content, err
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return SessionFile{}, nil, err
	}
	if file, err = s.StatSessionFile(id, eventsName); err != nil {
		return SessionFile{}, nil, err
	}
	file.Rel = StateFile
	x, err := s.ReadSession(id)
	if errors.Is(err, ErrNotFound) {
		err = &fs.PathError{Op: "read", Path: s.sessionDir(id), Err: fs.ErrNotExist} // removed since the stat
	}
	if err != nil {
		return SessionFile{}, nil, err
	}
	defer x.Close()
	if x.stateLine == nil {
		return file, nil, nil
	}
	seq, state, err := x.loggedSnapshot()
	if err != nil {
		// Unreadable (another format, a line garbled by a power cut), it
		// is given as it is, as an unreadable state.json is: its readers
		// (search, the dashboard) make nothing of it until it changes,
		// rather than fail for every session.
		return file, x.stateLine, nil
	}
	content, err := snapshotJSON(seq, state)
	return file, content, err
}
