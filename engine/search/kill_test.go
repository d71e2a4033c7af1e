package search

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// killChildEnv names the store a test binary started by
// TestKilledWhileIndexingResumes indexes (see TestMain), in small
// transactions, until it is killed.
const killChildEnv = "PIPELINE_SEARCH_TEST_INDEX_CHILD"

func TestMain(m *testing.M) {
	if root := os.Getenv(killChildEnv); root != "" {
		os.Exit(indexAsChild(root))
	}
	if root := os.Getenv(holdChildEnv); root != "" {
		os.Exit(holdAsChild(root))
	}
	os.Exit(m.Run())
}

// indexAsChild is the child's work: one search over the store at root,
// committing every 256 KiB of each database.
func indexAsChild(root string) int {
	st, err := store.Open(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	batchBytes = 256 << 10
	if _, err := Search(context.Background(), st, Query{Text: "wombat"}, Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	return 0
}

// A search killed (SIGKILL) while it indexes (into one database, or two
// filled at once) leaves what it committed: the next search checks the index (it
// was not closed), finds it whole, and indexes the rest, not all of it
// again (a file cut between two batches was taken for indexed: its row
// had the file's size); then every byte of every file is in one
// document, in one database.
func TestKilledWhileIndexingResumes(t *testing.T) {
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d databases", n), func(t *testing.T) { killedWhileIndexing(t, n) })
	}
}

func killedWhileIndexing(t *testing.T, n int) {
	databases(t, n)
	p := newProject(t)
	var total int64
	sizes := map[string]int64{}
	for s := range 8 {
		x := p.session(fmt.Sprintf("s%d", s), "completed", nil)
		var b strings.Builder
		lines := 40000 + 997*s
		for j := range lines {
			fmt.Fprintf(&b, "session %d line %d wombat and some words to index\n", s, j)
		}
		fmt.Fprintf(&b, "the end of marker%d\n", s)
		p.write(x, "build", 1, "agent", false, b.String())
		total += int64(b.Len())
		sizes[x.Meta.ID] = int64(b.Len())
	}
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), killChildEnv+"="+p.st.Root, fmt.Sprintf("%s=%d", DatabasesEnv, n))
	var stderr strings.Builder
	child.Stderr = &stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	committed := func() int64 { return indexedBytes(t, p) }
	if err := os.MkdirAll(p.st.Root+"/"+FolderName, 0o700); err != nil {
		t.Fatal(err)
	}
	testwait.Written(t, p.st.Root+"/"+FolderName, "the child's first commit", func() bool { return committed() > 0 })
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("killing the search: %v (ended already? %s)", err, stderr.String())
	}
	child.Wait()
	before := committed()
	if before == 0 || before >= total {
		t.Fatalf("killed with %d bytes of %d committed: want a part", before, total)
	}
	r, err := Search(context.Background(), p.st, Query{Text: "marker3"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Rebuilt != "" || r.Indexed.Bytes != total-before {
		t.Errorf("after the kill: rebuilt %q, indexed %d bytes; want the %d not committed", r.Rebuilt, r.Indexed.Bytes, total-before)
	}
	if len(r.Hits) != 1 || r.Hits[0].Session != "s3" {
		t.Errorf("marker3: %+v", r.Hits)
	}
	ix := p.open()
	if len(ix.shards) != n {
		t.Errorf("%d databases, want %d", len(ix.shards), n)
	}
	if err := ix.Check(context.Background()); err != nil {
		t.Error(err)
	}
	covered := map[string]int64{}
	for _, s := range ix.shards {
		for session, n := range contiguousDocuments(t, s) {
			if _, twice := covered[session]; twice {
				t.Errorf("%s is in two databases", session)
			}
			covered[session] = n
		}
	}
	if len(covered) != len(sizes) {
		t.Errorf("%d transcripts indexed, want %d", len(covered), len(sizes))
	}
	for session, size := range sizes {
		if covered[session] != size {
			t.Errorf("%s: its documents cover %d bytes of %d", session, covered[session], size)
		}
	}
}

// contiguousDocuments reads the transcript documents of a database in
// the order of their offsets, checks that each starts where the one
// before ended, from the start of its file, and returns the bytes they
// cover per session.
func contiguousDocuments(t *testing.T, s *shard) map[string]int64 {
	t.Helper()
	rows, err := s.db.Query(`SELECT session, offset, length FROM docs WHERE kind = ? ORDER BY file, offset`, KindTranscript)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	covered := map[string]int64{}
	for rows.Next() {
		var (
			session        string
			offset, length int64
		)
		if err := rows.Scan(&session, &offset, &length); err != nil {
			t.Fatal(err)
		}
		if offset != covered[session] {
			t.Errorf("%s: a document at %d after %d bytes covered", session, offset, covered[session])
		}
		covered[session] = offset + length
	}
	return covered
}

// indexedBytes is how many bytes of files the index's databases hold, as
// another process sees them (0 before they are made).
func indexedBytes(t *testing.T, p *project) int64 {
	t.Helper()
	var total int64
	for _, path := range Paths(p.st.Root) {
		if _, err := os.Stat(path); err != nil {
			continue
		}
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(60000)")
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		err = db.QueryRow(`SELECT coalesce(sum(offset), 0) FROM files`).Scan(&n)
		db.Close()
		if err != nil && !strings.Contains(err.Error(), "no such table") {
			t.Fatal(err)
		}
		total += n
	}
	return total
}
