package store

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The index (index.tsv) lists every session for sessions, run and clean:
// one line per snapshot, the last line of a session wins. Any number of
// processes append to it (each run, complete, pause --notes) while clean
// compacts it and removes sessions. Every change to it happens under the
// store's index lock (index.lock, held for one write, never across a
// step), which gives:
//
//   - no line is lost: clean's compaction reads and replaces the index
//     with no append in between;
//   - no line is glued to a torn one: an append first cuts a last line
//     left without its end (a machine crash, a write cut short by a full
//     disk), which no other writer can be in the middle of writing; a
//     write cut short is cut off by the writer itself;
//   - no line outlives its folder: a line is appended only while the
//     session's folder is there, and a removal renames the folder away and
//     appends a tombstone (status "removed") under the same lock.
//
// Readers take no lock: they read whole lines, and skip a torn last line
// and any line they cannot parse.

const indexName = IndexName

// IndexName is the index's file in the store's folder: a watcher watches
// it to learn of sessions made or ended by other processes.
const IndexName = "index.tsv"

// indexLockName is the lock file of the index: apart from index.tsv,
// which compaction replaces (a lock on the replaced file would lock
// nothing).
const indexLockName = "index.lock"

// statusRemoved marks the last line of a removed session.
const statusRemoved = "removed"

// newPrefix names a session folder still being made; removedPrefix one
// being removed.
const (
	newPrefix     = ".new-"
	removedPrefix = ".removed-"
)

// statusCompleted is engine.StatusCompleted, which the store does not
// import; byHand is the pause-reason field of a line of a session
// pipeline complete marked completed.
const (
	statusCompleted = "completed"
	byHand          = "by-hand"
)

// indexFields is the number of fields of a line of the index; a line
// of format 1 has one fewer (no phases.yaml), and its spec is absolute;
// the line of a replay one more (the session it replays).
const indexFields = 12

// The index is tab-separated rather than JSON: listing 10,000 sessions
// parses 10,000 lines, and splitting on tabs is an order of magnitude
// cheaper than decoding JSON. The paths in a line are as the store keeps
// them (relative to its base): see portable.
func (sum Summary) indexLine() []byte {
	reason := sum.PauseReason
	if sum.ByHand && sum.Status == statusCompleted {
		// A completed session has no pause reason: its field says how it
		// was completed, and a line reads as it did before.
		reason = byHand
	}
	// Appended into one buffer: a run writes two lines, a compaction one
	// for each session, and a replacer made for each field was most of
	// what they allocated.
	b := make([]byte, 0, 160+len(sum.Phase)+len(reason)+len(sum.Pipeline)+len(sum.Spec)+len(sum.File)+len(sum.ReplayOf))
	b = append(append(append(b, sum.ID...), '\t'), sum.Key...)
	b = append(append(b, '\t'), sum.Status...)
	b = appendField(append(b, '\t'), sum.Phase)
	b = appendField(append(b, '\t'), reason)
	b = strconv.AppendInt(append(b, '\t'), int64(sum.Tokens), 10)
	b = strconv.AppendFloat(append(b, '\t'), sum.CostUSD, 'f', -1, 64)
	b = strconv.AppendInt(append(b, '\t'), sum.Created.UnixNano(), 10)
	b = strconv.AppendInt(append(b, '\t'), sum.Updated.UnixNano(), 10)
	b = appendField(append(b, '\t'), sum.Pipeline)
	b = appendField(append(b, '\t'), sum.Spec)
	b = appendField(append(b, '\t'), sum.File)
	if sum.ReplayOf != "" {
		// A thirteenth field, for a replay's only: the index of a store
		// without replays reads as it did.
		b = appendField(append(b, '\t'), sum.ReplayOf)
	}
	return append(b, '\n')
}

// appendField appends a field of free text to a line of the index, its
// tabs and line ends made spaces.
func appendField(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\t' || c == '\n' {
			c = ' '
		}
		b = append(b, c)
	}
	return b
}

// parseIndexLine reads a line of the index as it is written; old is a
// line of format 1, whose key and paths are not this format's.
func parseIndexLine(line []byte) (sum Summary, old, ok bool) {
	// One string of the whole line, whose fields are slices of it: every
	// run parses the latest line of every session, and a string per
	// field was most of what a listing allocated.
	return parseIndexText(string(line))
}

