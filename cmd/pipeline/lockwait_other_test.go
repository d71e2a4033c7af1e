//go:build !linux

package main

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockWhenFree takes the lock on f (a store's lock file, opened for
// writing) as the store takes it outside Linux, an flock, waiting while
// another open file holds it: the call returns when the kernel drops the
// holder's lock. Closing f releases it.
func lockWhenFree(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
