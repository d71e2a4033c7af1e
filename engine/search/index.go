package search

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/pipeline-dev/pipeline/engine/store"
)

// schemaVersion is the layout of index.db. An index of another version is
// rebuilt, never misread: it is a cache of the sessions.
const schemaVersion = "4"

const (
	// FolderName is the index's folder in the store's folder.
	FolderName = "search"
	// FileName is the index's database in its folder.
	FileName = "index.db"
	// asideSuffix names the copy of a corrupt index kept for a look.
	asideSuffix = ".corrupt"
)

// pageSize is the page size of a new index.db: a page holds one of FTS5's
// blobs of pgsz bytes (see schema).
const pageSize = 16384

// busyTimeoutMS is how long a search waits for another one that is
// indexing (each holds the write lock for one file, or 32 MiB of one).
const busyTimeoutMS = 60000

// schema is the layout of index.db. files holds how far each file of
// each session was indexed; docs the documents (a chunk of lines of a
// transcript or prompt, a note, an item of a working set) with where they
// come from; text the full-text index over them.
//
// text is contentless: the index keeps each text once, where the store
// keeps it. A chunk of a transcript or prompt is the bytes [offset,
// offset+length) of its file, read again (and its text extracted again)
// for the few hits a search shows; only a note's or working-set item's
// text, from a snapshot that is rewritten, is kept in docs.body.
// contentless_delete lets a document leave the index by its rowid alone.
//
// A transcript chunk's row keeps its lines' places in their step (turn,
// tool call: docs.places), and its file's row where the placer left off
// (files.places): a search shows a hit's turn without rendering the
// transcript (placer.go).
//
// FTS5 keeps what it indexes in memory up to hashsize before it writes a
// segment, and merges segments of a size automerge at a time (crisismerge
// at most of one size). Adding a token to that memory (a hash lookup, a
// cache miss or two) is about half the indexing time whatever its size;
// what the size decides is how often segments are written and merged,
// which at a gigabyte is another third: 8 MiB rather than 2 writes a
// quarter as many segments, and merges each byte less often. With two
// databases filled at once (shardCount) each has half (hashBytes): with
// 8 MiB each the first search of 268 MB peaked at 111 MiB, with 4 at
// 86–92 MiB (one database of 8 MiB: 79–80 MiB); FTS5's hash takes about
// two and a half times its hashsize.
// FTS5 writes a segment's leaves as blobs of pgsz bytes, one to a page
// of the database (page_size, set when it is made: see open): 16 KB
// rather than 4 makes a quarter as many rows, pages and writes. In all,
// 7–13 % less CPU to index 1 GB. Merging 16 segments at once rather
// than 4 merges each byte half as often, at no cost a search sees (it
// reads a few more segments). A document is added to text by
// its own statement, not by a trigger on docs: a statement that needs a
// savepoint (a trigger's, a delete of many rows) makes FTS5 write a
// segment of what it holds.
//
// An index made by an earlier pipeline with 4 KB pages, 2 MiB and blobs
// of 4050 bytes is read and updated as it is (the layout is not part of
// the schema version): only its first build was slower.
const schema = `
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE files(
	id      INTEGER PRIMARY KEY,
	session TEXT NOT NULL,
	rel     TEXT NOT NULL,
	size    INTEGER NOT NULL,
	mtime   INTEGER NOT NULL,
	inode   INTEGER NOT NULL,
	offset  INTEGER NOT NULL,
	lines   INTEGER NOT NULL,
	places  BLOB,
	UNIQUE(session, rel));
CREATE TABLE docs(
	id      INTEGER PRIMARY KEY,
	file    INTEGER NOT NULL,
	session TEXT NOT NULL,
	phase   TEXT NOT NULL,
	attempt INTEGER NOT NULL,
	step    TEXT NOT NULL,
	kind    TEXT NOT NULL,
	section TEXT NOT NULL,
	item    INTEGER NOT NULL,
	line    INTEGER NOT NULL,
	at      INTEGER NOT NULL,
	offset  INTEGER NOT NULL,
	length  INTEGER NOT NULL,
	body    TEXT NOT NULL,
	places  BLOB);
CREATE INDEX docs_file ON docs(file);
CREATE INDEX docs_session ON docs(session);
CREATE VIRTUAL TABLE text USING fts5(body, content='', contentless_delete=1,
	tokenize='unicode61 remove_diacritics 2');
CREATE TRIGGER docs_removed AFTER DELETE ON docs BEGIN
	DELETE FROM text WHERE rowid = old.id;
END;
INSERT INTO text(text, rank) VALUES('pgsz', 16000);
INSERT INTO text(text, rank) VALUES('automerge', 16);
INSERT INTO text(text, rank) VALUES('crisismerge', 64);
INSERT INTO meta(key, value) VALUES('schema', '` + schemaVersion + `');
`

