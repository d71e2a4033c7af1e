package main

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockWhenFree takes the lock on f (a store's lock file, opened for
// writing) as the store takes it on Linux, an open file description
// lock, waiting while another open file holds it: the call returns when
// the kernel drops the holder's lock. Closing f releases it.
func lockWhenFree(f *os.File) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	for {
		err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLKW, &lk)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
