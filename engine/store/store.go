// Package store keeps sessions on disk under .pipeline/: for each session
// a meta file, an append-only event log, an atomically replaced snapshot
// and the transcripts; an index of every session for fast listing; and the
// locks that keep a second run of the same pipeline and spec out. It knows
// files and bytes, not the engine's types.
//
// Every file is reached from the store's folder without following a
// symbolic link (beneath.go); the store's folder must be the user's own.
// A write cut short (a full disk, an I/O error) leaves no part of a line
// and no truncated file. The index is changed only under its lock
// (index.go), by any number of processes.
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
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Format is the version of the files a session is written in. A session
// in another format is refused with a message, never misread.
//
// Format 2 names phases.yaml and the spec, in meta.json and the index,
// relative to the store's base (see Store.Base), and makes the key from
// those relative paths: a store moved with its project (a CI cache, an
// artifact, another checkout) goes on working. Format 1 named them
// absolute; it is still read (see OldestFormat).
const Format = 2

// OldestFormat is the oldest format still read. A format-1 session
// differs only in its absolute paths: they are used as they are, and its
// key is made again from them, relative to the store's base.
const OldestFormat = 1

// Meta says what a session runs. It is written once, when the session is
// created. In memory File and Spec are absolute; in meta.json they are
// relative to the store's base, slash-separated.
type Meta struct {
	Format   int       `json:"format"`
	ID       string    `json:"id"`
	Pipeline string    `json:"pipeline"`
	File     string    `json:"file"`           // phases.yaml
	Spec     string    `json:"spec,omitempty"` // the spec
	Key      string    `json:"key"`            // pipeline and spec, for locking
	Created  time.Time `json:"created"`
	// Name is the session's name (run --name), which commands take in
	// place of its id.
	Name string `json:"name,omitempty"`
	// Fleet marks a session that runs on a Temporal fleet: this store's
	// copy holds what its steps wrote on this machine, never its state,
	// which lives in the workflow there.
	Fleet *Fleet `json:"fleet,omitempty"`
}

// Fleet is where a fleet session runs: the Temporal server, namespace and
// task queue its workflow was started on.
type Fleet struct {
	Address   string `json:"address"`
	Namespace string `json:"namespace"`
	TaskQueue string `json:"task_queue"`
}

// Where names the fleet in messages: "Temporal at ADDRESS (namespace NS)".
func (f Fleet) Where() string {
	if f.Address == "" {
		return "a Temporal fleet (this copy, made by one of its workers, does not say which)"
	}
	return fmt.Sprintf("Temporal at %s (namespace %s)", f.Address, f.Namespace)
}

// OnFleet is where the session runs when it is a fleet session's copy:
// the mark the fleet start wrote, or, for a copy a worker made (its key
// is FleetKey), a fleet it does not name; nil for a session of this
// store's own.
func (m Meta) OnFleet() *Fleet {
	if m.Fleet != nil {
		return m.Fleet
	}
	if m.Key == FleetKey(m.ID) {
		return &Fleet{}
	}
	return nil
}

// FleetKey is the key of a fleet session's copy in a store: one of its
// own, so that no local run of its pipeline takes the copy for its latest
// session, and the copy's lock is never the pipeline's. The fleet's
// workers compute the same key for the copies they make.
func FleetKey(id string) string {
	h := fnv.New64a()
	h.Write([]byte("fleet\x00" + id))
	return strconv.FormatUint(h.Sum64(), 36)
}

