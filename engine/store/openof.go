package store

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A run asks the index two things of its pipeline and spec (its key):
// the newest session, and any older one still paused or running (it is
// resumed, or the run says it is passed over); then whether the session
// before the new one failed. SessionsOf answers them from every line of
// the index, which grows with every session kept: a store of 1,200
// sessions made that read most of a run's time after its start-up.
//
// OpenOf answers them from a digest of the index per key, kept in the
// store's keys folder: the latest lines of the sessions a run can need
// (the two newest of the key, and those not completed), and where in
// the index it was made. A run reads the digest and the lines appended
// to the index since; every digestEvery bytes of lines read past it, it
// writes the digest again.
//
// The digest is a cache, never a record: the index stays the one record
// of the sessions, written as before, and a pipeline that knows no
// digest reads the store as it did. A digest counts only while it is of
// the index as it is: the same file (device, inode and birth time: an
// inode number freed by clean's compaction is given to a later file)
// still holding, just before the digest's offset, the line the digest
// says it read last (as the listing's own cache checks, see indexCache); and whole
// (its checksum). Anything else (none yet, a torn write, a compacted or
// replaced index, a line of format 1, a session of the digest removed
// since) and the index is read whole, as SessionsOf reads it. So it is
// written without a sync: a crash anywhere leaves the store as it was,
// at worst with a digest that is passed over.

// keysFolder holds the digests, one file per key.
const keysFolder = "keys"

// digestEvery is how many bytes of index lines a run reads past its
// key's digest before it writes the digest again (some 70 runs of one
// step): a run reads at most that much of the index, and writes the
// digest once in that many runs.
const digestEvery = 16 << 10

// digestLimit bounds the digest a run reads: larger, it is not one this
// pipeline wrote (some 300 bytes a line, for thousands of open
// sessions), and the index is read instead.
const digestLimit = 4 << 20

// digestHeader starts a digest: its format's name and number. Format 3
// checks its lines with CRC-32 (IEEE), not Castagnoli's: the first use of
// Castagnoli's tables builds them with 1.5 MB of checksumming, 170 µs of
// a run's start; IEEE's first use costs 10 µs (an 8 KB table; CLMUL does
// long bodies).
const digestHeader = "pipeline key digest 3"

// openKept is how many of the newest sessions of a key a digest keeps
// whatever their status: the run's own, and the one before it.
const openKept = 2

// openCache is what OpenOf last read, for a second search (run's
// failedBefore) to read only the lines appended since.
type openCache struct {
	mu   sync.Mutex
	read digest
	// from is where in the index the last search started reading: its
	// digest's offset, or 0.
	from int64
}

// digest is what the index says of one key, up to offset.
type digest struct {
	key      string
	dev, ino uint64
	birth    int64  // the index's birth time (see birthOf), or 0
	offset   int64  // the whole lines read: the next read starts here
	last     []byte // the last line read, which must still end at offset
	lines    int    // the lines read
	briefs   []Brief
}

// OpenOf returns the sessions of key that are not completed, and the
// two newest whatever their status, newest first: SessionsOf's with the
// older completed ones left out. It is what a run needs (see above), and
// it reads the index from the key's digest on: its cost does not grow
// with the sessions kept.
func (s *Store) OpenOf(key string) ([]Brief, error) {
	if _, err := lockRel(key); err != nil {
		all, err := s.SessionsOf(key)
		return keptOpen(all), err
	}
	s.opened.mu.Lock()
	defer s.opened.mu.Unlock()
	c := &s.opened.read
	s.opened.from = 0
	f, st, err := s.openIndex()
	if f == nil {
		if err == nil {
			*c = digest{}
		}
		return nil, err
	}
	defer f.Close()
	dev, ino, birth := uint64(st.Dev), st.Ino, birthOf(f)
	same := func(c *digest) bool {
		return c.dev == dev && c.ino == ino && c.birth == birth && endsAt(f, c.offset, c.last)
	}
	if c.key != key || !same(c) {
		if *c = s.readDigest(key); !same(c) {
			*c = digest{key: key, dev: dev, ino: ino, birth: birth}
		}
	}
	from := c.offset
	ok, err := s.readOpenAppended(c, f, st.Size)
	if err == nil && !ok && from > 0 {
		*c = digest{key: key, dev: dev, ino: ino, birth: birth}
		from = 0
		ok, err = s.readOpenAppended(c, f, st.Size)
	}
	if err != nil || !ok {
		*c = digest{}
		if err != nil {
			return nil, err
		}
		all, err := s.sessionsListed(key)
		return keptOpen(all), err
	}
	s.opened.from = from
	if c.offset-from >= digestEvery {
		s.writeDigest(c)
	}
	return slices.Clone(c.briefs), nil
}

// readOpenAppended reads the whole lines of the index f from c's offset
// to size into c. Not ok: the lines cannot be added to c (a line of
// format 1, or a tombstone of a session c keeps, whose place among the
// two newest another one, not kept, takes): the index must be read from
// its start.
func (s *Store) readOpenAppended(c *digest, f *os.File, size int64) (ok bool, err error) {
	read := make([]byte, max(size-c.offset, 0))
	n, err := f.ReadAt(read, c.offset)
	if err != nil && err != io.EOF {
		return false, err
	}
	// What was read is not written to again: the briefs' strings are
	// slices of it, not copies.
	lines := wholeLinesOf(read[:n])
	text := unsafe.String(unsafe.SliceData(lines), len(lines))
	briefs, seen, whole := s.briefsOf(text, c.key, c.lines+1)
	if whole {
		return false, nil
	}
	for _, b := range c.briefs {
		switch {
		case !seen[b.ID]:
			briefs = append(briefs, b)
		case !slices.ContainsFunc(briefs, func(n Brief) bool { return n.ID == b.ID }):
			return false, nil // removed since
		}
	}
	slices.SortFunc(briefs, func(a, b Brief) int { return strings.Compare(b.ID, a.ID) })
	c.briefs = keptOpen(briefs)
	c.offset, c.lines = c.offset+int64(len(lines)), c.lines+strings.Count(text, "\n")
	if len(text) > 0 {
		c.last = append(c.last[:0], text[strings.LastIndexByte(text[:len(text)-1], '\n')+1:]...)
	}
	return true, nil
}

