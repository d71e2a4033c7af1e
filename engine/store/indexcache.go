package store

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// indexCache is the index as a Store last read it for a listing: the
// latest line of each session, and how far the file was read. The index
// only grows between two listings, but for clean's compaction (a new
// file) and the cut of a torn last line (never a whole line read): a
// listing reads the lines appended since, not the whole file again. A
// run lists the sessions twice (to resume the newest of its pipeline,
// then to tell whether the one before failed), and a store of a few
// hundred sessions made that read a tenth of the run's page faults; a
// long-lived process (pipeline mcp) lists it on every request.
type indexCache struct {
	mu       sync.Mutex
	dev, ino uint64
	offset   int64  // the whole lines read: the next read starts here
	last     []byte // the last line read, which must still end at offset
	lines    int    // the lines read
	// latest is the latest line of each session, in the order of the
	// sessions' first lines; at finds a session's there.
	latest []latestLine
	at     map[string]int
}

// list returns the latest summary of each session not removed, in the
// order of the sessions' first lines, with absolute paths.
func (c *indexCache) list(s *Store) ([]Summary, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, st, err := s.openIndex()
	if f == nil {
		if err == nil {
			c.forget()
		}
		return nil, err
	}
	defer f.Close()
	if c.at == nil || uint64(st.Dev) != c.dev || st.Ino != c.ino || !c.stillEndsAtOffset(f) {
		err = c.readWhole(s, f)
	} else {
		err = c.readAppended(s, f, st.Size)
	}
	if err != nil {
		c.forget()
		return nil, err
	}
	c.dev, c.ino = uint64(st.Dev), st.Ino
	out := make([]Summary, 0, len(c.latest))
	for _, l := range c.latest {
		if l.sum.Status != statusRemoved {
			out = append(out, s.listed(l))
		}
	}
	return out, nil
}

// forget drops what was read: the next read reads the whole file.
func (c *indexCache) forget() {
	c.dev, c.ino, c.offset, c.last, c.lines, c.latest, c.at = 0, 0, 0, nil, 0, nil, nil
}

// stillEndsAtOffset tells whether the file still holds the last line read
// where it was: a file rewritten in place, or a new one that was given
// the old one's inode, does not.
func (c *indexCache) stillEndsAtOffset(f *os.File) bool { return endsAt(f, c.offset, c.last) }

// endsAt tells whether f holds last just before offset.
func endsAt(f *os.File, offset int64, last []byte) bool {
	if int64(len(last)) > offset {
		return false
	}
	at := make([]byte, len(last))
	n, err := f.ReadAt(at, offset-int64(len(last)))
	return (err == nil || err == io.EOF) && n == len(at) && bytes.Equal(at, last)
}

// readWhole reads the index from its first line.
func (c *indexCache) readWhole(s *Store, f *os.File) error {
	content, err := readOpen(f)
	if err != nil {
		return err
	}
	content = wholeLinesOf(content)
	c.latest = s.parseIndex(content, 1)
	c.at = make(map[string]int, len(c.latest))
	for i, l := range c.latest {
		c.at[l.sum.ID] = i
	}
	c.offset, c.lines = int64(len(content)), bytes.Count(content, []byte{'\n'})
	c.keepLast(content)
	return nil
}

// readAppended reads the whole lines appended since the last read, up
// to size, in order: a session's later line replaces its earlier one.
func (c *indexCache) readAppended(s *Store, f *os.File, size int64) error {
	if size <= c.offset {
		return nil
	}
	tail := make([]byte, size-c.offset)
	n, err := f.ReadAt(tail, c.offset)
	if err != nil && err != io.EOF {
		return err
	}
	tail = wholeLinesOf(tail[:n])
	for rest := tail; len(rest) > 0; {
		end := bytes.IndexByte(rest, '\n')
		line := rest[:end]
		rest = rest[end+1:]
		c.lines++
		sum, old, ok := s.parseIndexLineAt(line, c.lines)
		if !ok {
			continue
		}
		if i, seen := c.at[sum.ID]; seen {
			c.latest[i] = latestLine{sum: sum, old: old}
		} else {
			c.at[sum.ID] = len(c.latest)
			c.latest = append(c.latest, latestLine{sum: sum, old: old})
		}
	}
	c.offset += int64(len(tail))
	c.keepLast(tail)
	return nil
}

// keepLast keeps the last line of content (whole lines), if any.
func (c *indexCache) keepLast(content []byte) {
	if len(content) == 0 {
		return
	}
	start := bytes.LastIndexByte(content[:len(content)-1], '\n') + 1
	c.last = append(c.last[:0], content[start:]...)
}

// openIndex opens the index for reading and says what file it is; a
// nil file and error when there is no index yet.
func (s *Store) openIndex() (*os.File, unix.Stat_t, error) {
	var st unix.Stat_t
	f, err := s.openFile(indexName, unix.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, st, nil
	}
	if err != nil {
		return nil, st, err
	}
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, st, &fs.PathError{Op: "stat", Path: f.Name(), Err: err}
	}
	return f, st, nil
}