// shardCount is how many databases a new index is split into: each
// holds the files given to it (their rows, documents and full-text
// index), and an update fills them at once, each on a goroutine and
// connection of its own (FTS5 adds a document's tokens on one thread:
// one database indexed 1 GB on 1.3 cores). A search asks each and
// merges their best. Two where there are two cores or more, unless
// DatabasesEnv says otherwise: measured quiet (load 0.8–1.4, 1074 MB),
// two indexed at 54–63 MB/s against one's 48, for 15 % more CPU, and
// answered 300 queries at p50 28 ms against 31 (phrases 36 against 40);
// on the same 2-core machine busy (load 10–29) two took longer than one
// (see README, Indexing rate). One core: one. (A variable for the tests.)
var shardCount = databasesFromEnv()

// DatabasesEnv, set to a number from 1 to 8, is how many databases a
// search splits a new index into (see shardCount): 1 on a machine whose
// cores are busy with other work. An index split otherwise before is
// read as it is: a file's row and documents are in one database; one
// found in two is kept in the first.
const DatabasesEnv = "PIPELINE_SEARCH_DATABASES"

func databasesFromEnv() int {
	if n, err := strconv.Atoi(os.Getenv(DatabasesEnv)); err == nil && n >= 1 && n <= 8 {
		return n
	}
	return min(2, runtime.NumCPU())
}

// hashBytes is FTS5's pending terms (hashsize, see schema) of the whole
// index, shared among its databases; cacheKiB its page cache, 4 MiB for
// one database, 1 MiB each for more (see open).
const (
	hashBytes = 8 << 20
	cacheKiB  = 4096
)

// shardFile is the name of shard i's database in the index's folder:
// index.db, then index.1.db...
func shardFile(i int) string {
	if i == 0 {
		return FileName
	}
	return fmt.Sprintf("index.%d.db", i)
}

// Paths are the databases of the index of the store at root that are
// there (see shardCount), the first at Path(root) whether it is or not.
func Paths(root string) []string {
	paths := []string{Path(root)}
	for i := 1; i < 8; i++ {
		path := filepath.Join(root, FolderName, shardFile(i))
		if _, err := os.Lstat(path); err != nil {
			break
		}
		paths = append(paths, path)
	}
	return paths
}

// Index is the search index of one store, open.
type Index struct {
	shards []*shard
	st     *store.Store
	dir    string // the index's folder
	warn   io.Writer
	// users is the index's users file, held shared while the index is
	// open (see Open).
	users *os.File
	// Rebuilt says why the index was built anew when it was opened or
	// since ("" if it was not).
	Rebuilt string
	// times times a search's parts (times.go); nil: not timed.
	times *partTimes
}

// shard is one database of the index, open: the files given to it, with
// their documents and full-text index (see schema).
type shard struct {
	of    int // the index's databases
	db    *sql.DB
	st    *store.Store
	path  string
	inode uint64 // of the file opened: a rebuild moves aside only that one
	// tx is an Update's write transaction, open across files; filled is
	// the bytes of transcripts indexed in it (see inTx).
	tx     *sql.Tx
	filled int64
	// ahead: the database's files are read and their text extracted on
	// a goroutine of their own (see readChunks).
	ahead bool
	times *partTimes
	// outdated says the database found is of another schema version:
	// whole, but not read by this pipeline; it is rebuilt, not kept aside.
	outdated bool
}

