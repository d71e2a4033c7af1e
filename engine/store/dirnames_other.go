//go:build !linux

package store

import (
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// namesWithPrefix lists the names in the folder rel that start with
// prefix.
func (s *Store) namesWithPrefix(rel, prefix string) ([]string, error) {
	f, err := s.openFile(rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	all, err := f.Readdirnames(-1)
	var names []string
	for _, n := range all {
		if strings.HasPrefix(n, prefix) {
			names = append(names, n)
		}
	}
	return names, err
}

// sessionsState is not known here: every Open sweeps the sessions
// folder, as it always did.
func (s *Store) sessionsState() (folderState, bool) { return folderState{}, false }

// birthOf is not known here: a digest is checked by the index's inode
// and last line alone.
func birthOf(f *os.File) int64 { return 0 }
