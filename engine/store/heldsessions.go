package store

import "golang.org/x/sys/unix"

// A session open for writing keeps its folder open: the ten or so files
// a run reads and writes in it are reached from that folder, not by a
// walk from the sessions folder to it by name for each (an openat and a
// close of the folder, and the fstat of the sessions folder, each time).
// A kept folder is used while it is still there (its link count is not
// zero); deleted (by clean, by hand, with the store), it is let go and
// the walk from the store's folder says what is at its name now (nothing,
// a link), as it did before.

// heldFolder is a session folder kept open, and how many use it.
type heldFolder struct {
	fd     int
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
	if s.held == nil {
		s.held = map[string]*heldFolder{}
	}
	s.held[id] = &heldFolder{fd: fd, owners: 1}
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

// heldFolderOf is the kept folder of the session id, while it is still
// there, for a walk: done ends the walk's use of it. ok is false when it
// is not kept, or was deleted (then it is let go of by the walks).
func (s *Store) heldFolderOf(id string) (fd int, done func(), ok bool) {
	s.sessionsMu.Lock()
	defer s.sessionsMu.Unlock()
	h := s.held[id]
	if h == nil {
		return -1, nil, false
	}
	var st unix.Stat_t
	if unix.Fstat(h.fd, &st) != nil || st.Nlink == 0 {
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
