package store

import (
	"io"
	"slices"
	"strings"
	"sync"
	"unsafe"
)

// Brief is a session's latest line in the index as a search among the
// sessions of one pipeline and spec reads it: its id and status; Summary
// gives the rest.
type Brief struct {
	ID, Status string
	line       string   // the latest line, as the index keeps it
	listed     *Summary // the summary already made, when a full listing read it
}

// SessionsOf returns the sessions of key, newest first: List's with those
// of other keys left out. A run searches the sessions of its pipeline and
// spec among all those of the store: the lines of the others are passed
// over by their key, not parsed, and nothing of theirs is kept.
//
// A session's lines are all of its key, but for its tombstone (no key)
// and its lines of format 1 (another key: see listed). A tombstone says
// the session is gone whatever its key; an index with a line of format 1
// still a session's latest is listed whole.
func (s *Store) SessionsOf(key string) ([]Brief, error) {
	if key == "" {
		return s.sessionsListed(key)
	}
	s.keyed.mu.Lock()
	defer s.keyed.mu.Unlock()
	c := &s.keyed.read
	f, st, err := s.openIndex()
	if f == nil {
		if err == nil {
			*c = digest{}
		}
		return nil, err
	}
	defer f.Close()
	from := int64(0)
	dev, ino, birth := uint64(st.Dev), st.Ino, birthOf(f)
	if c.key == key && c.dev == dev && c.ino == ino && c.birth == birth && endsAt(f, c.offset, c.last) {
		from = c.offset
	} else {
		*c = digest{key: key, dev: dev, ino: ino, birth: birth}
	}
	read := make([]byte, max(st.Size-from, 0))
	n, err := f.ReadAt(read, from)
	if err != nil && err != io.EOF {
		*c = digest{}
		return nil, err
	}
	// What was read is not written to again: the briefs' strings are
	// slices of it, not copies (the index of a few hundred sessions is
	// read at every run).
	lines := wholeLinesOf(read[:n])
	text := unsafe.String(unsafe.SliceData(lines), len(lines))
	briefs, seen, whole := s.briefsOf(text, key, c.lines+1)
	if whole {
		*c = digest{}
		return s.sessionsListed(key)
	}
	for _, b := range c.briefs {
		if !seen[b.ID] {
			briefs = append(briefs, b)
		}
	}
	// IDs are unique: an unstable sort orders them as List's does.
	slices.SortFunc(briefs, func(a, b Brief) int { return strings.Compare(b.ID, a.ID) })
	c.briefs, c.offset, c.lines = briefs, from+int64(len(lines)), c.lines+strings.Count(text, "\n")
	if len(text) > 0 {
		c.last = append(c.last[:0], text[strings.LastIndexByte(text[:len(text)-1], '\n')+1:]...)
	}
	return slices.Clone(briefs), nil
}

// keyedCache is what SessionsOf last read, as indexCache is List's: a
// run searches the sessions of its pipeline twice (the one to resume,
// then whether the one before failed), and the second search reads only
// the lines appended since.
type keyedCache struct {
	mu   sync.Mutex
	read digest // what it read of the index for key, kept in memory only
}

// briefsOf reads text (whole lines of the index, the first of which is
// line number first) from its last line: the first line met of a
// session is its latest, and one that cannot be parsed leaves the
// session to its line before, as in parseIndex. seen holds the sessions
// whose latest line is in text: those of key and those removed. whole
// says a line of format 1 was met: the index must be listed whole.
func (s *Store) briefsOf(text, key string, first int) (briefs []Brief, seen map[string]bool, whole bool) {
	count := strings.Count(text, "\n")
	seen = make(map[string]bool, count/2)
	for n := 0; len(text) > 0; n++ {
		end := len(text) - 1 // its newline
		start := strings.LastIndexByte(text[:end], '\n') + 1
		line := text[start:end]
		text = text[:start]
		id, rest, _ := strings.Cut(line, "\t")
		if seen[id] {
			continue
		}
		lineKey, rest, _ := strings.Cut(rest, "\t")
		status, _, _ := strings.Cut(rest, "\t")
		switch {
		case status == statusRemoved:
			seen[id] = true
		case strings.Count(line, "\t") == indexFields-2:
			return nil, nil, true // a line of format 1: its key is not this format's
		case lineKey == key:
			if _, _, ok := s.parseIndexTextAt(line, first-1+count-n); ok {
				seen[id] = true
				briefs = append(briefs, Brief{ID: id, Status: status, line: line})
			}
		}
	}
	return briefs, seen, false
}

// sessionsListed is SessionsOf from the full listing.
func (s *Store) sessionsListed(key string) ([]Brief, error) {
	list, err := s.List()
	if err != nil {
		return nil, err
	}
	var briefs []Brief
	for i := range list {
		if list[i].Key == key {
			briefs = append(briefs, Brief{ID: list[i].ID, Status: list[i].Status, listed: &list[i]})
		}
	}
	return briefs, nil
}

// Summary is the session's latest summary, as List gives it.
func (s *Store) Summary(b Brief) Summary {
	if b.listed != nil {
		return *b.listed
	}
	sum, old, _ := parseIndexText(b.line)
	return s.listed(latestLine{sum: sum, old: old})
}
