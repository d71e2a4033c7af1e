//go:build !linux

package store

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Outside Linux a key's lock is an flock on the lock file: it belongs to
// the open file and goes with its last descriptor. flock cannot be
// queried without being taken, so queryHeld takes it for a moment: a Lock
// at that same moment fails with a LockedError, as if a run held it. A
// status or logs -f beside a run can therefore, rarely, make a run that
// is starting refuse to start. Linux has no such window (lock_linux.go).

// tryLock takes the lock on f without waiting; it reports false if
// another open file holds it.
func tryLock(f *os.File) (bool, error) {
	err := flock(f, unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// waitLock takes the lock on f, waiting while another open file holds it.
func waitLock(f *os.File) error {
	for {
		err := flock(f, unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// queryHeld reports whether another open file holds the lock, by taking
// it without waiting and dropping it at once.
func queryHeld(f *os.File) (bool, error) {
	err := flock(f, unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return false, flock(f, unix.LOCK_UN)
}

// flock runs flock on f, keeping f open for the call.
func flock(f *os.File, how int) error {
	conn, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lockErr error
	if err := conn.Control(func(fd uintptr) { lockErr = unix.Flock(int(fd), how) }); err != nil {
		return err
	}
	return lockErr
}
