package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Holder says who holds a lock: written into the lock file for the message
// a second run gets.
type Holder struct {
	PID     int       `json:"pid"`
	Session string    `json:"session"`
	Started time.Time `json:"started"`
	// Queued: the sessions a watcher holding the lock has queued to run.
	Queued []string `json:"queued,omitempty"`
	// Host is the machine of PID (SetHolder writes it): a pid names a
	// process on that machine only (a store on a shared volume).
	Host string `json:"host,omitempty"`
	// Ended: the holder let the lock go with Session ended cleanly: not
	// running, no step of it running, nothing its steps started left
	// (each step's leftovers were swept when it ended). The next holder
	// has nothing of Session's to sweep.
	Ended bool `json:"ended,omitempty"`
	// Steps are the process groups that may hold what a step left
	// running, should the holder die: its session's running step (none
	// between steps), and those an earlier holder left that this one has
	// not yet swept (Lock keeps them in the record it writes, so a
	// holder killed before its sweep hands them on). The next holder,
	// whose lock proves the recorder dead, sweeps them.
	Steps []StepGroup `json:"steps,omitempty"`
}

// StepGroup is the process group of a step of a session, and the boot it
// was started in (a group number names nothing after a reboot, or on
// another machine).
type StepGroup struct {
	Session string `json:"session"`
	Group   int    `json:"group"`
	Boot    string `json:"boot,omitempty"`
}

// thisHost is the name of this machine, "" when it has none.
var thisHost = sync.OnceValue(func() string {
	name, _ := os.Hostname()
	return name
})

// ended reports whether the holder's process is known to have ended: it
// ran on this machine (or the holder does not say), and no process has
// its pid.
func (h Holder) ended() bool {
	if h.Host != "" && h.Host != thisHost() {
		return false
	}
	return !alive(h.PID)
}

// LockedError is a lock held by a live process.
type LockedError struct {
	Holder Holder
	// Orphaned: the holder named ended, yet the lock stays held, by a
	// process that shares its open lock file (one it started); Path is
	// the lock file, to find that process by.
	Orphaned bool
	Path     string
}

func (e *LockedError) Error() string {
	h := e.Holder
	if e.Orphaned {
		return fmt.Sprintf("the lock of this pipeline and spec (%s) is held, though the run that took it (pid %d, session %s) has ended: a process that run started still has the lock's file open; find it with: fuser -v %s (or lsof %s), stop it, and run again",
			e.Path, h.PID, h.Session, e.Path, e.Path)
	}
	on := ""
	if h.Host != "" && h.Host != thisHost() {
		on = " on " + h.Host
	}
	if h.Session == "" {
		// Taken a moment ago, by a run that has not named its session
		// yet (or a holder that cannot be read): no id to give.
		by := ""
		if h.PID > 0 {
			by = fmt.Sprintf(" (pid %d%s, started %s)", h.PID, on, h.Started.Local().Format("2006-01-02 15:04:05"))
		}
		return fmt.Sprintf("another run of this pipeline and spec is starting%s; wait for it, or stop it with: pipeline pause", by)
	}
	return fmt.Sprintf("session %s of this pipeline and spec is already running (pid %d%s, started %s); wait for it, or stop it with: pipeline pause %s",
		h.Session, h.PID, on, h.Started.Local().Format("2006-01-02 15:04:05"), h.Session)
}

// Lock is a held lock; it is released by Release or by the death of the
// process (the kernel drops the lock with the last descriptor of its open
// file), so a lock left by a killed run never blocks the next one. The
// kind of lock is the platform's: see lock_linux.go and lock_other.go.
type Lock struct {
	file     *os.File
	id       fileID // the lock file's (see locksHere)
	previous Holder
	// size is the lock file's length as this process last left it.
	size int64
}

// Previous is the holder the lock file named when this process took the
// lock: who held it last (zero for a lock never taken, or a file that
// cannot be read as a holder).
func (l *Lock) Previous() Holder { return l.previous }

