//go:build linux

package store

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// On Linux a key's lock is an open file description lock (fcntl
// F_OFD_SETLK) on the whole lock file. Like flock, it belongs to the open
// file, not to the process or thread, and goes with its last descriptor;
// unlike flock, it can be queried with F_OFD_GETLK, which never takes it,
// so a status or logs -f beside a run never makes the run's Lock fail.
// OFD locks and flock locks do not see each other: every lock and query
// of the store goes through tryLock and queryHeld.

// wholeFile is a lock request over the whole file, any length.
func wholeFile(typ int16) unix.Flock_t {
	return unix.Flock_t{Type: typ, Whence: io.SeekStart, Start: 0, Len: 0}
}

// fcntlLock runs an F_OFD_* command on f, keeping f open for the call.
func fcntlLock(f *os.File, cmd int, lk *unix.Flock_t) error {
	conn, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lockErr error
	if err := conn.Control(func(fd uintptr) { lockErr = unix.FcntlFlock(fd, cmd, lk) }); err != nil {
		return err
	}
	if errors.Is(lockErr, unix.EINVAL) {
		return errors.Join(lockErr, errors.New("open file description locks need Linux 3.15 or later"))
	}
	return lockErr
}

// tryLock takes the lock on f (opened for writing) without waiting; it
// reports false if another open file holds it.
func tryLock(f *os.File) (bool, error) {
	lk := wholeFile(unix.F_WRLCK)
	err := fcntlLock(f, unix.F_OFD_SETLK, &lk)
	if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
		return false, nil
	}
	return err == nil, err
}

// queryHeld reports whether another open file holds the lock, without
// taking it. f may be open for reading only.
func queryHeld(f *os.File) (bool, error) {
	lk := wholeFile(unix.F_WRLCK)
	if err := fcntlLock(f, unix.F_OFD_GETLK, &lk); err != nil {
		return false, err
	}
	return lk.Type != unix.F_UNLCK, nil
}

// waitLock takes the lock on f (opened for writing), waiting while another
// open file holds it.
func waitLock(f *os.File) error {
	lk := wholeFile(unix.F_WRLCK)
	for {
		err := fcntlLock(f, unix.F_OFD_SETLKW, &lk)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
