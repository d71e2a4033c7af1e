package search

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pipeline-dev/pipeline/engine/store"
)

// The kinds of documents.
const (
	KindTranscript = "transcript"
	KindPrompt     = "prompt"
	KindNote       = "note"
	KindWorkingSet = "working-set"
)

// A document of a transcript or prompt is up to chunkLines lines or
// chunkBytes bytes of the file (a longer line is a document of its own):
// small enough that BM25 scores the passage, not the whole file, and
// that the best line is found fast; large enough that a gigabyte is a
// few hundred thousand rows.
const (
	chunkLines = 32
	chunkBytes = 4 << 10
)

// batchBytes is how much one transaction indexes (of one file or of
// several): what a kill in the middle loses, and how long another search
// waits for the write lock. (A variable for the tests.)
var batchBytes int64 = 32 << 20

// Stats says what an Update did.
type Stats struct {
	// Sessions is the number of sessions in the store.
	Sessions int `json:"sessions"`
	// Files is the number of files of which something was indexed.
	Files int `json:"files"`
	// Chunks is the number of documents added: chunks of transcripts and
	// prompts, notes, working-set items.
	Chunks int `json:"chunks"`
	// Bytes is the number of bytes of transcripts and prompts indexed.
	Bytes int64 `json:"bytes"`
	// Removed is the number of sessions removed from the index (no longer
	// in the store).
	Removed int `json:"removed_sessions"`
}

func (s *Stats) add(o Stats) {
	s.Files += o.Files
	s.Chunks += o.Chunks
	s.Bytes += o.Bytes
	s.Removed += o.Removed
}

// fileRow is how far a file was indexed.
type fileRow struct {
	id            int64
	size, mtime   int64
	inode         uint64
	offset, lines int64
	// places is the state of the file's placer after its lines indexed
	// (placer.go).
	places []byte
}

// same tells whether the file is as the row says it was when it was
// indexed to its end (a row left between two batches has size -1).
func (r fileRow) same(f store.SessionFile) bool {
	return r.size == f.Size && r.mtime == f.ModTime.UnixNano() && r.inode == f.Inode
}

// Update indexes what is new in the store: the bytes appended to each
// transcript and prompt file since the last update, the notes and
// working sets of the sessions whose snapshot changed, the sessions that
// appeared; and removes the sessions that are gone. The files are
// indexed into the index's databases at once (see shardCount).
func (ix *Index) Update(ctx context.Context) (Stats, error) {
	unlock, err := ix.lockWriter()
	if err != nil {
		return Stats{}, err
	}
	defer unlock()
	stats, err := ix.update(ctx)
	if err != nil {
		for _, s := range ix.shards {
			s.rollback()
		}
		return stats, err
	}
	for _, s := range ix.shards {
		if err := s.commit(); err != nil {
			return stats, err
		}
	}
	return stats, nil
}

// writerName is the file that one Update at a time holds (an exclusive
// flock): which database a new file goes to is decided from what each
// holds, which another update must not change meanwhile (a file would be
// indexed in two). A second search waits for the first's update, then
// finds nothing new to index; searches that only read do not wait.
const writerName = "index.writer"