// lockRel is the lock file of a key, inside the store. A key is what Key
// makes (base 36); anything else (a meta.json planted with a path for a
// key) names no file.
func lockRel(key string) (string, error) {
	if key == "" || strings.Trim(key, "0123456789abcdefghijklmnopqrstuvwxyz") != "" {
		return "", fmt.Errorf("bad session key %q", key)
	}
	return "locks/" + key + ".lock", nil
}

// openLock opens a key's lock file with flag. A reader opens it with
// O_NONBLOCK: a FIFO planted in its place would block the open for ever.
func (s *Store) openLock(key string, flag int) (*os.File, error) {
	rel, err := lockRel(key)
	if err != nil {
		return nil, err
	}
	return s.openFile(rel, flag|unix.O_NONBLOCK, 0o600)
}

// orphanWait is how long Lock waits for a lock whose recorded holder has
// ended to be dropped (see Lock).
const orphanWait = 3 * time.Second

// Lock takes the lock of a (pipeline, spec) key without waiting, unless
// the process the lock file names as its holder has ended: then the lock
// is held by a process that shares the holder's open lock file, which is
// what a child forked by the runner holds between its fork and its exec
// (the lock file is close-on-exec, so the exec drops it); killed at that
// moment (kill -9), the runner leaves the lock held for a few
// milliseconds more. Lock waits up to orphanWait for it to go, and names
// the lock file if it does not.
func (s *Store) Lock(key string, holder Holder) (*Lock, error) {
	return s.lock(key, holder, orphanWait, func() {})
}

