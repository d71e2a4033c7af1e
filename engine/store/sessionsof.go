package store

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
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
	content, err := s.readFile(indexName)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	// The content is not written to again: the briefs' strings are
	// slices of it, not copies (the index of a few hundred sessions is
	// read at every run).
	lines := wholeLinesOf(content)
	text := unsafe.String(unsafe.SliceData(lines), len(lines))
	briefs, whole := s.briefsOf(text, key)
	if whole {
		return s.sessionsListed(key)
	}
	// IDs are unique: an unstable sort orders them as List's does.
	slices.SortFunc(briefs, func(a, b Brief) int { return strings.Compare(b.ID, a.ID) })
	return briefs, nil
}

// briefsOf reads text (whole lines of the index) from its last line: the
// first line met of a session is its latest, and one that cannot be
// parsed leaves the session to its line before, as in parseIndex. whole
// says a line of format 1 was met: the index must be listed whole.
func (s *Store) briefsOf(text, key string) (briefs []Brief, whole bool) {
	count := strings.Count(text, "\n")
	seen := make(map[string]bool, count/2) // the sessions of key, and those removed
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
			return nil, true // a line of format 1: its key is not this format's
		case lineKey == key:
			if _, _, ok := s.parseIndexTextAt(line, count-n); ok {
				seen[id] = true
				briefs = append(briefs, Brief{ID: id, Status: status, line: line})
			}
		}
	}
	return briefs, false
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
