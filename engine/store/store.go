// Package store keeps sessions on disk under .pipeline/: for each session
// a meta file, an append-only event log, an atomically replaced snapshot
// and the transcripts; an index of every session for fast listing; and the
// locks that keep a second run of the same pipeline and spec out. It knows
// files and bytes, not the engine's types.
package store

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Format is the version of the files a session is written in. A session
// in another format is refused with a message, never misread.
const Format = 1

// Meta says what a session runs. It is written once, when the session is
// created.
type Meta struct {
	Format   int       `json:"format"`
	ID       string    `json:"id"`
	Pipeline string    `json:"pipeline"`
	File     string    `json:"file"`           // phases.yaml, absolute
	Spec     string    `json:"spec,omitempty"` // the spec, absolute
	Key      string    `json:"key"`            // pipeline and spec, for locking
	Created  time.Time `json:"created"`
}

// Summary is one line of the index: what sessions lists.
type Summary struct {
	ID          string    `json:"id"`
	Key         string    `json:"key"`
	Pipeline    string    `json:"pipeline"`
	Spec        string    `json:"spec,omitempty"`
	Status      string    `json:"status"`
	Phase       string    `json:"phase,omitempty"`
	PauseReason string    `json:"pause_reason,omitempty"`
	Tokens      int       `json:"tokens"`
	CostUSD     float64   `json:"cost_usd"`
	Created     time.Time `json:"created"`
	Updated     time.Time `json:"updated"`
}

// Store is a .pipeline folder.
type Store struct {
	Root string
}

// Open opens (creating) the store at root, keeping it out of git.
func Open(root string) (*Store, error) {
	if err := os.MkdirAll(filepath.Join(root, "sessions"), 0o700); err != nil {
		return nil, err
	}
	ignore := filepath.Join(root, ".gitignore")
	if _, err := os.Stat(ignore); errors.Is(err, fs.ErrNotExist) {
		if err := os.WriteFile(ignore, []byte("# written by pipeline: sessions stay out of git\n*\n"), 0o600); err != nil {
			return nil, err
		}
	}
	return &Store{Root: root}, nil
}

func (s *Store) sessionDir(id string) string { return filepath.Join(s.Root, "sessions", id) }

// ErrNotFound is a session id that is not in the store.
var ErrNotFound = errors.New("no such session")

// Create makes a new session.
func (s *Store) Create(meta Meta) (*Session, error) {
	meta.Format = Format
	// The folder is made under a temporary name and renamed when whole: a
	// crash leaves a session with its meta, or a .new- folder clean
	// removes, never a session without its meta.
	tmp := s.sessionDir(newPrefix + meta.ID)
	if err := os.MkdirAll(filepath.Join(tmp, "transcripts"), 0o700); err != nil {
		return nil, err
	}
	content, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return nil, err
	}
	// The folder's rename below makes meta.json appear whole: it needs no
	// rename of its own.
	if err := os.WriteFile(filepath.Join(tmp, "meta.json"), content, 0o600); err != nil {
		return nil, err
	}
	final := s.sessionDir(meta.ID)
	if err := os.Rename(tmp, final); err != nil {
		return nil, err
	}
	if err := s.index(Summary{ID: meta.ID, Key: meta.Key, Pipeline: meta.Pipeline, Spec: meta.Spec,
		Status: "running", Created: meta.Created, Updated: meta.Created}); err != nil {
		return nil, err
	}
	x, err := s.open(meta, false)
	if err != nil {
		return nil, err
	}
	// Syncing the new session to disk (meta.json, the sessions folder)
	// goes on while the first step starts; the snapshot waits for it. A
	// kill -9 needs no sync at all; a power cut in the first moments of a
	// run may lose the run.
	x.created = make(chan error, 1)
	go func() {
		err := syncFile(filepath.Join(final, "meta.json"))
		if err == nil {
			err = syncDir(filepath.Join(s.Root, "sessions"))
		}
		x.created <- err
	}()
	return x, nil
}

// Session opens an existing session by id, or by a unique prefix of it.
func (s *Store) Session(id string) (*Session, error) {
	meta, err := s.find(id)
	if err != nil {
		return nil, err
	}
	return s.open(meta, false)
}

// ReadSession opens the session id, or the only one whose id starts with
// it, for reading: nothing is created or written, and Append fails. It is
// for the commands that only look.
func (s *Store) ReadSession(id string) (*Session, error) {
	meta, err := s.find(id)
	if err != nil {
		return nil, err
	}
	return s.open(meta, true)
}

