package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdatasyncLog writes the log's content, and of its inode only what
// reading it back needs (its size), to the disk.
func fdatasyncLog(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}
