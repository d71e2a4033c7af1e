package store

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// ProjectMemoryName is the project's memory: facts pinned for every
// session of the store (pipeline memory pin --project).
const ProjectMemoryName = "memory.json"

// ReadProjectFile reads a file at the root of the store (the project's
// memory); a missing file gives nil, nil.
func (s *Store) ReadProjectFile(file string) ([]byte, error) {
	if err := name(file); err != nil {
		return nil, err
	}
	content, err := s.readFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return content, err
}

// UpdateProjectFile changes a file at the root of the store under its
// own lock: update gets the content as it is (nil when missing) and
// returns the new one, written atomically and durably. Two updates at
// once take turns, so neither is lost.
func (s *Store) UpdateProjectFile(file string, update func(old []byte) ([]byte, error)) error {
	if err := name(file); err != nil {
		return err
	}
	if err := s.mkdir("locks"); err != nil {
		return err
	}
	f, err := s.openFile("locks/"+file+".lock", unix.O_RDWR|unix.O_CREAT, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := waitLock(f); err != nil {
		return fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	old, err := s.ReadProjectFile(file)
	if err != nil {
		return err
	}
	content, err := update(old)
	if err != nil {
		return err
	}
	return s.writeAtomic(file, content, true)
}

// Files lists the session's files whose names start with prefix, in
// name order.
func (x *Session) Files(prefix string) ([]string, error) {
	names, err := x.store.readDirNames(x.rel)
	if err != nil {
		return nil, err
	}
	names = slices.DeleteFunc(names, func(n string) bool { return !strings.HasPrefix(n, prefix) })
	slices.Sort(names)
	return names, nil
}

// Store is the store the session belongs to.
func (x *Session) Store() *Store { return x.store }