// Summary is one line of the index: what sessions lists. In memory File
// and Spec are absolute; in the index they are relative to the store's
// base, as in meta.json.
type Summary struct {
	ID          string `json:"id"`
	Key         string `json:"key"`
	Pipeline    string `json:"pipeline"`
	File        string `json:"file,omitempty"`
	Spec        string `json:"spec,omitempty"`
	Status      string `json:"status"`
	Phase       string `json:"phase,omitempty"`
	PauseReason string `json:"pause_reason,omitempty"`
	// ByHand: pipeline complete marked the session completed (status
	// says "completed (by hand)").
	ByHand bool `json:"by_hand,omitempty"`
	// ReplayOf is the session this one replays (pipeline replay).
	ReplayOf string    `json:"replay_of,omitempty"`
	Tokens   int       `json:"tokens"`
	CostUSD  float64   `json:"cost_usd"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
}

// Store is a .pipeline folder.
type Store struct {
	Root string
	// base is the folder that holds the store's folder, absolute: the
	// paths the store keeps are relative to it (paths.go).
	base string
	// lastAbs is the last path Abs made absolute, and what it made.
	lastAbs atomic.Pointer[[2]string]
	// dir is the store's folder, opened once: every file is reached from
	// it (beneath.go).
	dir *os.File
	fd  int
	// sessions is the sessions folder, opened on its first use and kept
	// (sessionsFolder): every file of every session is reached through
	// it, and a run opened it some thirty times.
	sessionsMu     sync.Mutex
	sessionsOpened bool
	sessionsFd     int
	sessionsStale  []int                  // kept folders found deleted: closed by Close
	held           map[string]*heldFolder // see heldsessions.go
	// Warn gets one line for each thing the store skips rather than
	// fail on (a line of index.tsv it did not write); os.Stderr unless
	// set, nil for none.
	Warn io.Writer
	// warned holds what was said on Warn, so that a listing read many
	// times by one command says it once.
	warnMu sync.Mutex
	warned map[string]bool
	// listing is the index as List last read it.
	listing indexCache
	// keyed is the index as SessionsOf last read it.
	keyed keyedCache
	// opened is the index as OpenOf last read it.
	opened openCache
	// sweeps counts the sessions folder's sweeps by Open (swept.go).
	sweeps int
}

// warnOnce writes a warning on s.Warn, once for each key.
func (s *Store) warnOnce(key, format string, args ...any) {
	s.warnMu.Lock()
	defer s.warnMu.Unlock()
	if s.warned[key] || s.Warn == nil {
		return
	}
	if s.warned == nil {
		s.warned = map[string]bool{}
	}
	s.warned[key] = true
	fmt.Fprintf(s.Warn, format, args...)
}

// Open opens the store at root, making it (private, kept out of git) if
// it is not there. A root that is not a folder, cannot be written, or is
// not private (another user's, or writable by others) is refused with
// the reason.
func Open(root string) (*Store, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		if info, statErr := os.Stat(root); statErr == nil && !info.IsDir() {
			return nil, fmt.Errorf("the state folder %s is not a folder: %w", root,
				&fs.PathError{Op: "open", Path: root, Err: syscall.ENOTDIR})
		}
		if link := brokenLink(root); link != nil {
			return nil, link
		}
		return nil, fmt.Errorf("the state folder %s cannot be made: %w", root, err)
	}
	s, err := openRoot(root)
	if err != nil {
		return nil, err
	}
	if err := unix.Access(root, unix.W_OK|unix.X_OK); err != nil {
		s.Close()
		return nil, fmt.Errorf("the state folder %s cannot be written: %w", root, err)
	}
	if err := s.mkdir("sessions"); err != nil {
		s.Close()
		return nil, err
	}
	// What a writer killed in the middle of a write left (kill -9, a
	// crash): the index's, the project memory's; a session's folder
	// being made or imported.
	s.sweepTemps("")
	s.sweepNewUnlessSwept()
	if _, err := s.lstat(".gitignore"); errors.Is(err, fs.ErrNotExist) {
		if err := s.writeAtomic(".gitignore", []byte("# written by pipeline: sessions stay out of git\n*\n"), false); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// ErrNoStore is a folder where no session was ever kept.
var ErrNoStore = errors.New("no sessions kept here yet")

// OpenExisting opens the store at root for a command that reads or
// amends sessions: it makes nothing, and a folder without sessions is
// ErrNoStore.
func OpenExisting(root string) (*Store, error) {
	s, err := openRoot(root)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ELOOP) {
		if link := brokenLink(root); link != nil {
			return nil, link
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", root, ErrNoStore)
	}
	if err != nil {
		return nil, err
	}
	st, err := s.lstat("sessions")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.Close()
		return nil, fmt.Errorf("%s: %w", root, ErrNoStore)
	case err != nil:
		s.Close()
		return nil, err
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		s.Close()
		return nil, &fs.PathError{Op: "open", Path: s.path("sessions"), Err: ErrSymlink}
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		// Taken for "no sessions yet", it made sessions say so, exit 0,
		// and run make nothing of it.
		s.Close()
		return nil, fmt.Errorf("the state folder %s holds a file named sessions where the folder of its sessions should be: move it away, and run makes the folder: %w",
			root, &fs.PathError{Op: "open", Path: s.path("sessions"), Err: syscall.ENOTDIR})
	}
	return s, nil
}

// BrokenLinkError is a state folder reached through a symbolic link that
// points nowhere (dangling) or to itself (a loop): mkdir says only "file
// exists", open "no such file".
type BrokenLinkError struct {
	Root   string // the state folder as named
	Link   string // the link on its path (Root, or a folder above it)
	Target string // what Link points to, as written in it
	Loop   bool
}

func (e *BrokenLinkError) Error() string {
	if e.Loop {
		return fmt.Sprintf("the state folder %s cannot be used: %s is a symbolic link to %s, which leads back to itself (a loop); remove the link (rm %s), or point it at a folder",
			e.Root, e.Link, e.Target, e.Link)
	}
	target := e.Target
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(e.Link), target)
	}
	return fmt.Sprintf("the state folder %s cannot be used: %s is a dangling symbolic link to %s, which does not exist; make that folder (mkdir -p %s), or remove the link (rm %s) and pipeline makes a folder there",
		e.Root, e.Link, e.Target, target, e.Link)
}

// Unwrap makes it a missing file: the exit status of a usage error.
func (e *BrokenLinkError) Unwrap() error { return fs.ErrNotExist }

// brokenLink finds a symbolic link on the path of root (root itself, or
// a folder above it) that leads nowhere or loops; nil when there is none.
func brokenLink(root string) *BrokenLinkError {
	clean := filepath.Clean(root)
	var prefixes []string
	for p := clean; ; p = filepath.Dir(p) {
		prefixes = append(prefixes, p)
		if next := filepath.Dir(p); next == p {
			break
		}
	}
	for i := len(prefixes) - 1; i >= 0; i-- {
		p := prefixes[i]
		info, err := os.Lstat(p)
		if err != nil {
			return nil // missing: the link, if any, is above
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		_, err = os.Stat(p)
		if err == nil {
			continue
		}
		target, _ := os.Readlink(p)
		return &BrokenLinkError{Root: root, Link: p, Target: target, Loop: errors.Is(err, syscall.ELOOP)}
	}
	return nil
}

// openRoot opens the store's folder and checks that it is the user's
// own: sessions hold prompts, notes and paths, and a folder others can
// write is one where they can plant what the runner then writes through.
func openRoot(root string) (*Store, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOTDIR) {
			return nil, fmt.Errorf("the state folder %s is not a folder: %w", root,
				&fs.PathError{Op: "open", Path: root, Err: syscall.ENOTDIR})
		}
		return nil, &fs.PathError{Op: "open", Path: root, Err: err}
	}
	dir := os.NewFile(uintptr(fd), root)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		dir.Close()
		return nil, &fs.PathError{Op: "stat", Path: root, Err: err}
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		dir.Close()
		return nil, fmt.Errorf("the state folder %s belongs to uid %d, not to you (uid %d): sessions are private; use a folder of your own",
			root, st.Uid, uid)
	}
	if perm := uint32(st.Mode) & 0o777; perm&0o022 != 0 {
		dir.Close()
		return nil, fmt.Errorf("the state folder %s can be written by others (mode %04o), who could plant files the runner writes through: chmod 700 %s, or use another folder",
			root, perm, root)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		dir.Close()
		return nil, err
	}
	return &Store{Root: root, base: filepath.Dir(abs), dir: dir, fd: fd, Warn: os.Stderr}, nil
}

// Close closes the store's folder.
func (s *Store) Close() error {
	if s.dir == nil {
		return nil
	}
	s.sessionsMu.Lock()
	if s.sessionsOpened {
		unix.Close(s.sessionsFd)
		s.sessionsOpened = false
	}
	for _, fd := range s.sessionsStale {
		unix.Close(fd)
	}
	s.sessionsStale = nil
	for id, h := range s.held {
		// A walk under way closes it as it ends.
		if h.owners = 0; h.walks == 0 {
			unix.Close(h.fd)
		}
		delete(s.held, id)
	}
	s.sessionsMu.Unlock()
	return s.dir.Close()
}

func sessionRel(id string) string { return "sessions/" + id }

func (s *Store) sessionDir(id string) string { return s.path(sessionRel(id)) }

// ErrNotFound is a session id that is not in the store.
var ErrNotFound = errors.New("no such session")

// Matching are the session ids among names (sorted) that start or end with
// id: what a human typed for a session. Folders being made or removed
// (a leading dot) are none.
func Matching(names []string, id string) []string {
	var out []string
	for _, n := range names {
		if !strings.HasPrefix(n, ".") && (strings.HasPrefix(n, id) || strings.HasSuffix(n, id)) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// AmbiguousError is a part of a session id that starts or ends more than
// one session's id: the user's to make longer, exit 2.
type AmbiguousError struct {
	ID string
	// Matches are the ids it names, sorted.
	Matches []string
}

func (e *AmbiguousError) Error() string {
	const most = 10
	list := e.Matches
	more := ""
	if len(list) > most {
		list, more = list[:most], fmt.Sprintf(", and %d more", len(e.Matches)-most)
	}
	return fmt.Sprintf("%q names %d sessions (%s%s): give more of the id", e.ID, len(e.Matches), strings.Join(list, ", "), more)
}

// ExitCode is 2: the id was given too short.
func (e *AmbiguousError) ExitCode() int { return 2 }

// Unwrap is ErrNotFound: no one session has the id.
func (e *AmbiguousError) Unwrap() error { return ErrNotFound }

// ErrRemoved is a session whose folder was deleted while it was open: by
// clean, or by hand.
var ErrRemoved = errors.New("the session's folder was deleted while it was open")

// Create makes a new session.
func (s *Store) Create(meta Meta) (*Session, error) {
	meta.Format = Format
	if err := name(meta.ID); err != nil || strings.HasPrefix(meta.ID, ".") {
		return nil, fmt.Errorf("bad session id %q", meta.ID)
	}
	// The folder is made under a temporary name and renamed when whole: a
	// crash leaves a session with its meta, or a .new- folder clean
	// removes, never a session without its meta.
	tmp := sessionRel(newPrefix + meta.ID)
	content, err := s.metaJSON(meta)
	if err != nil {
		return nil, err
	}
	meta.File, meta.Spec = s.Abs(s.Rel(meta.File)), s.Abs(s.Rel(meta.Spec))
	before, known := s.sessionsState()
	owned, err := s.mkdirOwned(tmp)
	var metaFile, events *os.File
	if err == nil {
		// Its lock is held until it has its name: sweepNew leaves it.
		defer owned.Close()
		metaFile, events, err = fillNew(owned, content)
	}
	if err == nil {
		err = s.rename(tmp, sessionRel(meta.ID))
	}
	if err != nil {
		closeAll(metaFile, events)
		s.removeAll(tmp)
		return nil, err
	}
	if meta.Name != "" {
		// Named once the session is there, so that a name whose session
		// is not is known stale (ClaimName).
		if err := s.ClaimName(meta.Name, meta.ID); err != nil {
			closeAll(metaFile, events)
			s.removeAll(sessionRel(meta.ID))
			return nil, err
		}
	}
	stamp := func(f *os.File) {
		if known {
			s.stampCreated(f, before)
		}
	}
	if err := s.indexThen(Summary{ID: meta.ID, Key: meta.Key, Pipeline: meta.Pipeline, File: meta.File, Spec: meta.Spec,
		Status: "running", Created: meta.Created, Updated: meta.Created}, stamp); err != nil {
		// Not listed, it would be lost: it goes, having nothing yet.
		closeAll(metaFile, events)
		s.removeAll(sessionRel(meta.ID))
		s.ReleaseName(meta.Name, meta.ID)
		return nil, err
	}
	// The log was made empty in the folder before its rename: nothing to
	// scan, no torn tail, no temporary file of a dead writer.
	// Its folder is synced with it (syncCreated).
	x := &Session{Dir: s.sessionDir(meta.ID), Meta: meta, store: s, rel: sessionRel(meta.ID), events: events, folderSynced: true}
	x.hold()
	s.syncCreated(x, metaFile)
	return x, nil
}

// syncCreated syncs the new session x to disk: its meta.json (metaFile,
// closed once synced), its folder (the names meta.json and events.jsonl,
// which a stop recorded by the log alone relies on) and the sessions
// folder; x.created delivers the result.
func (s *Store) syncCreated(x *Session, metaFile *os.File) {
	// Syncing the new session to disk (meta.json, the sessions folder)
	// goes on while the first step starts; the snapshot waits for it. A
	// kill -9 needs no sync at all; a power cut in the first moments of a
	// run may lose the run. The two syncs run at once, and with the first
	// snapshot's own, rather than one after the other: the folder's
	// rename was made before either (as ever: a snapshot written after
	// both is what makes the session whole), and syncs given to the disk
	// together are written in one commit of its journal, where a short
	// run waited for three one after the other. The session's folder is
	// synced after meta.json, on its thread: a new file's fsync on ext4
	// without a journal writes its folder too, leaving that sync little.
	x.created = make(chan error, 1)
	metaSynced := make(chan error, 1)
	go func() { metaSynced <- errors.Join(metaFile.Sync(), metaFile.Close(), s.syncFile(x.rel)) }()
	go func() {
		err := s.syncFile("sessions")
		x.created <- errors.Join(<-metaSynced, err)
	}()
}

// fillNew makes what a new session's folder holds before its rename, in
// the folder owned (kept open, and locked, since it was made: no walk
// from the store's folder): meta.json of content, and an empty
// events.jsonl. It returns meta.json and the log, open (meta.json for its
// sync). transcripts/ comes with the first byte a step writes.
func fillNew(owned *os.File, content []byte) (metaFile, events *os.File, err error) {
	dir := int(owned.Fd())
	metaFile, err = createIn(dir, owned.Name(), "meta.json", unix.O_WRONLY)
	if err != nil {
		return nil, nil, err
	}
	if _, err = metaFile.Write(content); err != nil {
		metaFile.Close()
		return nil, nil, err
	}
	if events, err = createIn(dir, owned.Name(), "events.jsonl", unix.O_RDWR|unix.O_APPEND); err != nil {
		metaFile.Close()
		return nil, nil, err
	}
	return metaFile, events, nil
}

// createIn makes the file n, which must not be there, in the folder dir
// (named name, for errors).
func createIn(dir int, name, n string, flag int) (*os.File, error) {
	fd, err := openat(dir, n, flag|unix.O_CREAT|unix.O_EXCL, 0o600)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name + "/" + n, Err: err}
	}
	return os.NewFile(uintptr(fd), name+"/"+n), nil
}

// closeAll closes the files that are open (not nil).
func closeAll(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// Find reads the metadata of the session id, or of the only one whose id
// starts or ends with it (the tail pipeline watch shows); nothing is opened
// or written. Two or more such sessions are an *AmbiguousError.
func (s *Store) Find(id string) (Meta, error) { return s.find(id) }

// Session opens an existing session by id, or by a unique prefix of it,
// for writing: the caller holds its lock. A last line of its event log cut
// short (a machine crash, a write cut short) is cut off first, so that the
// next event is not glued to it.
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
// starts or ends with it.
func (s *Store) find(id string) (Meta, error) {
	// The id comes from the command line: it names a session folder, never
	// the sessions folder, one outside it, one still being made (.new-) or
	// going (.removed-).
	if id == "" || strings.HasPrefix(id, ".") || strings.ContainsAny(id, `/\*?[`) {
		return Meta{}, fmt.Errorf("%w %q in %s", ErrNotFound, id, s.Root)
	}
	dir := id
	if named, ok := s.Named(id); ok {
		if _, err := s.lstat(sessionRel(id)); err != nil {
			dir = named
		}
	}
	if _, err := s.lstat(sessionRel(dir)); err != nil {
		names, err := s.readDirNames("sessions")
		if err != nil {
			return Meta{}, err
		}
		matches := Matching(names, id)
		switch len(matches) {
		case 1:
			dir = matches[0]
		case 0:
			return Meta{}, fmt.Errorf("%w %q in %s", ErrNotFound, id, s.Root)
		default:
			return Meta{}, &AmbiguousError{ID: id, Matches: matches}
		}
	}
	content, err := s.readFile(sessionRel(dir) + "/meta.json")
	if err != nil {
		return Meta{}, fmt.Errorf("session %s: %w", dir, err)
	}
	meta, err := s.parseMeta(content)
	if err != nil {
		return Meta{}, fmt.Errorf("session %s: %w", dir, err)
	}
	if meta.Format < OldestFormat || meta.Format > Format {
		return Meta{}, formatError(dir, meta.Format)
	}
	if meta.ID != dir {
		// The session's files are found by meta.ID: it must be this folder.
		return Meta{}, fmt.Errorf("session %s: meta.json names session %q", dir, meta.ID)
	}
	return meta, nil
}

// parseMeta reads meta.json into the Meta of this store: paths made
// absolute from its base, and a format-1 session's key made again from
// them (relative), so that it is the key its pipeline and spec have now.
func (s *Store) parseMeta(content []byte) (Meta, error) {
	var meta Meta
	if err := json.Unmarshal(content, &meta); err != nil {
		return Meta{}, fmt.Errorf("meta.json is not readable: %w", err)
	}
	meta.File, meta.Spec = s.Abs(meta.File), s.Abs(meta.Spec)
	if meta.Format < Format {
		meta.Key = s.Key(meta.File, meta.Spec)
	}
	return meta, nil
}

// metaJSON is meta.json for meta, in this format: its paths relative to
// the store's base.
func (s *Store) metaJSON(meta Meta) ([]byte, error) {
	meta.Format = Format
	meta.File, meta.Spec = s.Rel(meta.File), s.Rel(meta.Spec)
	return metaIndentedJSON(meta)
}

func formatError(id string, format int) error {
	return fmt.Errorf("session %s is in format %d; this pipeline reads formats %d to %d: use the pipeline version that wrote it, or start anew with run --new",
		id, format, OldestFormat, Format)
}

func (s *Store) open(meta Meta, readOnly bool) (*Session, error) {
	x := &Session{Dir: s.sessionDir(meta.ID), Meta: meta, store: s, rel: sessionRel(meta.ID), readOnly: readOnly}
	if readOnly {
		// A session cut short before its first event has no log: it has
		// no events, and reading it must not make one.
		_, err := x.scan(func(seq int64, line []byte) error {
			x.seq = seq
			x.noteState(seq, line)
			return nil
		})
		return x, err
	}
	events, err := s.openFile(x.rel+"/events.jsonl", unix.O_RDWR|unix.O_CREAT|unix.O_APPEND, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("session %s: %w", meta.ID, ErrRemoved)
		}
		return nil, err
	}
	x.events = events
	x.hold()
	// The snapshot (or a request) a writer killed in the middle of it
	// left: opened for writing, the session is its runner's now.
	s.sweepTemps(x.rel)
	// The next sequence number follows the last whole line of the log.
	end, err := x.scan(func(seq int64, line []byte) error {
		x.seq = seq
		x.noteState(seq, line)
		return nil
	})
	if err == nil {
		err = x.cutTornTail(end)
	}
	if err != nil {
		x.letGo()
		events.Close()
		return nil, err
	}
	return x, nil
}

// cutTornTail removes what follows the last whole line of the log, at
// end: half a line left by a machine crash or a write cut short.
func (x *Session) cutTornTail(end int64) error {
	info, err := x.events.Stat()
	if err != nil {
		return err
	}
	if info.Size() > end {
		if err := x.events.Truncate(end); err != nil {
			return fmt.Errorf("session %s: cutting the torn last line of events.jsonl: %w", x.Meta.ID, err)
		}
	}
	x.size = end
	return nil
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

// scan calls fn with the sequence number and the bytes of each whole
// line, and returns the offset just past the last whole line. A log that
// is not there (a session cut short before its first event, read) has no
// lines.
func (x *Session) scan(fn func(seq int64, line []byte) error) (int64, error) {
	f, err := x.store.openFile(x.rel+"/events.jsonl", unix.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, scanBuffer(f))
	var end int64
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
			return end, nil // the end, or a torn last line
		}
		if err != nil {
			return end, fmt.Errorf("session %s: reading events.jsonl: %w", x.Meta.ID, err)
		}
		seq, ok := lineSeq(line)
		if !ok {
			return end, fmt.Errorf("session %s: events.jsonl line %d is not readable", x.Meta.ID, n)
		}
		if err := fn(seq, line); err != nil {
			return end, err
		}
		end += int64(len(line))
	}
}

// scanBuffer is the size of scan's buffer for the log f: 256 KiB, or
// the log's size when it is shorter (a new session's, or a short run's:
// a run scans two logs, and 512 KiB of buffers brought its first
// collection forward).
func scanBuffer(f *os.File) int {
	const most = 256 << 10
	info, err := f.Stat()
	if err != nil || info.Size() >= most {
		return most
	}
	return max(int(info.Size())+1, 4<<10)
}

// Session is one session's folder.
type Session struct {
	Dir    string
	Meta   Meta
	store  *Store
	rel    string   // the folder, inside the store
	events *os.File // nil when opened for reading
	seq    int64
	// size is the length of the log's whole lines; before, its length
	// before the last append, which Unappend goes back to.
	size, before int64
	// readOnly: opened by ReadSession; nothing is written.
	readOnly bool
	// created, for a session just made, delivers the result of syncing it.
	created chan error
	// held: the store keeps the folder open for this Session (hold).
	held bool
	// stateSeq and stateLine are the log's last line that carries a
	// stop's state (AppendState), if any.
	stateSeq  int64
	stateLine []byte
	// folderSynced: the session's folder was synced since its log was
	// made (AppendState).
	folderSynced bool
}

// hold has the store keep the session's folder open until Close.
func (x *Session) hold() {
	x.held = x.store.holdSession(x.Meta.ID)
}

// letGo ends hold, once.
func (x *Session) letGo() {
	if x.held {
		x.held = false
		x.store.letGo(x.Meta.ID)
	}
}

// waitCreated waits for a new session's sync, once.
func (x *Session) waitCreated() error {
	if x.created == nil {
		return nil
	}
	err := <-x.created
	x.created = nil
	if errors.Is(err, fs.ErrNotExist) && x.events != nil {
		// The folder went (pipeline clean) before its sync: say so as
		// every other write to a removed session does.
		if gone := x.linked(); errors.Is(gone, ErrRemoved) {
			return errors.Join(gone, err)
		}
	}
	return err
}

// Close waits for a new session's sync and closes the event log.
func (x *Session) Close() error {
	err := x.waitCreated()
	x.letGo()
	if x.events == nil {
		return err
	}
	if closeErr := x.events.Close(); err == nil {
		err = closeErr
	}
	x.events = nil
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
// the line whole or absent, and a write cut short (a full disk, an I/O
// error) is cut off again, so the log never holds half a line. A session
// whose folder was deleted under it takes nothing: ErrRemoved.
func (x *Session) Append(typ string, payload []byte) (int64, error) {
	if x.readOnly {
		return 0, fmt.Errorf("session %s was opened for reading", x.Meta.ID)
	}
	line, err := eventLineJSON(x.seq+1, typ, payload)
	if err != nil {
		return 0, err
	}
	return x.appendLine(line)
}

// appendLine writes the line of the next event and its newline, in one
// write (see Append).
func (x *Session) appendLine(line []byte) (int64, error) {
	if err := x.linked(); err != nil {
		return 0, err
	}
	n, err := x.events.Write(append(line, '\n'))
	if err != nil {
		if n > 0 {
			// Only the holder of the session's lock appends: the bytes past
			// size are the ones this write left.
			if cutErr := x.events.Truncate(x.size); cutErr != nil {
				err = errors.Join(err, fmt.Errorf("cutting the part written: %w", cutErr))
			}
		}
		return 0, err
	}
	x.before, x.size = x.size, x.size+int64(n)
	x.seq++
	return x.seq, nil
}

// linked fails with ErrRemoved when the log is no longer in any folder:
// its session (or the whole store) was deleted while the session was
// open. Writing on would write into nothing, and report success.
func (x *Session) linked() error {
	info, err := x.events.Stat()
	if err != nil {
		return err
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Nlink == 0 {
		return fmt.Errorf("session %s (%s): %w", x.Meta.ID, x.Dir, ErrRemoved)
	}
	return nil
}

// Unappend takes back the last event appended, whose record could not be
// completed (its snapshot could not be written): the log is as it was
// before it.
func (x *Session) Unappend() error {
	if x.events == nil || x.size == x.before {
		return fmt.Errorf("session %s: no event to take back", x.Meta.ID)
	}
	if err := x.events.Truncate(x.before); err != nil {
		return err
	}
	x.size = x.before
	x.seq--
	if x.stateSeq > x.seq {
		// A state line taken back after AppendState returned (its
		// session removed before its index line): no earlier state line
		// is known, and none of a line gone may be read.
		x.stateSeq, x.stateLine = 0, nil
	}
	return nil
}

// Events calls fn for each event after seq, in order. A last line cut
// short (by a crash of the machine) is skipped; a bad line elsewhere is an
// error.
func (x *Session) Events(after int64, fn func(seq int64, typ string, payload []byte) error) error {
	_, err := x.scan(func(seq int64, line []byte) error {
		if seq <= after {
			return nil
		}
		var ev eventLine
		if err := json.Unmarshal(line, &ev); err != nil {
			return fmt.Errorf("session %s: event %d is not readable: %w", x.Meta.ID, seq, err)
		}
		return fn(ev.Seq, ev.Type, ev.Event)
	})
	return err
}

type snapshot struct {
	Format int             `json:"format"`
	Seq    int64           `json:"seq"`
	State  json.RawMessage `json:"state"`
}

// IndexError is a snapshot written whose line in the index was not: the
// session's files are whole and up to date, its listing is behind until
// the next snapshot.
type IndexError struct{ Err error }

func (e *IndexError) Error() string { return "updating the index: " + e.Err.Error() }
func (e *IndexError) Unwrap() error { return e.Err }

// WriteSnapshot replaces state.json with state (as of event seq)
// atomically, and adds the summary to the index (an *IndexError when only
// that failed). The event log is not synced: the snapshot holds every
// event up to seq, and a kill -9 (not a power cut) loses nothing the
// kernel was given.
//
// The first snapshot of a new session is renamed into place only once
// the session's own sync (meta.json, then the sessions folder) is done,
// as ever; its temporary file is written and synced meanwhile, so that a
// short run waits for the two syncs at once rather than one after the
// other (about 4 ms of the 20 ms of fsyncs a one-step run spent on a busy
// disk here).
func (x *Session) WriteSnapshot(seq int64, state []byte, summary Summary) error {
	if x.readOnly {
		return fmt.Errorf("session %s was opened for reading", x.Meta.ID)
	}
	content, err := snapshotJSON(seq, state)
	if err != nil {
		return err
	}
	err = x.store.writeAtomicAfter(x.rel+"/state.json", content, true, x.waitCreated)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("session %s (%s): %w", x.Meta.ID, x.Dir, ErrRemoved)
	}
	if err != nil {
		return err
	}
	return x.WriteIndex(summary)
}

// WriteIndex adds the summary to the index (an *IndexError if it fails).
func (x *Session) WriteIndex(summary Summary) error {
	if err := x.store.index(summary); err != nil {
		return &IndexError{Err: err}
	}
	return nil
}

// ReadSnapshot returns the last snapshot: the state and the sequence
// number of the last event it includes, from state.json or from the
// log's last line with a stop's state (AppendState), whichever is later
// (the line, of the same event). A session without one gives nil.
func (x *Session) ReadSnapshot() (int64, []byte, error) {
	content, err := x.store.readFile(x.rel + "/state.json")
	if errors.Is(err, fs.ErrNotExist) {
		return x.loggedSnapshot()
	}
	if err != nil {
		return 0, nil, err
	}
	var snap snapshot
	if err := json.Unmarshal(content, &snap); err != nil {
		return 0, nil, fmt.Errorf("session %s: state.json is not readable: %w", x.Meta.ID, err)
	}
	if snap.Format < OldestFormat || snap.Format > Format {
		return 0, nil, formatError(x.Meta.ID, snap.Format)
	}
	if x.stateLine != nil && x.stateSeq >= snap.Seq {
		// Of the same event, state.json was written after the line by a
		// reader that rebuilt the state (this build's from the line; an
		// older build's by a replay through the phases.yaml of now): the
		// line is what the run decided.
		return x.loggedSnapshot()
	}
	return snap.Seq, snap.State, nil
}

// TranscriptPath is the transcript of one attempt of one step.
func (x *Session) TranscriptPath(phase string, attempt int, step string) string {
	return filepath.Join(x.Dir, "transcripts", phase, transcriptName(attempt, step))
}

func transcriptName(attempt int, step string) string { return fmt.Sprintf("%d-%s.log", attempt, step) }

// PromptExt ends the name of the file that keeps the prompts sent to an
// attempt of an agent step, next to its transcript.
const PromptExt = ".prompt"

// CreateTranscript gives a step's transcript, to append to: the file is
// made at its first byte (see Transcript).
func (x *Session) CreateTranscript(phase string, attempt int, step string) (*Transcript, error) {
	file := transcriptName(attempt, step)
	if err := errors.Join(name(phase), name(file)); err != nil {
		return nil, err
	}
	return &Transcript{x: x, phase: phase, file: file}, nil
}

// CreatePrompt opens the file of the prompts sent to a step's attempt for
// appending: <attempt>-<step>.prompt beside its transcript.
func (x *Session) CreatePrompt(phase string, attempt int, step string) (*os.File, error) {
	return x.createStepFile(phase, strings.TrimSuffix(transcriptName(attempt, step), ".log")+PromptExt)
}

func (x *Session) createStepFile(phase, file string) (*os.File, error) {
	if err := errors.Join(name(phase), name(file)); err != nil {
		return nil, err
	}
	// The session's folder is not made again: deleted, it stays deleted.
	dir := x.rel + "/transcripts/" + phase
	err := x.store.mkdir(x.rel + "/transcripts")
	if err == nil {
		err = x.store.mkdir(dir)
	}
	if err != nil {
		return nil, err
	}
	return x.store.openFile(dir+"/"+file, unix.O_WRONLY|unix.O_CREAT|unix.O_APPEND, 0o600)
}

// WriteFile replaces a file of the session atomically and durably (a
// saved spec, a request to pause).
func (x *Session) WriteFile(file string, content []byte) error {
	if err := name(file); err != nil {
		return err
	}
	return x.store.writeAtomic(x.rel+"/"+file, content, true)
}

// WriteFileNoSync replaces a file of the session atomically, without
// waiting for the disk: for what matters only after a kill -9, which the
// kernel's copy survives.
func (x *Session) WriteFileNoSync(file string, content []byte) error {
	if err := name(file); err != nil {
		return err
	}
	return x.store.writeAtomic(x.rel+"/"+file, content, false)
}

// ReadFile reads a file of the session; a missing file gives nil, nil.
func (x *Session) ReadFile(file string) ([]byte, error) {
	if err := name(file); err != nil {
		return nil, err
	}
	content, err := x.store.readFile(x.rel + "/" + file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return content, err
}

// RemoveFile removes a file of the session, if it is there.
func (x *Session) RemoveFile(file string) error {
	if err := name(file); err != nil {
		return err
	}
	return x.store.remove(x.rel + "/" + file)
}

// Key names a (pipeline, spec) pair of this store: one live run each.
// It is made from their paths relative to the store's base, so that the
// pipeline and spec keep their key wherever the project and its store are
// moved together. file and spec are absolute, or relative to the working
// folder; spec may be empty.
func (s *Store) Key(file, spec string) string { return key(s.Rel(file), s.Rel(spec)) }

func key(file, spec string) string {
	h := fnv.New64a()
	h.Write([]byte(file + "\x00" + spec))
	return strconv.FormatUint(h.Sum64(), 36)
}
