package search

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// A search scores only the most recent matches (candidates of them, of
// each database: one here): an older document that BM25 would put first
// is left out once newer matches fill the bound, and among those kept
// the order is BM25's.
func TestOnlyTheMostRecentMatchesAreScored(t *testing.T) {
	defer func(was int) { candidates = was }(candidates)
	candidates = 3
	oneShard(t)
	p := newProject(t)
	x := p.session("s1", "completed", nil)
	// Indexed in this order: a first (the best), e last.
	ix := p.open()
	for _, w := range []struct{ phase, text string }{
		{"a", "zebra zebra zebra zebra"},
		{"b", "zebra apple pear plum fig kiwi lime"},
		{"c", "zebra zebra apple pear"},
		{"d", "zebra apple pear plum fig"},
		{"e", "zebra zebra zebra apple"},
	} {
		p.write(x, w.phase, 1, "agent", false, w.text+"\n")
		update(t, ix)
	}
	hits := find(t, ix, Query{Text: "zebra", Limit: 2})
	want := []string{"transcripts/e/1-agent.log", "transcripts/c/1-agent.log"}
	if got := files(hits); !slices.Equal(got, want) {
		t.Errorf("hits %v, want %v (the best 2 of the 3 most recent: c, d, e)", got, want)
	}
	// A limit above the bound scores as many as it asks for.
	if hits := find(t, ix, Query{Text: "zebra", Limit: 5}); len(hits) != 5 || hits[0].File != "transcripts/a/1-agent.log" {
		t.Errorf("limit 5: %v", files(hits))
	}
	// The bound counts the matches that pass the filters.
	if hits := find(t, ix, Query{Text: "zebra", Phase: "a", Limit: 2}); len(hits) != 1 {
		t.Errorf("--phase a: %v", files(hits))
	}
}

// A query with a phrase keeps only the documents with the phrase, ranked
// by BM25 of the phrase and of its words (rank.go): of two with the
// phrase once, the one with its words more often first.
func TestPhraseRankedByItsWords(t *testing.T) {
	p := newProject(t)
	x := p.session("s1", "completed", nil)
	p.write(x, "a", 1, "agent", false, "the walrus said hello to a walrus and a walrus\n")
	p.write(x, "b", 1, "agent", false, "walrus said hello, then left quietly for home\n")
	p.write(x, "c", 1, "agent", false, "hello walrus, he said walrus walrus walrus\n") // no "walrus said hello"
	p.write(x, "d", 1, "agent", false, "go-task said hello\n")
	ix := p.open()
	update(t, ix)
	hits := find(t, ix, Query{Text: `"walrus said hello"`})
	if got := files(hits); !slices.Equal(got, []string{"transcripts/a/1-agent.log", "transcripts/b/1-agent.log"}) {
		t.Fatalf("phrase: %v", got)
	}
	if hits[0].Score <= hits[1].Score || hits[1].Score <= 0 {
		t.Errorf("scores %v then %v", hits[0].Score, hits[1].Score)
	}
	if got := hits[0].Marked("[", "]"); !strings.Contains(got, "[walrus said hello]") {
		t.Errorf("snippet %q", got)
	}
	// A word that the tokenizer splits is a phrase too.
	if hits := find(t, ix, Query{Text: "go-task hello"}); len(hits) != 1 || hits[0].File != "transcripts/d/1-agent.log" {
		t.Errorf("go-task: %v", files(hits))
	}
	if hits := find(t, ix, Query{Text: `"walrus said hello" quietly`}); len(hits) != 1 || hits[0].File != "transcripts/b/1-agent.log" {
		t.Errorf("a phrase and a word: %v", files(hits))
	}
}