// Beside index.db, three files keep searches that run at once from
// harming each other or the index:
//
//   - index.lock: held (an exclusive flock) while the index is opened,
//     made, checked, rebuilt, and while a search that closes it looks
//     whether it was the last: two searches never make it at once (SQLite
//     said "table meta already exists" to the second), nor move aside the
//     one the other just made; the second waits, then reads it;
//   - index.users: held shared by every search that has the index open
//     (until its databases are closed: SQLite's last checkpoint is
//     done); one that can take it alone, under index.lock, knows it is
//     alone, and only then looks at the databases' files by themselves
//     (see shard.open);
//   - index.dirty: made when the index is opened, removed by the last
//     search to close it. Found by a search that is alone, it says the
//     last one did not close it (kill -9, a crash, a power cut): the index
//     is then checked whole (its pages and the full-text index against the
//     documents) before it is used, and rebuilt if it fails.
const (
	lockName  = "index.lock"
	usersName = "index.users"
	dirtyName = "index.dirty"
)

// Options are how Open reports what it does on its own.
type Options struct {
	// Warn gets one line when the index is rebuilt, found corrupt or of
	// another format (standard error); nil is quiet.
	Warn io.Writer
}

// Path is where the index of the store at root is kept.
func Path(root string) string { return filepath.Join(root, FolderName, FileName) }

// Open opens the index of st, making it if it is not there. A database
// of it that is corrupt (not a database, cut short) is moved aside to
// index.db.corrupt (index.1.db.corrupt...) and built anew, one of another
// schema version replaced by a new one; either with one line to o.Warn.
func Open(st *store.Store, o Options) (*Index, error) {
	dir, err := st.Folder(FolderName)
	if err != nil {
		return nil, fmt.Errorf("the search index's folder: %w", err)
	}
	ix := &Index{st: st, dir: dir, warn: o.Warn, times: newPartTimes()}
	if o.Warn == nil {
		ix.warn = io.Discard
	}
	ahead := shardCount < runtime.GOMAXPROCS(0)
	for i := range shardCount {
		ix.shards = append(ix.shards, &shard{of: shardCount, st: st, path: filepath.Join(dir, shardFile(i)), ahead: ahead, times: ix.times})
	}
	unlock, err := ix.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	alone, uncleanClose, err := ix.join()
	if err != nil {
		return nil, err
	}
	ix.times.done("locks")
	if err := ix.openShards(alone, uncleanClose); err != nil {
		ix.closeShards()
		ix.leave()
		return nil, err
	}
	ix.times.done("sqlite open and schema check")
	return ix, nil
}

