package search

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// quokkas makes a project of n sessions whose transcripts say quokka.
func quokkas(t *testing.T, n int) *project {
	p := newProject(t)
	p.completedSessions(n, 60, func(i, j int) string { return fmt.Sprintf("session %d line %d quokka\n", i, j) })
	return p
}

// Issue 23, item 4: searches started at once on a store with no index
// raced to make it: 5 of 6 failed ("table meta already exists", or "remove
// the folder .pipeline/search" after moving aside the index another had
// just made). The index is made under a lock: the others wait, then read
// it; none fails, none rebuilds, and it is whole.
func TestIssue23ConcurrentSearchBuildsIndexOnce(t *testing.T) {
	p := quokkas(t, 4)
	for round := range 5 {
		removeIndex(t, p)
		var wg sync.WaitGroup
		errs := make([]error, 8)
		warns := make([]bytes.Buffer, 8)
		hits := make([]int, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := Search(context.Background(), p.st, Query{Text: "quokka", Limit: 1000}, Options{Warn: &warns[i]})
				errs[i], hits[i] = err, len(r.Hits)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil || warns[i].Len() > 0 || hits[i] != 4*2 {
				t.Errorf("round %d, search %d: %v, warned %q, %d hits (want 8)", round, i, err, warns[i].String(), hits[i])
			}
		}
		ix := p.open()
		if err := ix.Check(context.Background()); err != nil {
			t.Error(err)
		}
		ix.Close()
	}
}

// killed leaves the index as a search killed with it open leaves it: the
// database not closed, the search still counted as a user.
func killed(ix *Index) {
	ix.closeShards()
	ix.users.Close() // the kernel drops its lock; index.dirty stays
	ix.users = nil
}

// Issue 23, item 4: damage to index.db that SQLite does not see when it
// reads a page (then a document's text changed, the full-text index no
// longer matching it; now that the text is read from the transcripts,
// the full-text index's own data) gave wrong hits on every search. After a search that
// did not close the index (killed), the next one to open it alone checks
// it whole, and rebuilds it if it fails; a clean close costs no check.
func TestIssue23IndexLeftOpenIsCheckedAndRebuilt(t *testing.T) {
	p := quokkas(t, 3)
	want, err := Search(context.Background(), p.st, Query{Text: "quokka", Limit: 1000}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ix := p.open()
	killed(ix)
	// The full-text index's own data changes, as damaged pages would,
	// pages that SQLite reads without a complaint.
	db, err := sql.Open("sqlite", Path(p.st.Root))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE text_data SET block = substr(block, 1, length(block)-3) || X'000000' WHERE id = (SELECT max(id) FROM text_data)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	var warn bytes.Buffer
	got, err := Search(context.Background(), p.st, Query{Text: "quokka", Limit: 1000}, Options{Warn: &warn})
	if err != nil {
		t.Fatal(err)
	}
	if got.Rebuilt == "" || !strings.Contains(warn.String(), "was not closed") || !strings.Contains(warn.String(), "rebuilding") {
		t.Errorf("rebuilt %q, warned %q; want it checked and rebuilt", got.Rebuilt, warn.String())
	}
	if !sameHits(got.Hits, want.Hits) {
		t.Errorf("hits after the rebuild:\n%+v\nwant\n%+v", got.Hits, want.Hits)
	}
	// Closed as it should be: the next search checks nothing.
	again, err := Search(context.Background(), p.st, Query{Text: "quokka"}, Options{Warn: &warn})
	if err != nil || again.Rebuilt != "" {
		t.Errorf("after a clean close: rebuilt %q, %v", again.Rebuilt, err)
	}
	if _, err := os.Stat(dirtyPath(p)); err == nil {
		t.Error("index.dirty is left after every search closed the index")
	}
}

func dirtyPath(p *project) string {
	return Path(p.st.Root)[:len(Path(p.st.Root))-len(FileName)] + dirtyName
}

// Issue 23, item 4: a damaged FTS5 configuration made every search fail
// with SQLite's "invalid fts5 file format ... - run 'rebuild'": FTS5 says
// it with a plain error, which was not taken for corruption. It is: the
// index is rebuilt, and the search answers.
func TestIssue23FTSFormatErrorRebuilds(t *testing.T) {
	p := quokkas(t, 2)
	want, err := Search(context.Background(), p.st, Query{Text: "quokka", Limit: 1000}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", Path(p.st.Root))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE text_config SET v = 99 WHERE k = 'version'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for range 2 {
		var warn bytes.Buffer
		got, err := Search(context.Background(), p.st, Query{Text: "quokka", Limit: 1000}, Options{Warn: &warn})
		if err != nil {
			t.Fatalf("search: %v", err)
		}
		if !sameHits(got.Hits, want.Hits) {
			t.Errorf("hits %d, want %d", len(got.Hits), len(want.Hits))
		}
	}
}