// keptOpen is briefs (newest first) without the completed ones but the
// two newest.
func keptOpen(briefs []Brief) []Brief {
	kept := briefs[:0]
	for i, b := range briefs {
		if i < openKept || b.Status != statusCompleted {
			kept = append(kept, b)
		}
	}
	return kept
}

// digestRel is the digest of key in the store.
func digestRel(key string) string { return keysFolder + "/" + key }

// writeDigest writes c as its key's digest, for the next run. It is a
// cache: it is written without a sync, and a failure to write it is no
// failure of the run (the next run reads more of the index).
func (s *Store) writeDigest(c *digest) {
	var body bytes.Buffer
	body.Write(c.last)
	for _, b := range c.briefs {
		if b.line == "" {
			return // a brief of a full listing: no line to keep
		}
		body.WriteString(b.line)
		body.WriteByte('\n')
	}
	head := fmt.Sprintf("%s %d %d %d %d %d %08x\n", digestHeader, c.dev, c.ino, c.birth, c.offset, c.lines, crc32.ChecksumIEEE(body.Bytes()))
	if s.mkdir(keysFolder) != nil {
		return
	}
	s.sweepTemps(keysFolder) // an older build's
	_ = s.writeInPlace(digestRel(c.key), append([]byte(head), body.Bytes()...))
}

// writeInPlace writes content over the file rel (made when it is not
// there) and cuts it to content's length: no temporary file is made and
// no inode deleted (on ext4 each deleted one makes the next runs'
// creations dearer). Only for a cache whose reader checks what it reads
// (a digest's checksum): a reader at the same moment, or a kill -9
// between the write and the cut, can see the new head on the old tail,
// which it must take for none. Anything but a regular file there (a
// FIFO, a link) is not written.
func (s *Store) writeInPlace(rel string, content []byte) error {
	f, err := s.openFile(rel, unix.O_WRONLY|unix.O_CREAT|unix.O_NONBLOCK, 0o600)
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if err = unix.Fstat(int(f.Fd()), &st); err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG {
		err = fmt.Errorf("%s is not a regular file", f.Name())
	}
	if err == nil {
		_, err = f.WriteAt(content, 0)
	}
	if err == nil && st.Size > int64(len(content)) {
		err = f.Truncate(int64(len(content)))
	}
	return errors.Join(err, f.Close())
}

// readDigest reads the digest of key: the zero digest when there is none
// or it is not whole, or not of key, or holds a line that is not one of
// the index.
func (s *Store) readDigest(key string) digest {
	content, err := s.readSmall(digestRel(key), digestLimit)
	if err != nil {
		return digest{}
	}
	d, err := parseDigest(key, content)
	if err != nil {
		return digest{}
	}
	return d
}

// errDigest is a digest that does not count.
var errDigest = errors.New("not a digest of the index")

// parseDigest reads a digest of key; its briefs' strings are slices of
// content.
func parseDigest(key string, content []byte) (digest, error) {
	head, body, ok := bytes.Cut(content, []byte{'\n'})
	fields := strings.Fields(strings.TrimPrefix(string(head), digestHeader))
	if !ok || !bytes.HasPrefix(head, []byte(digestHeader+" ")) || len(fields) != 6 {
		return digest{}, errDigest
	}
	// Device and inode take all 64 bits (an NFS file id, an overlay's
	// inode with its layer in the high bits); the birth, offset and lines
	// are signed.
	dev, err1 := strconv.ParseUint(fields[0], 10, 64)
	ino, err2 := strconv.ParseUint(fields[1], 10, 64)
	var n [3]int64
	whole := err1 == nil && err2 == nil
	for i := range n {
		var err error
		n[i], err = strconv.ParseInt(fields[2+i], 10, 64)
		whole = whole && err == nil
	}
	if !whole || n[1] < 0 || n[2] < 0 {
		return digest{}, errDigest
	}
	if sum, err := strconv.ParseUint(fields[5], 16, 32); err != nil || uint32(sum) != crc32.ChecksumIEEE(body) {
		return digest{}, errDigest
	}
	last, rest, ok := bytes.Cut(body, []byte{'\n'})
	if !ok || (len(last) == 0) != (n[1] == 0) {
		return digest{}, errDigest
	}
	// A copy: a later read appends its own last line to it.
	d := digest{key: key, dev: dev, ino: ino, birth: n[0], offset: n[1], lines: int(n[2]), last: bytes.Clone(body[:len(last)+1])}
	text := unsafe.String(unsafe.SliceData(rest), len(rest))
	for len(text) > 0 {
		line, more, ok := strings.Cut(text, "\n")
		if !ok {
			return digest{}, errDigest
		}
		text = more
		sum, old, ok := parseIndexText(line)
		if !ok || old || sum.Key != key || sum.Status == statusRemoved {
			return digest{}, errDigest
		}
		d.briefs = append(d.briefs, Brief{ID: sum.ID, Status: sum.Status, line: line})
	}
	if !slices.IsSortedFunc(d.briefs, func(a, b Brief) int { return strings.Compare(b.ID, a.ID) }) {
		return digest{}, errDigest
	}
	return d, nil
}