// openShards opens the databases of the index at once, and rebuilds one
// that cannot be used; uncleanClose: each is checked whole first. alone:
// no other search has the index open (see join), and the files of a
// database may be looked at by themselves (see shard.open).
func (ix *Index) openShards(alone, uncleanClose bool) error {
	problems := make([]string, len(ix.shards))
	err := ix.eachShard(func(i int, s *shard) error {
		problem, err := s.open(alone)
		if err == nil && problem == "" && uncleanClose {
			problem = s.checkWhole()
		}
		problems[i] = problem
		return err
	})
	if err != nil {
		return err
	}
	for i, s := range ix.shards {
		if problems[i] != "" {
			if err := ix.rebuildShard(s, problems[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

func (ix *Index) closeShards() error {
	var err error
	for _, s := range ix.shards {
		if s.db != nil {
			err = errors.Join(err, s.db.Close())
			s.db = nil
		}
	}
	return err
}

// lock takes index.lock, waiting for a search that holds it.
func (ix *Index) lock() (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(ix.dir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the search index's lock: %w", err)
	}
	if err := flock(f, unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}

// join counts this search among the index's users, under index.lock; it
// reports whether it is alone (no other search has the index open: none
// can open it before index.lock is let go), and whether the index was
// left open by a search that ended without closing it.
func (ix *Index) join() (alone, uncleanClose bool, err error) {
	dir := ix.dir
	users, err := os.OpenFile(filepath.Join(dir, usersName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return false, false, fmt.Errorf("the search index's users: %w", err)
	}
	alone = flock(users, unix.LOCK_EX|unix.LOCK_NB) == nil
	dirty := filepath.Join(dir, dirtyName)
	if _, err := os.Lstat(dirty); err == nil && alone {
		_, statErr := os.Lstat(ix.shards[0].path)
		uncleanClose = statErr == nil
	}
	if f, err := os.OpenFile(dirty, os.O_WRONLY|os.O_CREATE, 0o600); err == nil {
		f.Close()
	}
	// Shared from now on: others open it too. (index.lock is held: no
	// other search looks between the two.)
	if err := flock(users, unix.LOCK_SH); err != nil {
		users.Close()
		return false, false, fmt.Errorf("locking %s: %w", users.Name(), err)
	}
	ix.users = users
	return alone, uncleanClose, nil
}

// leave stops counting this search among the users; the last one removes
// index.dirty: the index was closed. The caller holds index.lock.
func (ix *Index) leave() {
	if ix.users == nil {
		return
	}
	if flock(ix.users, unix.LOCK_EX|unix.LOCK_NB) == nil {
		os.Remove(filepath.Join(ix.dir, dirtyName))
	}
	ix.users.Close()
	ix.users = nil
}

// checkWhole checks the whole database (see Check); it returns why it
// cannot be used, "" when it can.
func (s *shard) checkWhole() string {
	if err := s.check(context.Background()); err != nil {
		return fmt.Sprintf("was not closed by the last search (killed?) and fails its check (%v)", err)
	}
	return ""
}

// flock runs flock on f, again when a signal cuts it short.
func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// open opens the database at s.path; problem is why it cannot be used
// as it is (then it is closed).
//
// Its file is looked at by itself (headerProblem) only when it is the
// whole database: alone (no other search has it open) and no
// write-ahead log holding pages beside it. Another search's SQLite
// writes the file as it checkpoints, its first page (which says how
// many there are) before the pages it adds: looked at then, a whole
// index seemed cut short, and was moved aside from under the search
// filling it (issue: six searches at once on a new store). A log left
// by a search killed in a checkpoint holds the pages its file lacks.
// Either is read through SQLite, which reads the log too; a search
// killed leaves index.dirty, and the next one alone checks it whole.
func (s *shard) open(alone bool) (problem string, err error) {
	info, err := os.Lstat(s.path)
	existed := err == nil
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("the search index %s: %w", s.path, err)
	case existed && !info.Mode().IsRegular():
		// SQLite would follow a link: the store follows none.
		return "", fmt.Errorf("the search index %s is not a regular file (a link, a folder?): remove it, and the next search builds it again", s.path)
	case existed:
		if !alone || walHoldsFrames(s.path) {
			break // the file is not the whole database: see above
		}
		if problem := headerProblem(s.path, info.Size()); problem != "" {
			return problem, nil
		}
	default:
		// Made private first: SQLite would make it readable by all, and its
		// journal files take its mode.
		f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("the search index %s: %w", s.path, err)
		}
		if f != nil {
			f.Close()
		}
	}
	dsn := "file:" + (&url.URL{Path: s.path}).EscapedPath() + "?" + url.Values{
		// The driver runs the pragmas in the order of their names, and
		// _journal_mode after them all: page_size comes before WAL mode
		// writes the first page. A new database takes it; one that exists
		// keeps its own (see schema).
		"_journal_mode": {"wal"},
		"_pragma": {
			fmt.Sprintf("page_size(%d)", pageSize),
			fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS),
			// In WAL mode a commit survives a kill at once; a power cut may
			// lose the last commits, which the next search indexes again.
			"synchronous(normal)",
			// 4 MiB of pages (cacheKiB): 16 KB pages take more than twice
			// their size in memory. With 16 MiB of them one database's
			// first search of 127 MB peaked at 95 MiB (62 MiB with 4, 59
			// with 16 MiB of 4 KB pages), of 1 GB at 126 MiB (64 with 4),
			// no faster: what a merge reads back is in the system's
			// cache. Two databases of 2 MiB each peaked at 93–95 MiB over
			// 268 MB, of 1 MiB at 80–81 MiB, the same CPU.
			fmt.Sprintf("cache_size(-%d)", s.cacheKiB()),
			// temp.marks, where the hits shown are highlighted (query.go).
			"temp_store(memory)",
		},
		"_txlock": {"immediate"},
	}.Encode()
	registerMatchStats() // before the connection opens: rank.go
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return "", fmt.Errorf("the search index %s: %w", s.path, err)
	}
	// One connection: the pragmas hold on it, and a transaction is on it.
	db.SetMaxOpenConns(1)
	s.db = db
	if st, err := os.Stat(s.path); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			s.inode = sys.Ino
		}
	}
	problem, err = s.checkSchema(existed)
	if err != nil || problem != "" {
		db.Close()
		s.db = nil
	}
	if err != nil && corrupt(err) {
		return fmt.Sprintf("is corrupt (%v)", err), nil
	}
	return problem, err
}

// checkSchema makes the schema in a new database, and checks an existing
// one's version and that its tables can be read.
func (s *shard) checkSchema(existed bool) (problem string, err error) {
	ctx := context.Background()
	var tables int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&tables); err != nil {
		return "", err
	}
	if tables == 0 {
		if existed {
			return "holds no search index (an empty file?)", nil
		}
		if _, err := s.db.ExecContext(ctx, schema); err != nil {
			return "", err
		}
		_, err := s.db.ExecContext(ctx, `INSERT INTO text(text, rank) VALUES('hashsize', ?)`, hashBytes/s.of)
		return "", err
	}
	var version string
	if err := s.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'schema'`).Scan(&version); err != nil {
		if corrupt(err) {
			return "", err
		}
		return fmt.Sprintf("is not a search index of this pipeline (%v)", err), nil
	}
	if version != schemaVersion {
		s.outdated = true
		return fmt.Sprintf("is of another format (schema %s; this pipeline's is %s)", version, schemaVersion), nil
	}
	// A cheap look at each table: a file cut short or overwritten fails
	// here rather than in the middle of a search.
	for _, q := range []string{`SELECT count(*) FROM files`, `SELECT max(id) FROM docs`,
		`SELECT count(*) FROM text WHERE text MATCH 'pipeline'`} {
		var v sql.NullInt64
		if err := s.db.QueryRowContext(ctx, q).Scan(&v); err != nil {
			return "", err
		}
	}
	return "", nil
}

// cacheKiB is the page cache of each of the index's databases.
func (s *shard) cacheKiB() int {
	if s.of == 1 {
		return cacheKiB
	}
	return cacheKiB / 4
}

// headerProblem looks at the first 100 bytes of a database file: what
// SQLite wrote there, and a size that holds its pages. An empty file is
// left to checkSchema.
func headerProblem(path string, size int64) string {
	if size == 0 {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var h [100]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return fmt.Sprintf("is cut short (%d bytes)", size)
	}
	if string(h[:16]) != "SQLite format 3\x00" {
		return "is not an SQLite database"
	}
	pageSize := int64(binary.BigEndian.Uint16(h[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	if pageSize < 512 || pageSize&(pageSize-1) != 0 || size%pageSize != 0 {
		return fmt.Sprintf("is cut short (%d bytes, not a whole number of %d-byte pages)", size, pageSize)
	}
	if pages := int64(binary.BigEndian.Uint32(h[28:32])); pages*pageSize > size {
		return fmt.Sprintf("is cut short (%d bytes for %d pages of %d)", size, pages, pageSize)
	}
	return ""
}

// walHoldsFrames tells whether the write-ahead log of the database at
// path holds pages (frames, after its 32-byte header): pages the
// database's file may not have yet. An error but "not there" counts as
// holding them: the file is then not judged by itself.
func walHoldsFrames(path string) bool {
	const walHeaderBytes = 32
	info, err := os.Lstat(path + "-wal")
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	return err != nil || info.Size() > walHeaderBytes
}

// corrupt tells whether err is SQLite finding the file is not (or no
// longer) a whole database.
//
// FTS5 says some of its own corruption with a plain error, and in its
// words ("invalid fts5 file format ... - run 'rebuild'"), which made every
// search fail: those count too. A user has nothing to run: the index is
// rebuilt.
func corrupt(err error) bool {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code() & 0xff {
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return true
	case sqlite3.SQLITE_IOERR:
		return e.Code() == sqlite3.SQLITE_IOERR_SHORT_READ
	}
	message := strings.ToLower(e.Error())
	for _, word := range []string{"run 'rebuild'", "invalid fts5 file format", "malformed", "corrupt"} {
		if strings.Contains(message, word) {
			return true
		}
	}
	return false
}

// rebuild moves each database of the index aside (to index.db.corrupt,
// replacing an older one) and makes new, empty ones, which the next
// Update fills: it says so on the warning writer, a line for each. It
// takes index.lock. (An error of SQLite's does not say which database
// it came from: they are all rebuilt.)
func (ix *Index) rebuild(why string) error {
	unlock, err := ix.lock()
	if err != nil {
		return err
	}
	defer unlock()
	for _, s := range ix.shards {
		if err := ix.rebuildShard(s, why); err != nil {
			return err
		}
	}
	return nil
}

// rebuildShard rebuilds one database of the index, index.lock held.
// Each holds its own files whole: the others are kept.
func (ix *Index) rebuildShard(s *shard, why string) error {
	if s.db != nil {
		s.db.Close()
		s.db = nil
	}
	// Another search may have rebuilt it already: move aside only the file
	// found corrupt.
	same := true
	if st, err := os.Stat(s.path); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && s.inode != 0 && sys.Ino != s.inode {
			same = false
		}
	}
	outdated := s.outdated
	s.outdated = false
	if same {
		if err := s.setAside(outdated); err != nil {
			return fmt.Errorf("the search index %s %s, and it cannot be moved aside: %w; remove it, and the next search builds it again", s.path, why, err)
		}
	}
	if outdated {
		fmt.Fprintf(ix.warn, "pipeline: the search index %s %s: rebuilding it once from the sessions\n", s.path, why)
	} else {
		fmt.Fprintf(ix.warn, "pipeline: the search index %s %s: moved aside to %s, rebuilding it from the sessions\n", s.path, why, filepath.Base(s.path)+asideSuffix)
	}
	ix.Rebuilt = why
	s.inode = 0
	// What is there now is made here, or was by another search that
	// rebuilt it first and may be filling it: not judged by its file.
	problem, err := s.open(false)
	if err != nil {
		return err
	}
	if problem != "" {
		return fmt.Errorf("the search index %s was rebuilt and %s: remove the folder %s", s.path, problem, ix.dir)
	}
	return nil
}

// setAside moves the database aside to <name>.corrupt for a look, or
// removes it when it is whole but outdated (of another schema version:
// nothing to look at). What schema 3 kept beside it (places/, the
// places of hits per transcript) is in the index's rows since 4, and
// goes too.
func (s *shard) setAside(outdated bool) error {
	var err error
	if outdated {
		err = os.Remove(s.path)
		os.RemoveAll(filepath.Join(filepath.Dir(s.path), "places"))
	} else {
		err = os.Rename(s.path, s.path+asideSuffix)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// The write-ahead log and its index belong to the file set aside.
	os.Remove(s.path + "-wal")
	os.Remove(s.path + "-shm")
	return nil
}

// Close closes the index; the last search to close it says so (see
// index.dirty).
func (ix *Index) Close() error {
	err := ix.closeShards()
	if ix.users != nil {
		unlock, lockErr := ix.lock()
		if lockErr != nil {
			ix.users.Close()
			ix.users = nil
			return errors.Join(err, lockErr)
		}
		ix.leave()
		unlock()
	}
	return err
}

// Check runs SQLite's integrity checks over the whole index: each
// database's pages (quick_check) and its full-text index against its
// documents (FTS5's integrity-check). It reads everything: for tests and
// for a user who doubts, not for each search.
func (ix *Index) Check(ctx context.Context) error {
	for _, s := range ix.shards {
		if err := s.check(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (s *shard) check(ctx context.Context) error {
	var verdict string
	if err := s.db.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&verdict); err != nil {
		return fmt.Errorf("checking %s: %w", s.path, err)
	}
	if verdict != "ok" {
		return fmt.Errorf("the search index %s is corrupt: %s", s.path, verdict)
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO text(text, rank) VALUES('integrity-check', 1)`); err != nil {
		return fmt.Errorf("the search index %s does not match its documents: %w", s.path, err)
	}
	return nil
}