// lockWriter takes index.writer, waiting for an update that holds it.
func (ix *Index) lockWriter() (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(ix.dir, writerName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the search index's writer lock: %w", err)
	}
	if err := flock(f, unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}

// knownFile is a file's row and the database it is in.
type knownFile struct {
	shard int
	row   fileRow
}

// fileJob is a file with something new to index, and the database it
// goes to.
type fileJob struct {
	session string
	file    store.SessionFile
	final   bool
	shard   int
}

func (ix *Index) update(ctx context.Context) (Stats, error) {
	var stats Stats
	list, err := ix.st.List()
	if err != nil {
		return stats, err
	}
	stats.Sessions = len(list)
	known, load, err := ix.knownFiles(ctx)
	if err != nil {
		return stats, err
	}
	live := make(map[string]bool, len(list))
	for _, s := range list {
		live[s.ID] = true
	}
	for id := range known {
		if !live[id] {
			for _, s := range ix.shards {
				if err := s.removeSession(ctx, id); err != nil {
					return stats, err
				}
			}
			stats.Removed++
		}
	}
	jobs, snapshots, err := ix.plan(ctx, list, known, load)
	if err != nil {
		return stats, err
	}
	got, err := ix.indexFiles(ctx, jobs)
	stats.add(got)
	if err != nil {
		return stats, err
	}
	for _, j := range snapshots {
		got, err := ix.shards[max(j.shard, 0)].indexState(ctx, j.session)
		stats.add(got)
		if err := skipGone(err); err != nil {
			return stats, err
		}
	}
	return stats, nil
}

// plan lists, per database, the files of the sessions of list with
// something new to index, a new file given to the database that holds
// the fewest bytes; and the sessions whose snapshot changed.
func (ix *Index) plan(ctx context.Context, list []store.Summary, known map[string]map[string]knownFile, load []int64) (jobs [][]fileJob, snapshots []fileJob, err error) {
	jobs = make([][]fileJob, len(ix.shards))
	// The snapshots come after the transcripts: indexing one deletes its
	// documents from before, and a statement that deletes from the
	// full-text index makes FTS5 write what it holds in memory as a
	// segment; between transcripts that would be a small segment per
	// session, to merge.
	for _, s := range list {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		// A session that is not running writes no more: its files' last
		// lines are whole, line break or not.
		changed, snapshot, err := ix.changedFiles(ctx, s.ID, known[s.ID], s.Status != "running")
		if err != nil {
			return nil, nil, err
		}
		for _, j := range changed {
			if j.shard < 0 {
				j.shard = lightest(load)
			}
			load[j.shard] += j.file.Size - known[s.ID][j.file.Rel].row.offset
			jobs[j.shard] = append(jobs[j.shard], j)
		}
		if snapshot != nil {
			snapshots = append(snapshots, *snapshot)
		}
	}
	return jobs, snapshots, nil
}

// lightest is the database that holds the fewest bytes: where a new file
// goes, so that the next update of many files fills each as much.
func lightest(load []int64) int {
	best := 0
	for i, l := range load {
		if l < load[best] {
			best = i
		}
	}
	return best
}

// knownFiles reads what each database indexed, per session and file, and
// how many bytes of files each holds.
func (ix *Index) knownFiles(ctx context.Context) (map[string]map[string]knownFile, []int64, error) {
	known := map[string]map[string]knownFile{}
	load := make([]int64, len(ix.shards))
	for i, s := range ix.shards {
		rows, err := s.knownFiles(ctx)
		if err != nil {
			return nil, nil, err
		}
		for session, files := range rows {
			if known[session] == nil {
				known[session] = map[string]knownFile{}
			}
			for rel, r := range files {
				// A file in two databases (none is given to a second one
				// while it is in a first: see lockWriter) is kept in the
				// first alone.
				if _, twice := known[session][rel]; twice {
					if err := s.removeFile(ctx, r.id); err != nil {
						return nil, nil, err
					}
					continue
				}
				known[session][rel] = knownFile{i, r}
				load[i] += r.offset
			}
		}
	}
	return known, load, nil
}

// indexFiles indexes each database's files, the databases at once; the
// first error stops them all.
func (ix *Index) indexFiles(ctx context.Context, jobs [][]fileJob) (Stats, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stats := make([]Stats, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, list := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, j := range list {
				got, err := ix.shards[i].indexStepFile(ctx, j.session, j.file, j.final)
				stats[i].add(got)
				if err := skipGone(err); err != nil {
					errs[i] = err
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	var total Stats
	for _, s := range stats {
		total.add(s)
	}
	// The error that stopped the others, not theirs (canceled).
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return total, err
		}
	}
	return total, errors.Join(errs...)
}

// knownFiles reads the files table: what was indexed, per session and
// file. It is read outside a transaction, to find what changed; each
// change is made in a transaction that reads its row again.
func (s *shard) knownFiles(ctx context.Context) (map[string]map[string]fileRow, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, session, rel, size, mtime, inode, offset, lines FROM files`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	known := map[string]map[string]fileRow{}
	for rows.Next() {
		var (
			r            fileRow
			session, rel string
		)
		if err := rows.Scan(&r.id, &session, &rel, &r.size, &r.mtime, &r.inode, &r.offset, &r.lines); err != nil {
			return nil, err
		}
		if known[session] == nil {
			known[session] = map[string]fileRow{}
		}
		known[session][rel] = r
	}
	return known, rows.Err()
}

func (s *shard) removeSession(ctx context.Context, id string) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM docs WHERE session = ?`, id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM files WHERE session = ?`, id)
		return err
	})
}

// changedFiles lists one session's transcripts and prompts with
// something new to index (with the database each is in, -1 for a new
// one), and its snapshot if it changed; it removes from the index the
// files the session no longer has.
func (ix *Index) changedFiles(ctx context.Context, id string, known map[string]knownFile, final bool) (changed []fileJob, snapshot *fileJob, err error) {
	files, err := ix.st.StepFiles(id)
	if err != nil {
		return nil, nil, skipGone(err)
	}
	state, err := ix.st.StatSnapshot(id)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, nil, skipGone(err)
	default:
		files = append(files, state)
	}
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		seen[f.Rel] = true
		job := fileJob{session: id, file: f, final: final, shard: -1}
		k, ok := known[f.Rel]
		if ok {
			if k.row.same(f) {
				continue
			}
			job.shard = k.shard
		}
		if f.Rel == store.StateFile {
			snapshot = &job
			continue
		}
		changed = append(changed, job)
	}
	for rel, k := range known {
		if !seen[rel] {
			if err := ix.shards[k.shard].removeFile(ctx, k.row.id); err != nil {
				return nil, nil, err
			}
		}
	}
	return changed, snapshot, nil
}

// skipGone makes a file (or session) removed while it was being indexed
// no error: the next update removes it from the index.
func skipGone(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

func (s *shard) removeFile(ctx context.Context, id int64) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM docs WHERE file = ?`, id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM files WHERE id = ?`, id)
		return err
	})
}

// inTx runs fn in the update's write transaction, begun if none is
// (BEGIN IMMEDIATE: another search indexing waits, up to the busy
// timeout). The transaction spans files: it commits once batchBytes
// were indexed in it (or the update ends), so that FTS5 writes its
// segments at hashsize, not one per file, and merges fewer. An error
// rolls it back: what it held is indexed again by the next update.
func (s *shard) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if s.tx == nil {
		// Not ended with ctx (database/sql would roll it back when ctx
		// is done, under the other statements): an error rolls it back.
		tx, err := s.db.BeginTx(context.WithoutCancel(ctx), nil)
		if err != nil {
			return err
		}
		s.tx = tx
	}
	if err := fn(s.tx); err != nil {
		s.rollback()
		return err
	}
	if s.filled >= batchBytes {
		return s.commit()
	}
	return nil
}

// commit commits the update's transaction, if one is open.
func (s *shard) commit() error {
	if s.tx == nil {
		return nil
	}
	err := s.tx.Commit()
	s.tx, s.filled = nil, 0
	return err
}

func (s *shard) rollback() {
	if s.tx != nil {
		s.tx.Rollback()
	}
	s.tx, s.filled = nil, 0
}

// fileRowTx reads (making it, empty) the row of a file in a transaction.
func fileRowTx(ctx context.Context, tx *sql.Tx, session, rel string) (fileRow, error) {
	var r fileRow
	err := tx.QueryRowContext(ctx, `SELECT id, size, mtime, inode, offset, lines, places FROM files WHERE session = ? AND rel = ?`,
		session, rel).Scan(&r.id, &r.size, &r.mtime, &r.inode, &r.offset, &r.lines, &r.places)
	if errors.Is(err, sql.ErrNoRows) {
		res, err := tx.ExecContext(ctx, `INSERT INTO files(session, rel, size, mtime, inode, offset, lines) VALUES(?, ?, 0, 0, 0, 0, 0)`,
			session, rel)
		if err != nil {
			return r, err
		}
		r.id, err = res.LastInsertId()
		return r, err
	}
	return r, err
}

func saveFileRow(ctx context.Context, tx *sql.Tx, r fileRow) error {
	_, err := tx.ExecContext(ctx, `UPDATE files SET size = ?, mtime = ?, inode = ?, offset = ?, lines = ?, places = ? WHERE id = ?`,
		r.size, r.mtime, r.inode, r.offset, r.lines, r.places, r.id)
	return err
}

// statOf is the size, time and inode of an open file.
func statOf(f *os.File) (size, mtime int64, inode uint64, err error) {
	info, err := f.Stat()
	if err != nil {
		return 0, 0, 0, err
	}
	if sys, ok := info.Sys().(*syscall.Stat_t); ok {
		inode = sys.Ino
	}
	return info.Size(), info.ModTime().UnixNano(), inode, nil
}

const insertDoc = `INSERT INTO docs(file, session, phase, attempt, step, kind, section, item, line, at, offset, length, body, places)
	VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

const insertText = `INSERT INTO text(rowid, body) VALUES(?, ?)`

// inserter adds documents in a transaction: a row of docs, then its text
// to the full-text index.
type inserter struct{ doc, text *sql.Stmt }

func newInserter(ctx context.Context, tx *sql.Tx) (*inserter, error) {
	doc, err := tx.PrepareContext(ctx, insertDoc)
	if err != nil {
		return nil, err
	}
	text, err := tx.PrepareContext(ctx, insertText)
	if err != nil {
		doc.Close()
		return nil, err
	}
	return &inserter{doc: doc, text: text}, nil
}

// document is one row of docs, with the text to index. A chunk of a
// transcript or prompt keeps where it is in its file (offset, length)
// and not its text, which is read from the file again for a hit; a note
// or working-set item keeps its text (stored), small, from a snapshot
// that is rewritten.
type document struct {
	file                int64
	session, phase      string
	attempt             int
	step, kind, section string
	item                int
	line, at            int64
	offset, length      int64
	stored              []byte
	// places are the places of a transcript chunk's lines
	// (chunkPlaces.encode); nil for any other document.
	places []byte
}

func (in *inserter) add(ctx context.Context, d document, body []byte) error {
	res, err := in.doc.ExecContext(ctx, d.file, d.session, d.phase, d.attempt, d.step, d.kind, d.section, d.item,
		d.line, d.at, d.offset, d.length, string(d.stored), d.places)
	if err != nil {
		return err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return err
	}
	_, err = in.text.ExecContext(ctx, id, body)
	return err
}

func (in *inserter) close() {
	in.doc.Close()
	in.text.Close()
}

// indexStepFile indexes the whole lines of a transcript or prompt file
// past what was indexed of it, batchBytes per transaction; final: its
// last line too, with or without its line break.
func (s *shard) indexStepFile(ctx context.Context, session string, sf store.SessionFile, final bool) (Stats, error) {
	var stats Stats
	f, err := s.st.OpenSessionFile(session, sf.Rel)
	if err != nil {
		return stats, err
	}
	defer f.Close()
	size, mtime, inode, err := statOf(f)
	if err != nil {
		return stats, err
	}
	kind := KindTranscript
	if sf.Prompt {
		kind = KindPrompt
	}
	indexedAny := false
	for {
		var done bool
		err := s.inTx(ctx, func(tx *sql.Tx) error {
			row, err := fileRowTx(ctx, tx, session, sf.Rel)
			if err != nil {
				return err
			}
			if row.offset > 0 && (row.inode != inode || size < row.offset) {
				// Replaced, or cut: all of it again. (Only then: the
				// statement would make FTS5 write a segment; a new file
				// has no documents.)
				if _, err := tx.ExecContext(ctx, `DELETE FROM docs WHERE file = ?`, row.id); err != nil {
					return err
				}
				row.offset, row.lines, row.places = 0, 0, nil
			}
			row.size, row.mtime, row.inode = size, mtime, inode
			if row.offset >= size {
				done = true
				return saveFileRow(ctx, tx, row)
			}
			insert, err := newInserter(ctx, tx)
			if err != nil {
				return err
			}
			defer insert.close()
			doc := document{file: row.id, session: session, phase: sf.Phase, attempt: sf.Attempt, step: sf.Step, kind: kind, at: mtime}
			c := chunker{final: final, line: row.lines + 1, offset: row.offset}
			if kind == KindTranscript {
				if c.placer, err = resumePlacer(f, row); err != nil {
					return err
				}
			}
			read, finished, err := s.readChunks(func(emit emitFunc) (int64, bool, error) {
				c.emit = emit
				return c.read(io.NewSectionReader(f, row.offset, size-row.offset), batchBytes-s.filled)
			}, func(ch chunk) error {
				stats.Chunks++
				doc.line, doc.offset, doc.length, doc.places = ch.line, ch.offset, ch.length, ch.places
				return insert.add(ctx, doc, ch.body)
			})
			if err != nil {
				return err
			}
			s.filled += read
			row.offset += read
			row.lines = c.line - 1
			if c.placer != nil {
				row.places = keptState(c.placer, final)
			}
			stats.Bytes += read
			indexedAny = indexedAny || read > 0
			done = finished
			if !finished {
				// Not all of it yet: a search killed before the next
				// batch leaves a row that is not the file's (see
				// fileRow.same), and the next one goes on from here
				// rather than take the file for indexed.
				row.size = -1
			}
			return saveFileRow(ctx, tx, row)
		})
		if err != nil {
			return stats, err
		}
		if done {
			break
		}
	}
	if indexedAny {
		stats.Files++
	}
	return stats, nil
}

// emitFunc takes a document of a file: the number of its first line, the
// bytes of the file it is, its text (which is the caller's only until
// emitFunc returns) and its lines' places (a transcript's; the callee's).
type emitFunc func(line, offset, length int64, body, places []byte) error

// chunk is a document of a file on its way from the chunker to the
// index.
type chunk struct {
	line, offset, length int64
	body, places         []byte
}

// readChunks runs read, handing each document it emits to add: on a
// goroutine of its own (readAhead) when a core would be idle otherwise,
// else on this one. With as many databases filled at once as there are
// cores (GOMAXPROCS), a reader beside each only makes the scheduler
// take turns among twice as many goroutines as cores: in the profile of
// two databases indexing 268 MB with a reader each, the goroutines'
// preemption (runtime.asyncPreempt) was 19 % of the CPU, in one
// database's 11 %.
func (s *shard) readChunks(read func(emit emitFunc) (n int64, finished bool, err error), add func(chunk) error) (int64, bool, error) {
	if s.ahead {
		return readAhead(read, add)
	}
	return read(func(line, offset, length int64, body, places []byte) error {
		return add(chunk{line, offset, length, body, places})
	})
}

// readAhead runs read (a chunker's: the file read and its text
// extracted) on a goroutine of its own, and hands each document it
// emits to add on this one: the next documents are read while the index
// takes this one, on a second core. An error of add stops read; read's
// results are returned when it has stopped.
func readAhead(read func(emit emitFunc) (n int64, finished bool, err error), add func(chunk) error) (int64, bool, error) {
	const ahead = 32
	chunks := make(chan chunk, ahead)
	free := make(chan []byte, ahead+2) // the texts' buffers, again
	stop := make(chan struct{})
	type result struct {
		n        int64
		finished bool
		err      error
	}
	done := make(chan result, 1)
	go func() {
		n, finished, err := read(func(line, offset, length int64, body, places []byte) error {
			var buf []byte
			select {
			case buf = <-free:
			default:
			}
			select {
			case chunks <- chunk{line, offset, length, append(buf[:0], body...), places}:
				return nil
			case <-stop:
				return errStopped
			}
		})
		close(chunks)
		done <- result{n, finished, err}
	}()
	var addErr error
	for ch := range chunks {
		if addErr == nil {
			if addErr = add(ch); addErr != nil {
				close(stop)
			}
		}
		select {
		case free <- ch.body:
		default:
		}
	}
	r := <-done
	if addErr != nil {
		return r.n, r.finished, addErr
	}
	return r.n, r.finished, r.err
}

// errStopped stops a chunker whose documents are no longer taken.
var errStopped = errors.New("stopped")

// chunker groups whole lines into documents and hands each to emit with
// the number of its first line and the bytes of the file it is.
type chunker struct {
	emit   emitFunc
	final  bool  // the file is written no more: a last line without its break is whole
	line   int64 // the number of the next line
	offset int64 // in the file, of the next line
	x      extractor
	body   []byte
	lines  int   // in body
	bytes  int   // of the file, in body
	first  int64 // the line body starts with
	start  int64 // the offset body starts at
	// placer places a transcript's lines in their turns (nil for a
	// prompt); places are those of body's lines.
	placer *placer
	places chunkPlaces
}

// read reads whole lines from r until at least limit bytes were read, or
// r ends: it returns how many bytes it took (up to the end of the last
// whole line) and whether it reached r's end. A last line without its
// line break is left for later (it is being written), unless final.
func (c *chunker) read(r io.Reader, limit int64) (n int64, finished bool, err error) {
	br := bufio.NewReaderSize(r, 256<<10)
	var long []byte
	for n < limit {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: gather it.
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if errors.Is(err, io.EOF) {
			if c.final && len(line) > 0 {
				if err := c.add(line, false); err != nil {
					return n, true, err
				}
				n += int64(len(line))
			}
			return n, true, c.flush()
		}
		if err != nil {
			return n, false, err
		}
		if err := c.add(line, true); err != nil {
			return n, false, err
		}
		n += int64(len(line))
	}
	if err := c.flush(); err != nil {
		return n, false, err
	}
	_, err = br.Peek(1)
	return n, errors.Is(err, io.EOF), nil
}

// add takes one line, with its line break if broken.
func (c *chunker) add(line []byte, broken bool) error {
	if c.lines > 0 && (c.lines == chunkLines || c.bytes+len(line) > chunkBytes) {
		if err := c.flush(); err != nil {
			return err
		}
	}
	if c.lines == 0 {
		c.first, c.start = c.line, c.offset
	} else {
		c.body = append(c.body, '\n')
	}
	text := line
	if broken {
		text = line[:len(line)-1]
	}
	c.place(text)
	c.body = c.x.appendLineText(c.body, trimCR(text))
	c.lines++
	c.bytes += len(line)
	c.line++
	c.offset += int64(len(line))
	return nil
}

func trimCR(text []byte) []byte {
	if len(text) > 0 && text[len(text)-1] == '\r' {
		return text[:len(text)-1]
	}
	return text
}

// place finds the place of the chunk's next line, a transcript's.
func (c *chunker) place(text []byte) {
	if c.placer == nil {
		return
	}
	if c.lines == 0 {
		c.places = chunkPlaces{start: c.placer.Turn, points: c.places.points[:0]}
	}
	was := c.placer.Turn
	turn, call, tool := c.placer.line(text)
	if turn != was || call != 0 || tool != "" {
		c.places.points = append(c.places.points, Place{Line: c.lines, Turn: turn, Call: call, Tool: tool})
	}
}

func (c *chunker) flush() error {
	if c.lines == 0 {
		return nil
	}
	var places []byte
	if c.placer != nil {
		places = c.places.encode(nil)
	}
	err := c.emit(c.first, c.start, int64(c.bytes), c.body, places)
	c.body, c.lines, c.bytes = c.body[:0], 0, 0
	return err
}

// chunkText is the indexed text of a chunk's bytes, as the chunker made
// it: each line's text (extract.go), one line per line.
func chunkText(raw []byte) []byte {
	var (
		x   extractor
		out []byte
	)
	for i := 0; len(raw) > 0; i++ {
		line, rest, _ := bytes.Cut(raw, []byte{'\n'})
		if i > 0 {
			out = append(out, '\n')
		}
		out = x.appendLineText(out, trimCR(line))
		raw = rest
	}
	return out
}

// snapshotState is what the index reads of a session's snapshot: the
// phases' notes and summaries, and the working set. It is decoded here,
// not with the engine's types, so that a field the engine adds or the
// working set's shape as it lands changes nothing here.
type snapshotState struct {
	State struct {
		Phases []struct {
			Name    string    `json:"name"`
			Notes   []string  `json:"notes"`
			Summary string    `json:"summary"`
			Started time.Time `json:"started"`
			Ended   time.Time `json:"ended"`
		} `json:"phases"`
		WorkingSet *workingSet `json:"working_set"`
	} `json:"state"`
}

// workingSet is the working set as the engine writes it in the state.
type workingSet struct {
	Summary      []workingItem `json:"summary"`
	PinnedFacts  []workingItem `json:"pinned_facts"`
	Decisions    []workingItem `json:"decisions"`
	OpenTasks    []workingItem `json:"open_tasks"`
	DoneTasks    []workingItem `json:"done_tasks"`
	FilesTouched []struct {
		Path  string    `json:"path"`
		Phase string    `json:"phase"`
		At    time.Time `json:"at"`
	} `json:"files_touched"`
}

type workingItem struct {
	ID     int       `json:"id"`
	Text   string    `json:"text"`
	Phase  string    `json:"phase"`
	At     time.Time `json:"at"`
	Source string    `json:"source"`
}

// stateDoc is one document from a snapshot.
type stateDoc struct {
	kind, section, phase, body string
	item                       int
	at                         time.Time
}

// stateDocs lists the documents of a snapshot. A note has no time of its
// own: noted is when the index first saw it (or the snapshot's time).
func stateDocs(content []byte) ([]stateDoc, error) {
	var snap snapshotState
	if err := json.Unmarshal(content, &snap); err != nil {
		return nil, err
	}
	var docs []stateDoc
	for _, p := range snap.State.Phases {
		for i, n := range p.Notes {
			docs = append(docs, stateDoc{kind: KindNote, section: "human", phase: p.Name, item: i + 1, body: n})
		}
		if p.Summary != "" {
			docs = append(docs, stateDoc{kind: KindNote, section: "summary", phase: p.Name, body: p.Summary, at: p.Ended})
		}
	}
	if ws := snap.State.WorkingSet; ws != nil {
		for _, sec := range []struct {
			name  string
			items []workingItem
		}{{"summary", ws.Summary}, {"pinned_facts", ws.PinnedFacts}, {"decisions", ws.Decisions},
			{"open_tasks", ws.OpenTasks}, {"done_tasks", ws.DoneTasks}} {
			for _, it := range sec.items {
				docs = append(docs, stateDoc{kind: KindWorkingSet, section: sec.name, phase: it.Phase, item: it.ID, body: it.Text, at: it.At})
			}
		}
		for _, f := range ws.FilesTouched {
			docs = append(docs, stateDoc{kind: KindWorkingSet, section: "files_touched", phase: f.Phase, body: f.Path, at: f.At})
		}
	}
	return docs, nil
}

// indexState indexes a session's notes, phase summaries and working set
// again from its snapshot, in the update's transaction. A snapshot that
// cannot be read (of a format this pipeline does not read) indexes
// nothing, until it changes.
func (s *shard) indexState(ctx context.Context, session string) (Stats, error) {
	var stats Stats
	// state.json, or the log whose last stop carries the state.
	file, content, err := s.st.ReadSnapshotFile(session)
	if err != nil {
		return stats, err
	}
	size, mtime, inode := file.Size, file.ModTime.UnixNano(), file.Inode
	docs, _ := stateDocs(content)
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		row, err := fileRowTx(ctx, tx, session, store.StateFile)
		if err != nil {
			return err
		}
		if row.size == size && row.mtime == mtime && row.inode == inode {
			return nil // another search indexed it meanwhile
		}
		// A note keeps the time it was first indexed at.
		noted := map[string]int64{}
		rows, err := tx.QueryContext(ctx, `SELECT section, phase, body, at FROM docs WHERE file = ? AND kind = ?`, row.id, KindNote)
		if err != nil {
			return err
		}
		for rows.Next() {
			var section, phase, body string
			var at int64
			if err := rows.Scan(&section, &phase, &body, &at); err != nil {
				rows.Close()
				return err
			}
			noted[section+"\x00"+phase+"\x00"+body] = at
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM docs WHERE file = ?`, row.id); err != nil {
			return err
		}
		insert, err := newInserter(ctx, tx)
		if err != nil {
			return err
		}
		defer insert.close()
		for _, d := range docs {
			at := mtime
			if !d.at.IsZero() {
				at = d.at.UnixNano()
			}
			if was, ok := noted[d.section+"\x00"+d.phase+"\x00"+d.body]; ok && d.kind == KindNote && d.at.IsZero() {
				at = was
			}
			body := appendPlain(nil, []byte(d.body))
			doc := document{file: row.id, session: session, phase: d.phase, kind: d.kind, section: d.section, item: d.item, at: at, stored: body}
			if err := insert.add(ctx, doc, body); err != nil {
				return err
			}
			stats.Chunks++
		}
		row.size, row.mtime, row.inode = size, mtime, inode
		return saveFileRow(ctx, tx, row)
	})
	if err == nil {
		stats.Files++
	}
	return stats, err
}

// Count reports how many documents and files the index holds.
func (ix *Index) Count(ctx context.Context) (docs, files int, err error) {
	for _, s := range ix.shards {
		var d, f int
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM docs`).Scan(&d); err != nil {
			return 0, 0, err
		}
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM files`).Scan(&f); err != nil {
			return 0, 0, err
		}
		docs, files = docs+d, files+f
	}
	return docs, files, nil
}