// find reads the metadata of the session id, or of the only one whose id
// starts with it.
func (s *Store) find(id string) (Meta, error) {
	// The id comes from the command line: it names a session folder, never
	// the sessions folder, one outside it, one still being made (.new-) or
	// a pattern for the prefix search below.
	if id == "" || strings.HasPrefix(id, ".") || strings.ContainsAny(id, `/\*?[`) {
		return Meta{}, fmt.Errorf("%w %q in %s", ErrNotFound, id, s.Root)
	}
	dir := s.sessionDir(id)
	if _, err := os.Stat(dir); err != nil {
		matches, _ := filepath.Glob(s.sessionDir(id) + "*")
		if len(matches) != 1 {
			return Meta{}, fmt.Errorf("%w %q in %s", ErrNotFound, id, s.Root)
		}
		dir = matches[0]
	}
	content, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		return Meta{}, fmt.Errorf("session %s: %w", filepath.Base(dir), err)
	}
	var meta Meta
	if err := json.Unmarshal(content, &meta); err != nil {
		return Meta{}, fmt.Errorf("session %s: meta.json is not readable: %w", filepath.Base(dir), err)
	}
	if meta.Format != Format {
		return Meta{}, formatError(filepath.Base(dir), meta.Format)
	}
	if meta.ID != filepath.Base(dir) {
		// The session's files are found by meta.ID: it must be this folder.
		return Meta{}, fmt.Errorf("session %s: meta.json names session %q", filepath.Base(dir), meta.ID)
	}
	return meta, nil
}

func formatError(id string, format int) error {
	return fmt.Errorf("session %s is in format %d; this pipeline reads format %d: use the pipeline version that wrote it, or start anew with run --new",
		id, format, Format)
}

func (s *Store) open(meta Meta, readOnly bool) (*Session, error) {
	dir := s.sessionDir(meta.ID)
	x := &Session{Dir: dir, Meta: meta, store: s, readOnly: readOnly}
	if readOnly {
		// A session cut short before its first event has no log: it has
		// no events, and reading it must not make one.
		if _, err := os.Stat(filepath.Join(dir, "events.jsonl")); errors.Is(err, fs.ErrNotExist) {
			return x, nil
		}
		return x, x.scan(func(seq int64, _ []byte) error {
			x.seq = seq
			return nil
		})
	}
	events, err := os.OpenFile(filepath.Join(dir, "events.jsonl"), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	x.events = events
	// The next sequence number follows the last whole line of the log.
	if err := x.scan(func(seq int64, _ []byte) error {
		x.seq = seq
		return nil
	}); err != nil {
		events.Close()
		return nil, err
	}
	return x, nil
}

// lineSeq reads the sequence number at the start of an event line,
// {"seq":N,..., without decoding the rest.
func lineSeq(line []byte) (int64, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(`{"seq":`))
	if !ok {
		return 0, false
	}
	end := bytes.IndexByte(rest, ',')
	if end < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	return n, err == nil
}

// scan calls fn with the sequence number and the bytes of each whole line.
func (x *Session) scan(fn func(seq int64, line []byte) error) error {
	f, err := os.Open(filepath.Join(x.Dir, "events.jsonl"))
	if x.readOnly && errors.Is(err, fs.ErrNotExist) {
		return nil // cut short before its first event
	}
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 256<<10)
	for n := 1; ; n++ {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line: gather it whole.
			full := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = r.ReadSlice('\n')
				full = append(full, line...)
			}
			line = full
		}
		if errors.Is(err, io.EOF) {
			return nil // the end, or a torn last line
		}
		if err != nil {
			return fmt.Errorf("session %s: reading events.jsonl: %w", x.Meta.ID, err)
		}
		seq, ok := lineSeq(line)
		if !ok {
			return fmt.Errorf("session %s: events.jsonl line %d is not readable", x.Meta.ID, n)
		}
		if err := fn(seq, line); err != nil {
			return err
		}
	}
}

// Session is one session's folder.
type Session struct {
	Dir    string
	Meta   Meta
	store  *Store
	events *os.File // nil when opened for reading
	seq    int64
	// readOnly: opened by ReadSession; nothing is written.
	readOnly bool
	// created, for a session just made, delivers the result of syncing it.
	created chan error
}

// waitCreated waits for a new session's sync, once.
func (x *Session) waitCreated() error {
	if x.created == nil {
		return nil
	}
	err := <-x.created
	x.created = nil
	return err
}

// Close waits for a new session's sync and closes the event log.
func (x *Session) Close() error {
	err := x.waitCreated()
	if x.events == nil {
		return err
	}
	if closeErr := x.events.Close(); err == nil {
		err = closeErr
	}
	return err
}

// Seq is the sequence number of the last event appended.
func (x *Session) Seq() int64 { return x.seq }

type eventLine struct {
	Seq   int64           `json:"seq"`
	Type  string          `json:"type"`
	Event json.RawMessage `json:"event"`
}