// parseIndexText is parseIndexLine of a line already a string: the
// fields of the summary are slices of it, nothing is allocated.
func parseIndexText(text string) (sum Summary, old, ok bool) {
	// Split into an array rather than a slice: nothing escapes.
	var fields [indexFields + 1]string
	n := 0
	for {
		i := strings.IndexByte(text, '\t')
		if n == len(fields) {
			return Summary{}, false, false // more fields than any format
		}
		if i < 0 {
			fields[n] = text
			n++
			break
		}
		fields[n], text = text[:i], text[i+1:]
		n++
	}
	if n < indexFields-1 || len(fields[0]) == 0 {
		return Summary{}, false, false
	}
	tokens, err1 := strconv.Atoi(fields[5])
	cost, err2 := strconv.ParseFloat(fields[6], 64)
	created, err3 := strconv.ParseInt(fields[7], 10, 64)
	updated, err4 := strconv.ParseInt(fields[8], 10, 64)
	if errors.Join(err1, err2, err3, err4) != nil {
		return Summary{}, false, false
	}
	// The id names a folder: one that is not a session's (../../x, a/b)
	// is not the store's, and acting on it would reach outside the store.
	// (The key names a lock file only through lockRel, which checks it.)
	if sessionName(fields[0]) != nil {
		return Summary{}, false, false
	}
	sum = Summary{ID: fields[0], Key: fields[1], Status: fields[2], Phase: fields[3],
		PauseReason: fields[4], Tokens: tokens, CostUSD: cost, Created: time.Unix(0, created),
		Updated: time.Unix(0, updated), Pipeline: fields[9], Spec: fields[10]}
	if sum.Status == statusCompleted && sum.PauseReason == byHand {
		sum.PauseReason, sum.ByHand = "", true
	}
	if n >= indexFields {
		sum.File = fields[11]
	}
	if n > indexFields {
		sum.ReplayOf = fields[12]
	}
	return sum, n < indexFields, true
}

// indexLineText is a line of the index as a warning quotes it: short, on
// one line.
func indexLineText(line []byte) string {
	text := strconv.Quote(string(line))
	if len(text) > 120 {
		text = text[:117] + "…"
	}
	return text
}

// portable is a summary as the index keeps it: its paths relative to the
// store's base.
func (s *Store) portable(sum Summary) Summary {
	sum.File, sum.Spec = s.Rel(sum.File), s.Rel(sum.Spec)
	return sum
}

// lockIndex waits for the index lock; unlock releases it.
func (s *Store) lockIndex() (unlock func(), err error) {
	_, unlock, err = s.lockIndexFile()
	return unlock, err
}

// lockIndexFile is lockIndex that gives the lock file too (its content
// is the sessions folder's sweep stamp: see swept.go).
func (s *Store) lockIndexFile() (*os.File, func(), error) {
	f, err := s.openFile(indexLockName, unix.O_RDWR|unix.O_CREAT, 0o600)
	if err != nil {
		return nil, nil, err
	}
	if err := waitLock(f); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	return f, func() { f.Close() }, nil
}

// index adds a summary to the index, unless the session's folder is gone
// (removed by clean meanwhile): ErrRemoved.
func (s *Store) index(summary Summary) error {
	return s.indexThen(summary, nil)
}

// indexThen is index that calls then (when not nil) with the lock file
// once the line is appended, under the lock.
func (s *Store) indexThen(summary Summary, then func(*os.File)) error {
	f, unlock, err := s.lockIndexFile()
	if err != nil {
		return err
	}
	defer unlock()
	if !s.isDir(sessionRel(summary.ID)) {
		return fmt.Errorf("session %s: %w", summary.ID, ErrRemoved)
	}
	if err := s.appendIndex(s.portable(summary).indexLine()); err != nil {
		return err
	}
	if then != nil {
		then(f)
	}
	return nil
}

// appendIndex appends one line to the index; the caller holds the index
// lock.
func (s *Store) appendIndex(line []byte) error {
	f, err := s.openFile(indexName, unix.O_RDWR|unix.O_CREAT|unix.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	end, err := wholeLines(f)
	if err != nil {
		return err
	}
	n, err := f.Write(line)
	if err != nil && n > 0 {
		if cutErr := f.Truncate(end); cutErr != nil {
			err = errors.Join(err, fmt.Errorf("cutting the part written: %w", cutErr))
		}
	}
	return err
}

// wholeLines cuts f after its last whole line, if anything follows it,
// and returns its length.
func wholeLines(f *os.File) (int64, error) {
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := info.Size()
	var last [1]byte
	if size == 0 {
		return 0, nil
	}
	if _, err := f.ReadAt(last[:], size-1); err != nil {
		return 0, err
	}
	if last[0] == '\n' {
		return size, nil
	}
	end := size
	var chunk [4096]byte
	for end > 0 {
		from := max(end-int64(len(chunk)), 0)
		buf := chunk[:end-from]
		if _, err := f.ReadAt(buf, from); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			end = from + int64(i) + 1
			break
		}
		end = from
	}
	if err := f.Truncate(end); err != nil {
		return 0, fmt.Errorf("cutting the torn last line of %s: %w", f.Name(), err)
	}
	return end, nil
}

