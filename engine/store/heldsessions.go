package store

import "golang.org/x/sys/unix"

// A session open for writing keeps its folder open: the ten or so files
// a run reads and writes in it are reached from that folder, not by a
// walk from the sessions folder to it by name for each (an openat and a
// close of the folder, and the fstat of the sessions folder, each time).
// A kept folder is used while it is still the one at its name in the
// sessions folder: deleted (by clean, by hand, with the store), moved
// away (a user's mv, out of the store or to another session's name),
// replaced (import --replace) or swapped for a link, it is passed over,
// and the walk from the sessions folder says what is at its name now
// (nothing, another folder, a link), as it did before: no write of a
// session lands in a folder that is not at its name.

// heldFolder is a session folder kept open, and how many use it.
type heldFolder struct {
	fd     int
	dev    uint64 // the folder's, to know it at its name
	ino    uint64
	owners int // the Sessions that keep it
	walks  int // the walks (parent) using it now
}

// holdSession keeps the folder of the session id open for its Session
// until letGo; a folder that cannot be opened is not kept (false).
func (s *Store) holdSession(id string) bool {
	s.sessionsMu.Lock()
	defer s.sessionsMu.Unlock()
	if h := s.held[id]; h != nil {
		h.owners++
		return true
	}
	sessions := s.sessionsFolderLocked()
	if sessions < 0 {
		return false
	}
	fd, err := openat(sessions, id, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return false
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		unix.Close(fd)
		return false
	}
	if s.held == nil {
		s.held = map[string]*heldFolder{}
	}
	s.held[id] = &heldFolder{fd: fd, dev: uint64(st.Dev), ino: st.Ino, owners: 1}
	return true
}

// letGo ends a Session's keeping of the folder of the session id: the
// folder is closed when no Session keeps it and no walk uses it.
func (s *Store) letGo(id string) {
	s.sessionsMu.Lock()
	defer s.sessionsMu.Unlock()
	h := s.held[id]
	if h == nil {
		return
	}
	if h.owners--; h.owners == 0 {
		delete(s.held, id)
		if h.walks == 0 {
			unix.Close(h.fd)
		}
	}
}

// heldFolderOf is the kept folder of the session id, while it is the
// one at its name, for a walk: done ends the walk's use of it. ok is
// false when it is not kept, or is no longer at its name (then the walks
// pass it over).
func (s *Store) heldFolderOf(id string) (fd int, done func(), ok bool) {
	s.sessionsMu.Lock()
	defer s.sessionsMu.Unlock()
	h := s.held[id]
	if h == nil || !s.sessionsOpened {
		return -1, nil, false
	}
	// One lstat of the name, where a check of the kept folder's link
	// count alone took a folder moved away, or set aside for a
	// replacement, for the session's. A sessions folder deleted holds no
	// name; one moved is still walked from, as sessionsFolder does.
	var st unix.Stat_t
	if unix.Fstatat(s.sessionsFd, id, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || uint64(st.Dev) != h.dev || st.Ino != h.ino {
		return -1, nil, false
	}
	h.walks++
	return h.fd, func() {
		s.sessionsMu.Lock()
		defer s.sessionsMu.Unlock()
		if h.walks--; h.walks == 0 && h.owners == 0 {
			unix.Close(h.fd)
		}
	}, true
}