// Append writes one event as one line, in one write: a kill -9 leaves
// the line whole or absent, never half written.
func (x *Session) Append(typ string, payload []byte) (int64, error) {
	if x.readOnly {
		return 0, fmt.Errorf("session %s was opened for reading", x.Meta.ID)
	}
	line, err := json.Marshal(eventLine{Seq: x.seq + 1, Type: typ, Event: payload})
	if err != nil {
		return 0, err
	}
	if n, err := x.events.Write(append(line, '\n')); err != nil {
		if n > 0 {
			// A write cut short (a full disk) left part of the line: cut it
			// off, or the next append, after a resume, is glued to it.
			err = errors.Join(err, x.cutTail(int64(n)))
		}
		return 0, err
	}
	x.seq++
	return x.seq, nil
}

// cutTail removes the last n bytes of the event log. Only the holder of
// the session's lock appends, so they are the ones it wrote.
func (x *Session) cutTail(n int64) error {
	info, err := x.events.Stat()
	if err != nil {
		return err
	}
	return x.events.Truncate(info.Size() - n)
}

// Events calls fn for each event after seq, in order. A last line cut
// short (by a crash of the machine) is skipped; a bad line elsewhere is an
// error.
func (x *Session) Events(after int64, fn func(seq int64, typ string, payload []byte) error) error {
	return x.scan(func(seq int64, line []byte) error {
		if seq <= after {
			return nil
		}
		var ev eventLine
		if err := json.Unmarshal(line, &ev); err != nil {
			return fmt.Errorf("session %s: event %d is not readable: %w", x.Meta.ID, seq, err)
		}
		return fn(ev.Seq, ev.Type, ev.Event)
	})
}

type snapshot struct {
	Format int             `json:"format"`
	Seq    int64           `json:"seq"`
	State  json.RawMessage `json:"state"`
}

// WriteSnapshot replaces state.json with state (as of event seq)
// atomically, and adds the summary to the index. The event log is not
// synced: the snapshot holds every event up to seq, and a kill -9 (not a
// power cut) loses nothing the kernel was given.
func (x *Session) WriteSnapshot(seq int64, state []byte, summary Summary) error {
	if x.readOnly {
		return fmt.Errorf("session %s was opened for reading", x.Meta.ID)
	}
	if err := x.waitCreated(); err != nil {
		return err
	}
	content, err := json.Marshal(snapshot{Format: Format, Seq: seq, State: state})
	if err != nil {
		return err
	}
	if err := WriteAtomic(filepath.Join(x.Dir, "state.json"), content); err != nil {
		return err
	}
	return x.store.index(summary)
}