// readIndex returns the latest summary of every session listed, oldest
// line first, without the removed ones, with absolute paths. A session
// whose latest line is of format 1 (written before paths were relative)
// takes its key and paths from its meta.json, as Find reads them; its
// next snapshot, or clean, writes it a line of this format.
func (s *Store) readIndex() ([]Summary, error) {
	content, err := s.readFile(indexName)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	latest := s.parseIndex(wholeLinesOf(content), 1)
	kept := make([]Summary, 0, len(latest))
	for _, l := range latest {
		if l.sum.Status != statusRemoved {
			kept = append(kept, s.listed(l))
		}
	}
	return kept, nil
}

// wholeLinesOf is content up to its last newline: a torn last line is
// not read.
func wholeLinesOf(content []byte) []byte {
	if i := bytes.LastIndexByte(content, '\n'); i >= 0 {
		return content[:i+1]
	}
	return nil // a torn line alone
}

// latestLine is the latest line of a session that could be parsed, as
// the index keeps it (paths relative to the store's base); old is a line
// of format 1.
type latestLine struct {
	sum   Summary
	old   bool
	first int // where the session's first line is, counted from the last
}

// parseIndex returns the latest line of each session in content (whole
// lines, the first of which is line number first), in the order of the
// sessions' first lines, removed sessions included.
func (s *Store) parseIndex(content []byte, first int) []latestLine {
	// The lines are read from the last: the first whole line met of a
	// session is its latest, and its earlier lines (one per snapshot)
	// are not parsed at all; a line that cannot be parsed leaves the
	// session to its line before. Every run lists the index.
	//
	// An entry per session: where its first line is (counted from the
	// last: the list keeps the order of the sessions' first lines), and
	// its latest line, once parsed (-1 before).
	type entry struct{ first, line int }
	count := bytes.Count(content, []byte{'\n'})
	// Sized for two lines a session (a run's start and end), rather than
	// grown from nothing: a listing's largest allocations.
	sessions := count/2 + 1
	latest := make(map[string]int, sessions) // session id -> its entry
	entries := make([]entry, 0, sessions)
	lines := make([]latestLine, 0, sessions)
	for n := 0; len(content) > 0; n++ {
		end := len(content) - 1 // its newline
		start := bytes.LastIndexByte(content[:end], '\n') + 1
		line := content[start:end]
		content = content[:start]
		id := line
		if tab := bytes.IndexByte(line, '\t'); tab >= 0 {
			id = line[:tab]
		}
		at, seen := latest[string(id)]
		if !seen {
			at = len(entries)
			latest[string(id)] = at
			entries = append(entries, entry{line: -1})
		}
		e := &entries[at]
		e.first = n
		if e.line >= 0 {
			continue
		}
		sum, isOld, ok := s.parseIndexLineAt(line, first-1+count-n)
		if !ok {
			continue
		}
		e.line = len(lines)
		lines = append(lines, latestLine{sum: sum, old: isOld})
	}
	// Each line is one session's: sorted in place, not copied (a store
	// of a few hundred sessions is read at every run).
	for _, e := range entries {
		if e.line >= 0 {
			lines[e.line].first = e.first
		}
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i].first > lines[j].first })
	return lines
}

// parseIndexLineAt parses line number of the index; a line pipeline did
// not write (a forged id such as ../../x, a field that is no number) is
// skipped, never acted on, and said once.
func (s *Store) parseIndexLineAt(line []byte, number int) (Summary, bool, bool) {
	return s.parseIndexTextAt(string(line), number)
}

// parseIndexTextAt is parseIndexLineAt of a line already a string.
func (s *Store) parseIndexTextAt(line string, number int) (Summary, bool, bool) {
	sum, isOld, ok := parseIndexText(line)
	if !ok {
		s.warnOnce(fmt.Sprintf("%s line %d", indexName, number)+string(line),
			"pipeline: warning: %s line %d is not a line of the sessions index (%s): skipped; remove it, or let pipeline clean rewrite the index without it\n",
			s.path(indexName), number, indexLineText([]byte(line)))
	}
	return sum, isOld, ok
}

