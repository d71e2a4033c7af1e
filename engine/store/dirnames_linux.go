package store

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// namesWithPrefix lists the names in the folder rel that start with
// prefix. Every run looks for the .new- folders among all the sessions:
// the folder's entries are read raw and only those that match become
// strings (Readdirnames made one of each: a string per session a run).
func (s *Store) namesWithPrefix(rel, prefix string) ([]string, error) {
	f, err := s.openFile(rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var names []string
	buf := make([]byte, 16<<10)
	for {
		n, err := unix.Getdents(int(f.Fd()), buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "readdirent", Path: f.Name(), Err: err}
		}
		if n <= 0 {
			return names, nil
		}
		names = appendMatching(names, buf[:n], prefix)
	}
}

// appendMatching appends the names of the linux_dirent64 records in buf
// that start with prefix.
func appendMatching(names []string, buf []byte, prefix string) []string {
	// A record: inode (8 bytes), offset (8), its length (2), type (1),
	// then the name, ended by a NUL.
	const nameAt = 19
	for len(buf) >= nameAt {
		size := int(binary.NativeEndian.Uint16(buf[16:18]))
		if size < nameAt || size > len(buf) {
			break
		}
		name := buf[nameAt:size]
		if end := bytes.IndexByte(name, 0); end >= 0 {
			name = name[:end]
		}
		if bytes.HasPrefix(name, []byte(prefix)) {
			names = append(names, string(name))
		}
		buf = buf[size:]
	}
	return names
}

// sessionsState is what the sessions folder is now, for sweptStamp.
func (s *Store) sessionsState() (folderState, bool) {
	var st unix.Stat_t
	if unix.Fstatat(s.fd, "sessions", &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return folderState{}, false
	}
	return folderState{dev: uint64(st.Dev), ino: st.Ino, nlink: uint64(st.Nlink), mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}, true
}

// birthOf is when the open file f was made (its statx birth time, in
// nanoseconds), or 0 where the file system does not say. A file's inode
// number is reused once it is deleted (clean's compaction replaces the
// index): its birth tells the new file from the old.
func birthOf(f *os.File) int64 {
	var stx unix.Statx_t
	if unix.Statx(int(f.Fd()), "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, unix.STATX_BTIME, &stx) != nil || stx.Mask&unix.STATX_BTIME == 0 {
		return 0
	}
	return stx.Btime.Sec*1e9 + int64(stx.Btime.Nsec)
}