// The index keeps no text of a transcript or prompt: a hit's snippet is
// read from the file; a file changed under the index (before the next
// update) leaves its hit without marks rather than wrong ones.
func TestTranscriptTextIsReadFromTheFile(t *testing.T) {
	p := newProject(t)
	x := p.session("s1", "completed", nil)
	p.write(x, "build", 1, "agent", false, "first line\nthe narwhal line\n")
	ix := p.open()
	update(t, ix)
	var stored int
	for _, s := range ix.shards {
		var n int
		if err := s.db.QueryRow(`SELECT count(*) FROM docs WHERE kind = ? AND body != ''`, KindTranscript).Scan(&n); err != nil {
			t.Fatal(err)
		}
		stored += n
	}
	if stored != 0 {
		t.Errorf("%d transcript documents keep their text", stored)
	}
	hits := find(t, ix, Query{Text: "narwhal"})
	if len(hits) != 1 || hits[0].Line != 2 || hits[0].Marked("[", "]") != "the [narwhal] line" {
		t.Fatalf("hits %+v", hits)
	}
	// Overwritten in place, same size, before an update sees it.
	if err := os.WriteFile(x.TranscriptPath("build", 1, "agent"), []byte("first line\nthe platypus lin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hits = find(t, ix, Query{Text: "narwhal"})
	if len(hits) != 1 || len(hits[0].Marks) != 0 {
		t.Errorf("a changed file's hit: %+v", hits)
	}
}

// One update indexes many files in a transaction of up to batchBytes:
// all of them, committed (another connection sees them), and none twice.
func TestFilesShareATransaction(t *testing.T) {
	defer func(was int64) { batchBytes = was }(batchBytes)
	batchBytes = 4 << 10
	p := newProject(t)
	var total int64
	for s := range 3 {
		x := p.session(fmt.Sprintf("s%d", s), "completed", nil)
		for attempt := 1; attempt <= 4; attempt++ {
			var b strings.Builder
			for i := range 40 {
				fmt.Fprintf(&b, "session %d attempt %d line %d ocelot\n", s, attempt, i)
			}
			p.write(x, "build", attempt, "agent", false, b.String())
			total += int64(b.Len())
		}
	}
	ix := p.open()
	if stats := update(t, ix); stats.Bytes != total || stats.Files != 12+3 {
		t.Errorf("%+v, want %d bytes of 12 transcripts and 3 snapshots", stats, total)
	}
	for _, s := range ix.shards {
		if s.tx != nil {
			t.Errorf("the update left %s's transaction open", s.path)
		}
	}
	other := p.open()
	found := map[string]bool{}
	for _, h := range find(t, other, Query{Text: "ocelot", Limit: 1000}) {
		found[h.Session+"/"+h.File] = true
	}
	if len(found) != 12 {
		t.Errorf("another connection finds %d of the 12 transcripts", len(found))
	}
	if stats := update(t, ix); stats.Bytes != 0 {
		t.Errorf("indexed again: %+v", stats)
	}
}

// readAhead hands over each document as it was emitted (the chunker
// reuses its buffer), in order; an error of add stops the reading and is
// returned.
func TestReadAhead(t *testing.T) {
	emitAll := func(n int, emitted *int) func(emit emitFunc) (int64, bool, error) {
		return func(emit emitFunc) (int64, bool, error) {
			buf := make([]byte, 0, 16)
			for i := range n {
				buf = fmt.Appendf(buf[:0], "doc %d", i)
				if err := emit(int64(i), 0, 0, buf, nil); err != nil {
					return int64(i), false, err
				}
				*emitted = i + 1
			}
			return int64(n), true, nil
		}
	}
	var emitted, added int
	n, finished, err := readAhead(emitAll(500, &emitted), func(ch chunk) error {
		if want := fmt.Sprintf("doc %d", added); string(ch.body) != want || ch.line != int64(added) {
			t.Fatalf("got %q (line %d), want %q", ch.body, ch.line, want)
		}
		added++
		return nil
	})
	if err != nil || !finished || n != 500 || added != 500 {
		t.Errorf("read %d, finished %v, err %v, added %d", n, finished, err, added)
	}
	failed := fmt.Errorf("the index failed")
	emitted, added = 0, 0
	_, _, err = readAhead(emitAll(100000, &emitted), func(chunk) error {
		added++
		if added == 3 {
			return failed
		}
		return nil
	})
	if err != failed || emitted >= 100000 {
		t.Errorf("err %v after %d emitted: want the add's error, reading stopped", err, emitted)
	}
}
