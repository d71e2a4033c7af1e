package osrand

import (
	"errors"
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Read fills b with random bytes from getrandom(2), or from
// /dev/urandom on a kernel without it (before Linux 3.17). Like
// crypto/rand.Read it never fails: a system that gives no randomness
// ends the program.
func Read(b []byte) {
	for len(b) > 0 {
		n, err := getrandom(b)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ENOSYS):
			readURandom(b)
			return
		case err != nil:
			panic("osrand: getrandom: " + err.Error())
		}
		b = b[n:]
	}
}

func readURandom(b []byte) {
	f, err := os.Open("/dev/urandom")
	if err == nil {
		_, err = io.ReadFull(f, b)
		f.Close()
	}
	if err != nil {
		panic("osrand: no getrandom(2), and /dev/urandom: " + err.Error())
	}
}

// getrandom is the system call itself. unix.Getrandom (and crypto/rand)
// go through the vDSO's getrandom, whose first call in a process maps
// and fills the state of a generator per thread: page faults that a
// short command, which asks for a few dozen random bytes, pays for
// nothing.
func getrandom(b []byte) (int, error) {
	n, _, errno := unix.Syscall(unix.SYS_GETRANDOM, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
