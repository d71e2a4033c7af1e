package search

import (
	"context"
	"database/sql"
	"net/url"
	"testing"
)

// layout reads what decides the indexing's speed in an index's database:
// its page size, and FTS5's pending-terms size and blob size.
func layout(t *testing.T, db *sql.DB) (pageSize, hashSize, blobSize int) {
	t.Helper()
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	config := map[string]*int{"hashsize": &hashSize, "pgsz": &blobSize}
	for key, v := range config {
		if err := db.QueryRow(`SELECT v FROM text_config WHERE k = ?`, key).Scan(v); err != nil {
			t.Fatalf("text_config %s: %v", key, err)
		}
	}
	return pageSize, hashSize, blobSize
}

// A new index is made with the layout that indexes faster: 16 KB pages
// (set before WAL mode writes the first page: the driver runs
// journal_mode after the other pragmas only when it is given as
// _journal_mode), FTS5 blobs that fill one, 8 MiB of pending terms
// shared among its databases.
func TestNewIndexLayout(t *testing.T) {
	for _, n := range []int{1, 2} {
		databases(t, n)
		p := quokkas(t, 2)
		ix := p.open()
		update(t, ix)
		if len(ix.shards) != n {
			t.Fatalf("%d databases, want %d", len(ix.shards), n)
		}
		checkLayout(t, ix, 8<<20/n)
	}
}

func checkLayout(t *testing.T, ix *Index, wantHash int) {
	t.Helper()
	for _, s := range ix.shards {
		page, hash, blob := layout(t, s.db)
		if page != pageSize || hash != wantHash || blob != 16000 {
			t.Errorf("%s: page size %d, hashsize %d, pgsz %d; want %d, %d, 16000", s.path, page, hash, blob, pageSize, wantHash)
		}
		var mode string
		if err := s.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
			t.Errorf("%s: journal mode %q, %v; want wal", s.path, mode, err)
		}
	}
}

// An index made by the pipeline before (4 KB pages, 2 MiB of pending
// terms, blobs of 4050 bytes; the same schema version) is read and
// updated as it is: not rebuilt, its layout kept, its hits the same as
// a new index's.
func TestIndexOfTheEarlierLayoutIsKept(t *testing.T) {
	p := quokkas(t, 3)
	want, err := Search(context.Background(), p.st, Query{Text: "quokka", Limit: 1000}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	removeIndex(t, p)
	if _, err := p.st.Folder(FolderName); err != nil {
		t.Fatal(err)
	}
	old, err := sql.Open("sqlite", "file:"+(&url.URL{Path: Path(p.st.Root)}).EscapedPath()+"?_pragma=page_size(4096)&_journal_mode=wal")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{schema, `INSERT INTO text(text, rank) VALUES('hashsize', 2097152)`,
		`INSERT INTO text(text, rank) VALUES('pgsz', 4050)`} {
		if _, err := old.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	got, err := Search(context.Background(), p.st, Query{Text: "quokka", Limit: 1000}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Rebuilt != "" || got.Indexed.Files != 6 {
		t.Errorf("rebuilt %q, indexed %d files; want it used as it is, the 3 transcripts and 3 snapshots indexed into it", got.Rebuilt, got.Indexed.Files)
	}
	if !sameHits(got.Hits, want.Hits) {
		t.Errorf("hits in the index of the earlier layout:\n%+v\nwant\n%+v", got.Hits, want.Hits)
	}
	ix := p.open()
	page, hash, blob := layout(t, ix.shards[0].db)
	if page != 4096 || hash != 2<<20 || blob != 4050 {
		t.Errorf("page size %d, hashsize %d, pgsz %d; want the earlier layout kept: 4096, %d, 4050", page, hash, blob, 2<<20)
	}
	if err := ix.Check(context.Background()); err != nil {
		t.Error(err)
	}
}
