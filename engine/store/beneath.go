package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/pipeline-dev/pipeline/internal/osrand"
)

// Every file of the store is reached from the store's folder, opened once,
// one name at a time, with O_NOFOLLOW at every step: a symbolic link
// anywhere under the store (a lock file, a session folder, a transcript)
// is refused, never followed, so nothing the store writes lands outside
// it, and no ".." or absolute name is accepted. The store's folder itself
// may be a link: the user names it. A folder opened once also means that a
// store deleted under a live run stays deleted: the run's writes fail
// instead of making half a session again.

// ErrSymlink is a symbolic link found where the store keeps a file or a
// folder.
var ErrSymlink = errors.New("is a symbolic link; pipeline never follows links inside its store: remove it")

// errBadName is a path the store does not make: empty, absolute, or with
// a "." or ".." in it.
var errBadName = errors.New("is not a name inside the store")

// parts splits a slash-separated path inside the store into its names.
func parts(rel string) ([]string, error) {
	names := strings.Split(rel, "/")
	for _, n := range names {
		if n == "" || n == "." || n == ".." || strings.ContainsRune(n, '\\') {
			return nil, errBadName
		}
	}
	return names, nil
}

// name checks that n is one name, usable as a file or folder of the store.
func name(n string) error {
	// parts' checks of one name, without its split: every line of the
	// index names a session.
	if n == "" || n == "." || n == ".." || strings.ContainsAny(n, `/\`) {
		return &fs.PathError{Op: "name", Path: n, Err: errBadName}
	}
	return nil
}

func (s *Store) path(rel string) string { return filepath.Join(s.Root, filepath.FromSlash(rel)) }

// pathError names the file of rel in an error; a link refused by
// O_NOFOLLOW (ELOOP, or ENOTDIR for a folder) becomes ErrSymlink.
func (s *Store) pathError(op string, parent int, rel, last string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EMLINK) {
		var st unix.Stat_t
		if unix.Fstatat(parent, last, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			err = ErrSymlink
		}
	}
	return &fs.PathError{Op: op, Path: s.path(rel), Err: err}
}

// parent opens the folder that holds the last name of rel and returns it
// with that name; done closes it.
func (s *Store) parent(rel string) (fd int, last string, done func(), err error) {
	names, err := parts(rel)
	if err != nil {
		return -1, "", nil, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	fd, from := s.fd, 0
	var release func()
	if len(names) > 2 && names[0] == "sessions" {
		if held, done, ok := s.heldFolderOf(names[1]); ok {
			fd, from, release = held, 2, done
		}
	}
	if from == 0 && len(names) > 1 && names[0] == "sessions" {
		if sessions := s.sessionsFolder(); sessions >= 0 {
			fd, from = sessions, 1
		}
	}
	kept := fd
	for i, n := range names[from : len(names)-1] {
		next, err := openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			err = s.pathError("open", fd, strings.Join(names[:from+i+1], "/"), n, err)
		}
		if fd != kept {
			unix.Close(fd)
		}
		if err != nil {
			if release != nil {
				release()
			}
			return -1, "", nil, err
		}
		fd = next
	}
	done = func() {
		if fd != kept {
			unix.Close(fd)
		}
		if release != nil {
			release()
		}
	}
	return fd, names[len(names)-1], done, nil
}

// sessionsFolder is the sessions folder, opened once and kept until
// Close; -1 when it cannot be opened (not there, a link), which the walk
// from the store's folder then reports. A kept folder that was deleted
// (with the store, under a live run, or replaced by a link) is let go,
// and the walk says what is there now.
func (s *Store) sessionsFolder() int {
	s.sessionsMu.Lock()
	defer s.sessionsMu.Unlock()
	return s.sessionsFolderLocked()
}

// sessionsFolderLocked is sessionsFolder, with sessionsMu held.
func (s *Store) sessionsFolderLocked() int {
	if s.sessionsOpened {
		var st unix.Stat_t
		if unix.Fstat(s.sessionsFd, &st) == nil && st.Nlink > 0 {
			return s.sessionsFd
		}
		// Not closed here: another walk may still hold its number, which
		// a close would let a new open reuse. Close closes it.
		s.sessionsStale = append(s.sessionsStale, s.sessionsFd)
		s.sessionsOpened = false
	}
	if !s.sessionsOpened {
		fd, err := openat(s.fd, "sessions", unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return -1
		}
		s.sessionsFd, s.sessionsOpened = fd, true
	}
	return s.sessionsFd
}

// openat is openat(2) with O_NOFOLLOW and O_CLOEXEC, retried on EINTR.
func openat(dir int, n string, flag int, perm uint32) (int, error) {
	for {
		fd, err := unix.Openat(dir, n, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// openFile opens the file rel of the store.
func (s *Store) openFile(rel string, flag int, perm uint32) (*os.File, error) {
	dir, last, done, err := s.parent(rel)
	if err != nil {
		return nil, err
	}
	defer done()
	fd, err := openat(dir, last, flag, perm)
	if err != nil {
		return nil, s.pathError("open", dir, rel, last, err)
	}
	return os.NewFile(uintptr(fd), s.path(rel)), nil
}

// readFile reads the file rel of the store.
func (s *Store) readFile(rel string) ([]byte, error) {
	f, err := s.openFile(rel, unix.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readOpen(f)
}

// readSmall reads the file rel of the store, a cache or a record of a
// few kilobytes that anyone able to write the store could replace: it is
// opened without waiting for a writer (a FIFO), and anything but a
// regular file of at most limit bytes is refused, never read (a huge
// file would be read whole into memory).
func (s *Store) readSmall(rel string, limit int64) ([]byte, error) {
	f, err := s.openFile(rel, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: f.Name(), Err: err}
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, &fs.PathError{Op: "read", Path: f.Name(), Err: errors.New("is not a regular file")}
	case st.Size > limit:
		return nil, &fs.PathError{Op: "read", Path: f.Name(), Err: fmt.Errorf("is larger than %d bytes", limit)}
	}
	content, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(content)) > limit {
		err = &fs.PathError{Op: "read", Path: f.Name(), Err: fmt.Errorf("is larger than %d bytes", limit)}
	}
	return content, err
}

// readOpen reads an open file from where it is to its end.
func readOpen(f *os.File) ([]byte, error) {
	// Sized once, as os.ReadFile does: the index of thousands of sessions
	// is read whole on every listing.
	size := 512
	if info, err := f.Stat(); err == nil && info.Size() < 1<<30 {
		size += int(info.Size())
	}
	b := make([]byte, 0, size)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// mkdir makes the folder rel (0700), whose parent must exist; a folder
// already there is fine, anything else there is not.
func (s *Store) mkdir(rel string) error {
	dir, last, done, err := s.parent(rel)
	if err != nil {
		return err
	}
	defer done()
	err = unix.Mkdirat(dir, last, 0o700)
	if errors.Is(err, unix.EEXIST) {
		var st unix.Stat_t
		if err = unix.Fstatat(dir, last, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFDIR:
				return nil
			case unix.S_IFLNK:
				err = ErrSymlink
			default:
				err = unix.ENOTDIR
			}
		}
	}
	if err != nil {
		return &fs.PathError{Op: "mkdir", Path: s.path(rel), Err: err}
	}
	return nil
}

// lstat reports what rel is, without following a link.
func (s *Store) lstat(rel string) (unix.Stat_t, error) {
	var st unix.Stat_t
	dir, last, done, err := s.parent(rel)
	if err != nil {
		return st, err
	}
	defer done()
	if err := unix.Fstatat(dir, last, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return st, &fs.PathError{Op: "stat", Path: s.path(rel), Err: err}
	}
	return st, nil
}

// isDir reports whether rel is a folder (not a link to one).
func (s *Store) isDir(rel string) bool {
	st, err := s.lstat(rel)
	return err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
}

// readDirNames lists the folder rel ("" for the store's folder).
func (s *Store) readDirNames(rel string) ([]string, error) {
	f, err := s.openFile(rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// remove deletes the file rel; a file already gone is fine.
func (s *Store) remove(rel string) error {
	dir, last, done, err := s.parent(rel)
	if err != nil {
		return err
	}
	defer done()
	if err := unix.Unlinkat(dir, last, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return &fs.PathError{Op: "remove", Path: s.path(rel), Err: err}
	}
	return nil
}

// rename moves from to to, both inside the store; it replaces a file (or
// a link: the link, not what it points to) at to.
func (s *Store) rename(from, to string) error {
	fromDir, fromLast, fromDone, err := s.parent(from)
	if err != nil {
		return err
	}
	defer fromDone()
	toDir, toLast, toDone, err := s.parent(to)
	if err != nil {
		return err
	}
	defer toDone()
	if err := unix.Renameat(fromDir, fromLast, toDir, toLast); err != nil {
		return &os.LinkError{Op: "rename", Old: s.path(from), New: s.path(to), Err: err}
	}
	return nil
}

// removeAll deletes rel and everything under it, following no link (a
// link is removed, not what it points to). What is already gone (another
// clean at the same time) is fine.
func (s *Store) removeAll(rel string) error {
	dir, last, done, err := s.parent(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer done()
	if err := removeAllAt(dir, last); err != nil {
		return &fs.PathError{Op: "remove", Path: s.path(rel), Err: err}
	}
	return nil
}

func removeAllAt(parent int, n string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(parent, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		if err := unix.Unlinkat(parent, n, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
		return nil
	}
	// Entries may be going at the same time (another clean): list, remove,
	// and try the folder again while it is not empty.
	for attempt := 0; ; attempt++ {
		fd, err := openat(parent, n, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		if err != nil {
			return err
		}
		d := os.NewFile(uintptr(fd), n)
		names, err := d.Readdirnames(-1)
		if errors.Is(err, unix.ENOENT) {
			err = nil // removed meanwhile: the unlink below says so
		}
		if err == nil {
			for _, child := range names {
				if err = removeAllAt(fd, child); err != nil {
					break
				}
			}
		}
		d.Close()
		if err != nil {
			return err
		}
		err = unix.Unlinkat(parent, n, unix.AT_REMOVEDIR)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) || attempt == 10 {
			return err
		}
	}
}

// writeAtomic replaces the file rel with content: a temporary file beside
// it, written whole, then renamed over it. A reader (or a crash, or a full
// disk) sees the old file or the new one, never a part. With durable, the
// file and its folder are synced: the new content survives a power cut.
func (s *Store) writeAtomic(rel string, content []byte, durable bool) error {
	return s.writeAtomicAfter(rel, content, durable, nil)
}

// writeAtomicAfter is writeAtomic that calls before (when not nil) once
// the temporary file is written and synced, and renames it over rel only
// if before succeeds: what must reach the disk before the new file is
// visible (a new session's folder) is awaited while the file's own sync
// has already run.
func (s *Store) writeAtomicAfter(rel string, content []byte, durable bool, before func() error) error {
	dir, last, done, err := s.parent(rel)
	if err != nil {
		return err
	}
	defer done()
	tmp, f, err := s.createTemp(dir, rel, last)
	if err != nil {
		return err
	}
	// The file's lock (see createTemp) is held until it has its name: a
	// second descriptor of it outlives the close.
	held, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		f.Close()
		unix.Unlinkat(dir, tmp, 0)
		return &fs.PathError{Op: "dup", Path: s.path(rel), Err: err}
	}
	defer unix.Close(held)
	// One err through write, sync and close: a short write (a full disk)
	// must stop the rename, or a truncated file replaces the whole one.
	_, err = f.Write(content)
	if err == nil && durable {
		err = f.Sync()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err == nil && before != nil {
		err = before()
	}
	if err == nil {
		if err = unix.Renameat(dir, tmp, dir, last); err != nil {
			err = &fs.PathError{Op: "rename", Path: s.path(rel), Err: err}
		}
	}
	if err != nil {
		unix.Unlinkat(dir, tmp, 0)
		return err
	}
	if durable {
		return fsync(dir)
	}
	return nil
}

// tempPrefix names the temporary file of a writeAtomic, beside the file
// it replaces.
const tempPrefix = ".tmp-"

// createTemp makes the temporary file of a writeAtomic of rel in the
// folder dir, and takes its lock: the lock says a live writer owns it, so
// that sweepTemps leaves it alone; a kill -9 drops the lock with the
// process, and the next sweep removes what it left. A sweep can take the
// lock of a file just made, before its writer does: the writer then finds
// the lock taken, or the file unlinked, and makes another. One sweep
// lists a folder once, so it can take a writer's file once: the bound on
// tries is for sweeps without end.
func (s *Store) createTemp(dir int, rel, last string) (string, *os.File, error) {
	for attempt := 0; ; attempt++ {
		tmp := tempPrefix + osrand.Hex(6)
		fd, err := openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
		if err != nil {
			return "", nil, s.pathError("open", dir, rel, last, err)
		}
		f := os.NewFile(uintptr(fd), s.path(rel))
		taken, err := tryLock(f)
		var st unix.Stat_t
		if err == nil && taken {
			err = unix.Fstat(fd, &st)
		}
		switch {
		case err != nil:
			f.Close()
			unix.Unlinkat(dir, tmp, 0)
			return "", nil, &fs.PathError{Op: "lock", Path: s.path(rel), Err: err}
		case taken && st.Nlink > 0:
			return tmp, f, nil
		}
		f.Close() // a sweep has it, and unlinks it
		if attempt == 1000 {
			return "", nil, &fs.PathError{Op: "open", Path: s.path(rel), Err: errors.New("its temporary files keep being swept as stale")}
		}
	}
}

// sweepTemps removes the temporary files of writeAtomic (.tmp-*) left in
// the folder rel ("" for the store's folder) by a writer that died (kill
// -9, a crash, a power cut): those whose lock no live process holds. It
// says how many it removed; a file it cannot look at is left.
func (s *Store) sweepTemps(rel string) int {
	f, err := s.openDir(rel)
	if err != nil {
		return 0
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return 0
	}
	dir := int(f.Fd())
	removed := 0
	for _, n := range names {
		if !strings.HasPrefix(n, tempPrefix) {
			continue
		}
		fd, err := openat(dir, n, unix.O_WRONLY|unix.O_NONBLOCK, 0)
		if err != nil {
			continue // gone meanwhile, a link, not ours
		}
		tmp := os.NewFile(uintptr(fd), n)
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			// Unlinked while its lock is held: its writer, if it comes
			// to it, sees the file gone and makes another.
			if taken, err := tryLock(tmp); err == nil && taken && unix.Unlinkat(dir, n, 0) == nil {
				removed++
			}
		}
		tmp.Close()
	}
	return removed
}

// mkdirOwned makes the folder rel, which must not be there, and takes its
// lock (an flock on the folder): the lock says a live process is making
// it (a session's .new- folder), so that sweepNew leaves it alone; a kill
// -9 drops the lock with the process. It returns the folder, open: its
// lock goes with the last descriptor of it, once the folder has its
// name, or is removed. A sweep that takes the lock of a folder just made
// removes it: then it is made again.
func (s *Store) mkdirOwned(rel string) (*os.File, error) {
	for attempt := 0; ; attempt++ {
		dir, last, done, err := s.parent(rel)
		if err != nil {
			return nil, err
		}
		err = unix.Mkdirat(dir, last, 0o700)
		done()
		switch {
		case errors.Is(err, unix.EEXIST) && attempt > 0 && attempt < 1000:
			// The sweep that took ours is removing it: wait for it to
			// let go (it holds the folder's flock until then), rather
			// than try again at once, which a sweep slowed by a busy
			// machine outlasted a thousand times.
			s.awaitSweep(rel)
			continue
		case err != nil:
			return nil, &fs.PathError{Op: "mkdir", Path: s.path(rel), Err: err}
		}
		f, err := s.openFile(rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err == nil {
			var taken bool
			if taken, err = flockNB(f); err == nil && taken {
				var st unix.Stat_t
				if err = unix.Fstat(int(f.Fd()), &st); err == nil && st.Nlink > 0 {
					return f, nil
				}
			}
			f.Close()
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if attempt == 1000 {
			return nil, &fs.PathError{Op: "mkdir", Path: s.path(rel), Err: errors.New("it keeps being swept as stale")}
		}
	}
}

// awaitSweep waits until no sweep holds the folder rel (sweepNew holds
// its flock while it removes it); at once when it is gone already.
func (s *Store) awaitSweep(rel string) {
	if f, err := s.lockFolder(rel); err == nil {
		f.Close()
	}
}

// lockFolder opens the folder rel and takes its flock, waiting while
// another open file of it holds it; the lock goes with the file.
func (s *Store) lockFolder(rel string) (*os.File, error) {
	f, err := s.openFile(rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	conn, err := f.SyscallConn()
	if err == nil {
		ctlErr := conn.Control(func(fd uintptr) {
			for {
				if err = unix.Flock(int(fd), unix.LOCK_EX); err != unix.EINTR {
					return
				}
			}
		})
		err = errors.Join(err, ctlErr)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	return f, nil
}

// sweepNew removes the session folders being made (.new-*: a session
// created, a session imported) that no live process owns (see
// mkdirOwned): what a kill -9 or a crash in the middle left. It says how
// many it found and left (a live process's, one it could not remove), or
// -1 when it could not list the folder.
func (s *Store) sweepNew() (left int) {
	names, err := s.namesWithPrefix("sessions", newPrefix)
	if err != nil {
		return -1
	}
	for _, n := range names {
		rel := sessionRel(n)
		f, err := s.openFile(rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			continue // gone meanwhile, a link, not a folder
		}
		if taken, err := flockNB(f); err != nil || !taken || s.removeAll(rel) != nil {
			left++
		}
		f.Close()
	}
	return left
}

// flockNB takes the flock of f without waiting; false when another open
// file holds it. (flock, not the keys' locks: it takes a folder.)
func flockNB(f *os.File) (bool, error) {
	conn, err := f.SyscallConn()
	if err != nil {
		return false, err
	}
	var lockErr error
	if err := conn.Control(func(fd uintptr) {
		for {
			if lockErr = unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB); lockErr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return false, err
	}
	if errors.Is(lockErr, unix.EWOULDBLOCK) {
		return false, nil
	}
	return lockErr == nil, lockErr
}

// openDir opens the folder rel, "" for the store's folder.
func (s *Store) openDir(rel string) (*os.File, error) {
	if rel != "" {
		return s.openFile(rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	}
	fd, err := openat(s.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: s.Root, Err: err}
	}
	return os.NewFile(uintptr(fd), s.Root), nil
}

// fsync syncs an open folder or file by descriptor.
func fsync(fd int) error {
	for {
		err := unix.Fsync(fd)
		if err != unix.EINTR {
			return err
		}
	}
}

// syncFile syncs the file (or folder) rel.
func (s *Store) syncFile(rel string) error {
	f, err := s.openFile(rel, unix.O_RDONLY, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	return err
}
