package store

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// A session may have a name (pipeline run --name) that every command
// takes in place of its id. names/NAME holds the id: made whole under a
// temporary name and linked in place, so that of two runs that want one
// name exactly one gets it, and a crash leaves a name with its id or no
// name.
const namesDir = "names"

// validName tells whether name may name a session: a letter (so that it
// is never taken for the start of an id, a date), then letters, digits,
// '.', '_' or '-', at most 64 in all. (Not a regular expression: one with
// {0,63} costs every start of pipeline a quarter of a millisecond to
// compile.)
func validName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if i == 0 && !letter || !letter && !(c >= '0' && c <= '9') && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// CheckName tells why name cannot name a session, or nil.
func CheckName(name string) error {
	if !validName(name) {
		return fmt.Errorf("the session name %q is not one: it starts with a letter, then letters, digits, '.', '_' or '-', at most 64 in all", name)
	}
	return nil
}

// NameTakenError is a name another session has.
type NameTakenError struct{ Name, ID string }

func (e *NameTakenError) Error() string {
	return fmt.Sprintf("the name %s is session %s's: pick another name, or name that session (pipeline status %s)", e.Name, e.ID, e.Name)
}

// ClaimName gives name to the session id, which is there already (Create
// claims the name of the session it makes); a *NameTakenError when
// another session has it. The name of a session that is no longer there
// is free again.
func (s *Store) ClaimName(name, id string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	if err := s.mkdir(namesDir); err != nil {
		return err
	}
	dir, _, done, err := s.parent(namesDir + "/" + name)
	if err != nil {
		return err
	}
	defer done()
	tmp, f, err := s.createTemp(dir, namesDir+"/"+name, name)
	if err != nil {
		return err
	}
	defer unix.Unlinkat(dir, tmp, 0)
	_, err = f.WriteString(id + "\n")
	if err == nil {
		err = f.Sync()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return err
	}
	for retried := false; ; retried = true {
		err := unix.Linkat(dir, tmp, dir, name, 0)
		if err == nil {
			return unix.Fsync(dir)
		}
		if !errors.Is(err, unix.EEXIST) {
			return s.pathError("link", dir, namesDir+"/"+name, name, err)
		}
		holder, ok := s.Named(name)
		if ok && holder == id {
			return nil
		}
		if retried || !s.freeStaleName(dir, name, holder) {
			return &NameTakenError{Name: name, ID: holder}
		}
	}
}

// freeStaleName removes the name when it is still holder's and holder's
// session is gone, under the index's lock (Remove takes it too): of two
// claims that found it stale, the second finds the first's.
func (s *Store) freeStaleName(dir int, name, holder string) bool {
	unlock, err := s.lockIndex()
	if err != nil {
		return false
	}
	defer unlock()
	now, _ := s.Named(name)
	if now != holder {
		return now == "" // gone meanwhile: try again
	}
	if _, err := s.lstat(sessionRel(holder)); err == nil {
		return false
	}
	return unix.Unlinkat(dir, name, 0) == nil
}

// Named returns the id of the session called name, if one is.
func (s *Store) Named(name string) (string, bool) {
	if CheckName(name) != nil {
		return "", false
	}
	content, err := s.readFile(namesDir + "/" + name)
	if err != nil {
		return "", false
	}
	id := strings.TrimSpace(string(content))
	return id, id != ""
}

// ReleaseName takes name from the session id (a session removed): a name
// another session has is left.
func (s *Store) ReleaseName(name, id string) {
	if holder, ok := s.Named(name); ok && holder == id {
		s.remove(namesDir + "/" + name)
	}
}