// ReadSnapshot returns the last snapshot: the state and the sequence
// number of the last event it includes. A session without one gives nil.
func (x *Session) ReadSnapshot() (int64, []byte, error) {
	content, err := os.ReadFile(filepath.Join(x.Dir, "state.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	var snap snapshot
	if err := json.Unmarshal(content, &snap); err != nil {
		return 0, nil, fmt.Errorf("session %s: state.json is not readable: %w", x.Meta.ID, err)
	}
	if snap.Format != Format {
		return 0, nil, formatError(x.Meta.ID, snap.Format)
	}
	return snap.Seq, snap.State, nil
}

// TranscriptPath is the transcript of one attempt of one step.
func (x *Session) TranscriptPath(phase string, attempt int, step string) string {
	return filepath.Join(x.Dir, "transcripts", phase, fmt.Sprintf("%d-%s.log", attempt, step))
}

// CreateTranscript opens a step's transcript for appending.
func (x *Session) CreateTranscript(phase string, attempt int, step string) (*os.File, error) {
	path := x.TranscriptPath(phase, attempt, step)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
}

// WriteFile writes a file of the session atomically (a saved spec, a
// request to pause).
func (x *Session) WriteFile(name string, content []byte) error {
	return WriteAtomic(filepath.Join(x.Dir, name), content)
}

// ReadFile reads a file of the session; a missing file gives nil, nil.
func (x *Session) ReadFile(name string) ([]byte, error) {
	content, err := os.ReadFile(filepath.Join(x.Dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return content, err
}

// RemoveFile removes a file of the session, if it is there.
func (x *Session) RemoveFile(name string) error {
	err := os.Remove(filepath.Join(x.Dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// WriteAtomic replaces path with content: temp file, fsync, rename, fsync
// the folder. A reader (or a crash) sees the old file or the new one.
func WriteAtomic(path string, content []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	// One err through write, sync and close: a short write (a full disk)
	// must stop the rename, or a truncated file replaces the whole one.
	_, err = tmp.Write(content)
	if err == nil {
		err = tmp.Sync()
	}
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return err
	}
	// os.CreateTemp made it 0600 already.
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if closeErr := d.Close(); err == nil {
		err = closeErr
	}
	return err
}

// newPrefix names a session folder still being made.
const newPrefix = ".new-"

// RemoveUnfinished deletes the folders of sessions whose making was cut
// short, older than age.
func (s *Store) RemoveUnfinished(age time.Duration) (int, error) {
	dirs, err := filepath.Glob(s.sessionDir(newPrefix + "*"))
	if err != nil {
		return 0, err
	}
	removed := 0
	for _, d := range dirs {
		if info, err := os.Stat(d); err == nil && time.Since(info.ModTime()) > age {
			if err := os.RemoveAll(d); err != nil {
				return removed, err
			}
			removed++
		}
	}
	return removed, nil
}

const indexName = "index.tsv"

// The index is tab-separated rather than JSON: listing 10,000 sessions
// parses 10,000 lines, and splitting on tabs is an order of magnitude
// cheaper than decoding JSON.
func (sum Summary) indexLine() []byte {
	clean := func(s string) string { return strings.NewReplacer("\t", " ", "\n", " ").Replace(s) }
	return []byte(strings.Join([]string{sum.ID, sum.Key, sum.Status, clean(sum.Phase), clean(sum.PauseReason),
		strconv.Itoa(sum.Tokens), strconv.FormatFloat(sum.CostUSD, 'f', -1, 64),
		strconv.FormatInt(sum.Created.UnixNano(), 10), strconv.FormatInt(sum.Updated.UnixNano(), 10),
		clean(sum.Pipeline), clean(sum.Spec)}, "\t") + "\n")
}

func parseIndexLine(line []byte) (Summary, bool) {
	fields := bytes.Split(line, []byte("\t"))
	if len(fields) != 11 || len(fields[0]) == 0 {
		return Summary{}, false
	}
	tokens, _ := strconv.Atoi(string(fields[5]))
	cost, _ := strconv.ParseFloat(string(fields[6]), 64)
	created, _ := strconv.ParseInt(string(fields[7]), 10, 64)
	updated, _ := strconv.ParseInt(string(fields[8]), 10, 64)
	return Summary{ID: string(fields[0]), Key: string(fields[1]), Status: string(fields[2]), Phase: string(fields[3]),
		PauseReason: string(fields[4]), Tokens: tokens, CostUSD: cost, Created: time.Unix(0, created),
		Updated: time.Unix(0, updated), Pipeline: string(fields[9]), Spec: string(fields[10])}, true
}

// index appends a summary to the index: the last line of a session wins.
// One write of one line: a crash leaves it whole or absent (or, on a
// machine crash, torn, and then skipped).
func (s *Store) index(summary Summary) error {
	f, err := os.OpenFile(filepath.Join(s.Root, indexName), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(summary.indexLine())
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	return err
}

// List returns the latest summary of every session, newest first. It reads
// the index alone, so it stays fast with thousands of sessions: every
// session has a line from the moment it is created.
func (s *Store) List() ([]Summary, error) {
	content, err := os.ReadFile(filepath.Join(s.Root, indexName))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	latest := map[string]int{}
	var out []Summary
	for len(content) > 0 {
		i := bytes.IndexByte(content, '\n')
		if i < 0 {
			break // a torn last line
		}
		line := content[:i]
		content = content[i+1:]
		sum, ok := parseIndexLine(line)
		if !ok {
			continue
		}
		if at, seen := latest[sum.ID]; seen {
			out[at] = sum
			continue
		}
		latest[sum.ID] = len(out)
		out = append(out, sum)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	return out, nil
}

// Remove deletes a session's folder.
func (s *Store) Remove(id string) error {
	if id == "" || strings.ContainsAny(id, `/\`) || id == "." || id == ".." {
		return fmt.Errorf("bad session id %q", id)
	}
	return os.RemoveAll(s.sessionDir(id))
}

// CompactIndex rewrites the index with one line per session still on
// disk.
func (s *Store) CompactIndex() error {
	list, err := s.List()
	if err != nil {
		return err
	}
	var b bytes.Buffer
	for i := len(list) - 1; i >= 0; i-- {
		if _, err := os.Stat(s.sessionDir(list[i].ID)); err != nil {
			continue
		}
		b.Write(list[i].indexLine())
	}
	return WriteAtomic(filepath.Join(s.Root, indexName), b.Bytes())
}

// Key names a (pipeline, spec) pair: one live run each.
func Key(file, spec string) string {
	h := fnv.New64a()
	h.Write([]byte(file + "\x00" + spec))
	return strconv.FormatUint(h.Sum64(), 36)
}