// lock is Lock; it waits up to wait for an orphaned lock, and stillHeld
// is called each time it finds it held (for the tests).
func (s *Store) lock(key string, holder Holder, wait time.Duration, stillHeld func()) (*Lock, error) {
	if _, err := lockRel(key); err != nil {
		return nil, err
	}
	// The folder is made when the lock file cannot be opened: it is
	// there but for a store's first lock.
	f, err := s.openLock(key, unix.O_RDWR|unix.O_CREAT)
	if err != nil {
		if err := s.mkdir("locks"); err != nil {
			return nil, err
		}
		if f, err = s.openLock(key, unix.O_RDWR|unix.O_CREAT); err != nil {
			return nil, err
		}
	}
	id := lockFileID(f)
	taken, err := tryLock(f)
	orphaned := false
	if err == nil && !taken {
		held, _ := s.Holder(key)
		orphaned = held.ended()
		if orphaned || (held.ours() && !locksHere.holds(id)) {
			if s.waitReleased(key, wait, stillHeld) {
				taken, err = tryLock(f)
			}
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	if !taken {
		f.Close()
		held, _ := s.Holder(key)
		rel, _ := lockRel(key)
		return nil, &LockedError{Holder: held, Orphaned: orphaned && held.ended(), Path: s.path(rel)}
	}
	l := &Lock{file: f, id: id}
	l.previous, l.size = readHolder(f)
	// What the last holder's steps may have left is not swept yet.
	holder.Steps = append(holder.Steps[:len(holder.Steps):len(holder.Steps)], l.previous.Steps...)
	if err := l.SetHolder(holder); err != nil {
		f.Close()
		return nil, err
	}
	locksHere.add(id, 1)
	return l, nil
}

// locksHere are the key locks this process holds, by lock file. A lock
// whose holder names this process, though it holds no Lock of that file,
// was released here a moment ago and is still held by a child another
// goroutine is starting: between its fork and its exec the child shares
// every open file, the lock file's too (close-on-exec closes it only at
// the exec), and on a busy machine that lasts milliseconds. A worker or
// a watcher that closes a session and opens it again would otherwise be
// told that it is itself running it. Lock waits for it, as for an ended
// holder's.
var locksHere = heldLocks{files: map[fileID]int{}}

type heldLocks struct {
	mu    sync.Mutex
	files map[fileID]int
}

// fileID is a file's device and inode: the same lock file however its
// store's folder was named.
type fileID struct{ dev, ino uint64 }

// lockFileID is f's; the zero ID if it cannot be read (then a lock held
// here is not told from a child's, and Lock refuses as before).
func lockFileID(f *os.File) fileID {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fileID{}
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}
}

func (h *heldLocks) add(id fileID, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.files[id] += n; h.files[id] <= 0 {
		delete(h.files, id)
	}
}

// holds reports whether this process holds a Lock of the file id (the
// zero ID: as if it did).
func (h *heldLocks) holds(id fileID) bool {
	if id == (fileID{}) {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.files[id] > 0
}

// ours reports whether the holder is this process.
func (h Holder) ours() bool {
	return h.PID == os.Getpid() && (h.Host == "" || h.Host == thisHost())
}

// SetHolder rewrites who holds the lock (the session, once it is known;
// its step's process group as the step starts and ends), in place: the
// file is made once, and no temporary file is made and deleted (each inode
// made costs a run time, and each deleted costs the next runs').
//
// It writes over the old holder before cutting what is left of it: on a
// full disk the blocks the file has are enough, where truncating first
// would give them up and then fail to get one back. A shorter holder is
// written padded with spaces to the old length, in the one write, and then
// cut: a kill -9 between the write and the cut leaves the new holder and
// blanks, which JSON reads as the new holder, never the new one's head on
// the old one's tail (a step group that is neither's). A write of a
// holder (a few hundred bytes, at the file's start: within one page) is
// done whole or not at all by a kill -9.
func (l *Lock) SetHolder(holder Holder) error {
	if holder.Host == "" {
		holder.Host = thisHost()
	}
	content, err := holderJSON(holder)
	if err != nil {
		return err
	}
	length := int64(len(content))
	if pad := l.size - length; pad > 0 && l.size <= holderPage {
		content = append(content, bytes.Repeat([]byte{' '}, int(pad))...)
	}
	if _, err = l.file.WriteAt(content, 0); err == nil && l.size > length {
		afterHolderWrite(l.file.Name())
		err = l.file.Truncate(length)
	}
	if err == nil {
		l.size = length
	} else {
		l.size = max(l.size, int64(len(content)))
	}
	return err
}

// holderPage is the most SetHolder pads to: a holder a step's group is
// read from (one session, a group or a few) is well within a page; a
// longer file (a watcher's long queue, garbage) is cut without padding.
const holderPage = 4096

// afterHolderWrite is called between SetHolder's write and its cut of
// the file (named path): where a kill -9 leaves the padded holder, for
// the tests.
var afterHolderWrite = func(path string) {}

// alive reports whether the process pid may be running. A pid not
// known (0: no holder written yet) counts as alive: a run is never taken
// for dead on a doubt.
func alive(pid int) bool {
	if pid <= 0 {
		return true
	}
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// holderLimit bounds the lock file Holder reads: a holder is a line of
// JSON, with the sessions a watcher queued.
const holderLimit = 1 << 20

// readHolder reads the holder a lock file names, through the file held
// open, and the file's length; zero for anything but a regular file of at
// most holderLimit bytes holding one.
func readHolder(f *os.File) (Holder, int64) {
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil {
		return Holder{}, 0
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > holderLimit || st.Size == 0 {
		return Holder{}, st.Size
	}
	content := make([]byte, st.Size)
	n, err := f.ReadAt(content, 0)
	if err != nil && n < len(content) {
		return Holder{}, st.Size
	}
	// A file that is not one (JSON of other types) leaves what it did
	// fill: none of it is a holder.
	h, err := parseHolder(content)
	if err != nil {
		return Holder{}, st.Size
	}
	return h, st.Size
}

// Holder reads who holds (or last held) a key's lock.
func (s *Store) Holder(key string) (Holder, error) {
	var h Holder
	rel, err := lockRel(key)
	if err != nil {
		return h, err
	}
	// The runner rewrites its holder in place (at each step's start and
	// end), and a read is not atomic with a write: one that meets the
	// file grown by the write, or the write's copy half done, is torn.
	// A write is done within microseconds (unless its thread is
	// preempted); what still reads as no holder after holderRereads is
	// none.
	var deadline time.Time
	for {
		content, err := s.readSmall(rel, holderLimit)
		if err != nil {
			return Holder{}, err
		}
		if h, err = parseHolder(content); err == nil {
			return h, nil
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(holderRereads)
		} else if time.Now().After(deadline) {
			return h, err
		}
		time.Sleep(holderReread)
	}
}

// holderRereads is how long Holder reads again a lock file that does not
// read as a holder, holderReread apart, before it says so.
const (
	holderRereads = 20 * time.Millisecond
	holderReread  = 100 * time.Microsecond
)

// Held reports whether a live process holds a key's lock. A lock that
// cannot be queried counts as held: a run is never taken for dead on a
// doubt.
func (s *Store) Held(key string) bool {
	f, err := s.openLock(key, unix.O_RDONLY)
	if err != nil {
		return false
	}
	defer f.Close()
	held, err := queryHeld(f)
	return held || err != nil
}

// releasePoll is how often WaitReleased asks whether the lock is free.
const releasePoll = 20 * time.Millisecond

// WaitReleased blocks until the key's lock is free (its holder ended), or
// timeout passes; it reports whether the lock was released.
//
// It polls: no event says a lock was dropped. (inotify's close event
// comes before the kernel drops the lock of the closing file, so it would
// be missed; and a blocking lock call cannot be interrupted, so it would
// leave a goroutine behind on a timeout, holding a descriptor that may be
// closed and reused.)
func (s *Store) WaitReleased(key string, timeout time.Duration) bool {
	return s.waitReleased(key, timeout, func() {})
}

// waitReleased is WaitReleased; stillHeld is called each time a query
// finds the lock held, which lets a test release it at a known point.
func (s *Store) waitReleased(key string, timeout time.Duration, stillHeld func()) bool {
	f, err := s.openLock(key, unix.O_RDONLY)
	if err != nil {
		return true
	}
	defer f.Close()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	poll := time.NewTicker(releasePoll)
	defer poll.Stop()
	for {
		held, err := queryHeld(f)
		if err != nil {
			return false
		}
		if !held {
			return true
		}
		stillHeld()
		select {
		case <-deadline.C:
			return false
		case <-poll.C:
		}
	}
}

// Release frees the lock.
func (l *Lock) Release() error {
	if l == nil || l.file == nil {
		return nil
	}
	err := l.file.Close()
	l.file = nil
	locksHere.add(l.id, -1)
	return err
}

// WaitLock takes a lock of the session, on its file named file, waiting
// while another open file holds it (a lock of its own, apart from the
// key's: it orders the writers of a session's requests against its
// runner's end). With create false, a file that is not there is not made,
// and release (a no-op then) comes back with ErrNotExist. release gives
// it back; the lock goes with the process too.
func (x *Session) WaitLock(file string, create bool) (release func() error, err error) {
	if err := name(file); err != nil {
		return nil, err
	}
	flag := unix.O_RDWR
	if create {
		flag |= unix.O_CREAT
	}
	f, err := x.store.openFile(x.rel+"/"+file, flag, 0o600)
	if err != nil {
		return func() error { return nil }, err
	}
	if err := waitLock(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	return f.Close, nil
}

// WaitFolderLock takes the lock of the session's folder itself (an flock
// of it: no file is made for it), waiting while another open file of the
// folder holds it. Nothing else locks a session's folder once it has its
// name (mkdirOwned and sweepNew lock .new- folders, before it). release
// gives it back; the lock goes with the process too.
func (x *Session) WaitFolderLock() (release func() error, err error) {
	f, err := x.store.lockFolder(x.rel)
	if err != nil {
		return nil, err
	}
	return f.Close, nil
}
