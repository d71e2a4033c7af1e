package store

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Every Open sweeps the sessions folder for .new- folders a killed
// maker left (see sweepNew), and listing that folder, which holds every
// session kept, was the largest part of a short run's store work once
// the index was read from its digest: the kernel reads all of its
// entries, some 0.4 ms for 1,200 sessions.
//
// A sweep that leaves no .new- folder stamps the sessions folder as it
// found it (device, inode, link count, change times) into the index's
// lock file; an Open that finds the folder as stamped does not list it.
// Any change to the folder changes its times, and making a folder (a
// .new- one) adds a link: a folder made since the stamp is always seen.
// A Create of this pipeline keeps the stamp true across its own change,
// under the index lock: it stamps the folder after its rename only when
// the stamp was of the folder just before its mkdir, and the folder has
// one link more (its own): a folder made meanwhile by anyone else adds
// another, and the stamp is left stale, for the next Open to sweep.
// (A folder made and one removed by others in the same instant would
// pass for the Create's own: such a .new- folder, if its maker then
// died, is left to clean, which removes those older than an hour, as it
// does those of a sweep that found a live maker.)
//
// The stamp is a cache: written without a sync, read without the lock;
// a stamp torn, missing or of another folder only makes Open sweep.
// Pipelines that know no stamp ignore the lock file's content.

// folderState is what a folder's stat says of its entries having
// changed.
type folderState struct {
	dev, ino, nlink uint64
	mtime, ctime    int64
}

func (f folderState) stamp() string {
	return fmt.Sprintf("sessions swept %d %d %d %d %d\n", f.dev, f.ino, f.nlink, f.mtime, f.ctime)
}

// sweepNewUnlessSwept is sweepNew, unless the sessions folder is as the
// last sweep that found nothing stamped it.
func (s *Store) sweepNewUnlessSwept() {
	before, known := s.sessionsState()
	if known && s.sweptStamp() == before.stamp() {
		return
	}
	s.sweeps++
	if left := s.sweepNew(); known && left == 0 {
		s.stampSwept(func(f *os.File) {
			// Listed between two stats that agree: the listing is of the
			// folder as stamped.
			if now, ok := s.sessionsState(); ok && now == before {
				writeStamp(f, now)
			}
		})
	}
}

// sweptStamp is the stamp the index's lock file holds, or "".
func (s *Store) sweptStamp() string {
	// Without waiting for a writer: a FIFO put in its place is read as
	// no stamp.
	f, err := s.openFile(indexLockName, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	var b [128]byte
	n, _ := f.ReadAt(b[:], 0)
	return string(b[:n])
}

// stampSwept calls stamp with the index's lock file, under the lock.
func (s *Store) stampSwept(stamp func(*os.File)) {
	f, unlock, err := s.lockIndexFile()
	if err != nil {
		return
	}
	defer unlock()
	stamp(f)
}

// writeStamp writes the stamp of state into the lock file f.
func writeStamp(f *os.File, state folderState) {
	text := state.stamp()
	if _, err := f.WriteAt([]byte(text), 0); err == nil {
		f.Truncate(int64(len(text)))
	}
}

// stampCreated keeps the stamp true after a Create whose folder is
// renamed into the sessions folder, which was before as the Create
// found it before its mkdir; f is the index's lock file, held.
func (s *Store) stampCreated(f *os.File, before folderState) {
	var b [128]byte
	n, _ := f.ReadAt(b[:], 0)
	if string(b[:n]) != before.stamp() {
		return
	}
	now, ok := s.sessionsState()
	if ok && now.dev == before.dev && now.ino == before.ino && now.nlink == before.nlink+1 {
		writeStamp(f, now)
	}
}