// listed is a session's latest line as a listing gives it: its paths
// absolute. A session whose latest line is of format 1 (written before
// paths were relative) takes its key and paths from its meta.json, as
// Find reads them; its next snapshot, or clean, writes it a line of this
// format.
func (s *Store) listed(l latestLine) Summary {
	sum := l.sum
	sum.File, sum.Spec = s.Abs(sum.File), s.Abs(sum.Spec)
	if l.old {
		if meta, err := s.find(sum.ID); err == nil && meta.ID == sum.ID {
			sum.Key, sum.File, sum.Spec = meta.Key, meta.File, meta.Spec
		}
	}
	return sum
}

// List returns the latest summary of every session, newest first. It reads
// the index alone, so it stays fast with thousands of sessions: every
// session has a line from the moment it is created until it is removed.
// What this Store read of the index before is kept (see indexCache): a
// second listing reads only the lines appended since.
func (s *Store) List() ([]Summary, error) {
	out, err := s.listing.list(s)
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	return out, nil
}

// Remove deletes a session: its folder is renamed away and the index says
// so in one step under the index lock, then the folder is deleted. A
// session already gone (another clean) is ErrNotFound. If the index cannot
// say so (a full disk), the folder is put back and nothing changes.
func (s *Store) Remove(id string) error {
	if name(id) != nil || strings.HasPrefix(id, ".") {
		return fmt.Errorf("bad session id %q", id)
	}
	gone := sessionRel(removedPrefix + id)
	unlock, err := s.lockIndex()
	if err != nil {
		return err
	}
	if err := s.rename(sessionRel(id), gone); err != nil {
		unlock()
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w %q in %s", ErrNotFound, id, s.Root)
		}
		return err
	}
	if err := s.appendIndex(tombstone(id)); err != nil {
		if backErr := s.rename(gone, sessionRel(id)); backErr != nil {
			err = errors.Join(err, backErr)
		}
		unlock()
		return err
	}
	unlock()
	return s.removeAll(gone)
}

// RemoveUnfinished deletes the folders of sessions whose making was cut
// short, older than age, and finishes removals that were cut short.
func (s *Store) RemoveUnfinished(age time.Duration) (int, error) {
	names, err := s.readDirNames("sessions")
	if err != nil {
		return 0, err
	}
	removed := 0
	for _, n := range names {
		rel := sessionRel(n)
		switch {
		case strings.HasPrefix(n, newPrefix):
			if modified, err := s.modTime(rel); err != nil || time.Since(modified) <= age {
				continue
			}
			// An import of gigabytes may take longer: one whose owner lives
			// (see mkdirOwned) is left.
			f, err := s.openFile(rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
			if err != nil {
				continue
			}
			taken, err := flockNB(f)
			if err != nil || !taken {
				f.Close()
				continue
			}
			err = s.removeAll(rel)
			f.Close()
			if err != nil {
				return removed, err
			}
			removed++
			continue
		case strings.HasPrefix(n, removedPrefix):
			// Cut short between its rename and its tombstone, the index may
			// still list it: say it is gone first.
			if err := s.tombstone(strings.TrimPrefix(n, removedPrefix)); err != nil {
				return removed, err
			}
		default:
			continue
		}
		if err := s.removeAll(rel); err != nil {
			return removed, err
		}
		removed++
	}
	return removed, nil
}

func (s *Store) modTime(rel string) (time.Time, error) {
	f, err := s.openFile(rel, unix.O_RDONLY, 0)
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return time.Time{}, err
	}
	return info.ModTime(), nil
}

func (s *Store) tombstone(id string) error {
	unlock, err := s.lockIndex()
	if err != nil {
		return err
	}
	defer unlock()
	return s.appendIndex(tombstone(id))
}

// tombstone is the last line of a removed session. It has no paths, and
// keeps the fields of format 1: a pipeline of that format reading this
// index sees the session gone too.
func tombstone(id string) []byte {
	line := Summary{ID: id, Status: statusRemoved}.indexLine()
	return append(line[:bytes.LastIndexByte(line[:len(line)-1], '\t')], '\n')
}

// CompactIndex rewrites the index with one line per session still on
// disk, under the index lock: nothing appended meanwhile is lost. On a
// full disk the old index stays, whole.
func (s *Store) CompactIndex() error {
	unlock, err := s.lockIndex()
	if err != nil {
		return err
	}
	defer unlock()
	list, err := s.readIndex()
	if err != nil {
		return err
	}
	var b bytes.Buffer
	for _, sum := range list {
		if s.isDir(sessionRel(sum.ID)) {
			b.Write(s.portable(sum).indexLine())
		}
	}
	if err := s.writeAtomic(indexName, b.Bytes(), true); err != nil {
		return err
	}
	// Every key's digest (see OpenOf) named the index just replaced, and
	// none counts any more: they go, rather than stay for pipelines no
	// longer run. A run writes its own again as it reads.
	return s.removeAll(keysFolder)
}
