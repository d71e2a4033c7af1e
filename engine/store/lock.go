package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Holder says who holds a lock: written into the lock file for the message
// a second run gets.
type Holder struct {
	PID     int       `json:"pid"`
	Session string    `json:"session"`
	Started time.Time `json:"started"`
}

// LockedError is a lock held by a live process.
type LockedError struct {
	Holder Holder
}

func (e *LockedError) Error() string {
	h := e.Holder
	return fmt.Sprintf("session %s of this pipeline and spec is already running (pid %d, started %s); wait for it, or stop it with: pipeline pause %s",
		h.Session, h.PID, h.Started.Local().Format("2006-01-02 15:04:05"), h.Session)
}

// Lock is a held lock; it is released by Release or by the death of the
// process (the kernel drops an flock with its last descriptor), so a lock
// left by a killed run never blocks the next one.
type Lock struct {
	file *os.File
}

func (s *Store) lockPath(key string) string { return filepath.Join(s.Root, "locks", key+".lock") }

// Lock takes the lock of a (pipeline, spec) key without waiting.
func (s *Store) Lock(key string, holder Holder) (*Lock, error) {
	path := s.lockPath(key)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			held, _ := s.Holder(key)
			return nil, &LockedError{Holder: held}
		}
		return nil, err
	}
	l := &Lock{file: f}
	if err := l.SetHolder(holder); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// SetHolder rewrites who holds the lock (the session, once it is known).
func (l *Lock) SetHolder(holder Holder) error {
	content, err := json.Marshal(holder)
	if err == nil {
		err = l.file.Truncate(0)
	}
	if err == nil {
		_, err = l.file.WriteAt(content, 0)
	}
	return err
}

// Holder reads who holds (or last held) a key's lock.
func (s *Store) Holder(key string) (Holder, error) {
	var h Holder
	content, err := os.ReadFile(s.lockPath(key))
	if err != nil {
		return h, err
	}
	err = json.Unmarshal(content, &h)
	return h, err
}

// Held reports whether a live process holds a key's lock.
func (s *Store) Held(key string) bool {
	f, err := os.OpenFile(s.lockPath(key), os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return true
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false
}

// WaitReleased blocks until the key's lock is free (its holder ended), or
// timeout passes; it reports whether the lock was released.
func (s *Store) WaitReleased(key string, timeout time.Duration) bool {
	f, err := os.OpenFile(s.lockPath(key), os.O_RDWR, 0)
	if err != nil {
		return true
	}
	defer f.Close()
	done := make(chan error, 1)
	go func() { done <- unix.Flock(int(f.Fd()), unix.LOCK_EX) }()
	select {
	case err := <-done:
		if err == nil {
			unix.Flock(int(f.Fd()), unix.LOCK_UN)
		}
		return err == nil
	case <-time.After(timeout):
		// Closing the descriptor ends the blocked flock.
		return false
	}
}

// Release frees the lock.
func (l *Lock) Release() error {
	if l == nil || l.file == nil {
		return nil
	}
	err := l.file.Close()
	l.file = nil
	return err
}
