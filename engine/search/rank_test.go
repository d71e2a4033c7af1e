package search

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// Where every count is exact (each term with fewer matches than the
// bound), a search's scores are FTS5's bm25() of the same terms, to the
// last digits: the ranking computes what bm25() computes, from what it
// reads of each match; with a filter too.
func TestScoresAreBM25WhenTheCountsAreExact(t *testing.T) {
	oneShard(t)
	p := newProject(t)
	x := p.session("s1", "completed", nil)
	for i, text := range []string{
		"zebra zebra zebra apple",
		"zebra zebra apple pear plum fig",
		"the zebra apple pear plum fig kiwi lime",
		"zebra " + strings.Repeat("apple pear plum fig kiwi lime ", 5),
		strings.Repeat("apple pear plum fig kiwi lime ", 5),
		"apple pear zebra apple pear zebra kiwi",
		"kiwi lime and more kiwi, then zebras",
	} {
		p.write(x, fmt.Sprintf("p%d", i), 1, "agent", false, text+"\n")
	}
	ix := p.open()
	update(t, ix)
	ctx := context.Background()
	filteredFound := 0
	for _, text := range []string{"zebra", "zebra apple", `"apple pear"`, `"apple pear" kiwi`, "zebra*", `"pear zebra"`, "kiwi-lime"} {
		terms := parseTerms(text)
		found, err := ix.rank(ctx, Query{Text: text}, terms, 100)
		if err != nil {
			t.Fatal(err)
		}
		want := map[int64]float64{}
		rows, err := ix.shards[0].db.QueryContext(ctx, `SELECT rowid, bm25(text) FROM text WHERE text MATCH ?`, expression(scoringTerms(terms)))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var (
				id    int64
				score float64
			)
			if err := rows.Scan(&id, &score); err != nil {
				t.Fatal(err)
			}
			want[id] = score
		}
		rows.Close()
		if len(found) != len(want) || len(found) == 0 {
			t.Errorf("%s: %d found, bm25() scores %d", text, len(found), len(want))
		}
		// A filter keeps fewer documents, and scores them as without it:
		// the counts are of the whole index.
		filtered, err := ix.rank(ctx, Query{Text: text, Phase: "p1"}, terms, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(filtered) > 1 {
			t.Errorf("%s --phase p1: %d found, of one document", text, len(filtered))
		}
		filteredFound += len(filtered)
		for _, r := range append(found, filtered...) {
			if w, ok := want[r.id]; !ok || math.Abs(r.score-w) > 1e-12*math.Max(1, math.Abs(w)) {
				t.Errorf("%s: document %d scored %v, bm25() %v", text, r.id, r.score, w)
			}
		}
	}
	if filteredFound == 0 {
		t.Error("no query found p1's document with --phase p1")
	}
}

// A phrase ranks a document with it twice above one with it once (of
// the same length), and of two with it once each, the one with more of
// its rarer word above the one with more of its commoner word: the
// phrase is scored as a phrase and as its words, each by how rare it is.
// The documents that should come first are written first: the newest
// would come first if the scores were equal.
func TestPhraseScoredAsAPhraseAndAsItsWords(t *testing.T) {
	p := newProject(t)
	x := p.session("s1", "completed", nil)
	write := func(phase, text string) { p.write(x, phase, 1, "agent", false, text+"\n") }
	write("twice", "the red fox ran and the red fox hid in a big old barn")
	write("once", "the red fox ran and the tall dog hid in a big old barn")
	write("rarer", "a red fox and a red hen sat by the big old barn door")
	write("commoner", "a red fox and a brown fox sat by the big old barn door")
	// fox is in many documents, red in few: red is the rarer word.
	for i := range 10 {
		write(fmt.Sprintf("fox%d", i), "a fox went by")
	}
	for i := range 20 {
		write(fmt.Sprintf("other%d", i), "nothing to see here")
	}
	ix := p.open()
	update(t, ix)
	hits := find(t, ix, Query{Text: `"red fox"`})
	rank := map[string]int{}
	for i, h := range hits {
		rank[strings.Split(h.File, "/")[1]] = i
	}
	if len(hits) != 4 {
		t.Fatalf("hits %v, want the 4 with the phrase", files(hits))
	}
	if rank["twice"] > rank["once"] {
		t.Errorf("the phrase twice ranks below once: %v", files(hits))
	}
	if rank["rarer"] > rank["commoner"] {
		t.Errorf("more of the phrase's rarer word ranks below more of its commoner word: %v", files(hits))
	}
}

// Past the bound, how many documents a term is in is read from its most
// recent matches: a word in every other document of 40, of which the 4
// most recent are seen (the bound), is counted in 20; a word with fewer
// matches than the bound is counted exactly; an estimate is never above
// the index's documents; and ids left unused by documents removed do not
// count as documents.
func TestDocumentFrequencyFromTheMostRecentMatches(t *testing.T) {
	oneShard(t)
	p := newProject(t)
	x := p.session("s1", "completed", nil)
	// One document a file (each written and indexed in turn: the ids
	// follow), zebra in the even ones, okapi in 3, the in all.
	ix := p.open()
	for i := range 40 {
		text := "the lion"
		if i%2 == 0 {
			text += " zebra"
		}
		if i == 5 || i == 17 || i == 33 {
			text += " okapi"
		}
		p.write(x, fmt.Sprintf("p%02d", i), 1, "agent", false, text+"\n")
		update(t, ix)
	}
	var rows int64
	s := ix.shards[0]
	if err := s.db.QueryRow(`SELECT count(*) FROM docs`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 40 {
		t.Fatalf("%d documents, want 40 (one a file)", rows)
	}
	terms := []term{{"zebra", false}, {"okapi", false}, {"the", false}}
	docs, err := s.documentFrequencies(context.Background(), terms, nil, 4, float64(rows))
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{20, 3, 40}; !slices.EqualFunc(docs, want, func(a, b float64) bool { return math.Abs(a-b) < 1.5 }) {
		t.Errorf("documents %v, want about %v", docs, want)
	}
	if docs[1] != 3 || docs[2] > 40 {
		t.Errorf("okapi %v (want 3 exactly), the %v (at most 40)", docs[1], docs[2])
	}
	// Documents gone from the middle (a file indexed again, a session
	// removed) leave the ids with a gap: the count is of the rows left.
	if _, err := s.db.Exec(`DELETE FROM docs WHERE id BETWEEN (SELECT min(id) FROM docs) + 4 AND (SELECT min(id) FROM docs) + 23`); err != nil {
		t.Fatal(err)
	}
	docs, err = s.documentFrequencies(context.Background(), terms[:1], nil, 4, 20)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(docs[0]-10) > 2 {
		t.Errorf("zebra in %v documents of the 20 left, want about 10", docs[0])
	}
}

// The hits' texts go to the highlighting table by statements of up to
// marksPerInsert, and a second highlight on the connection replaces the
// first one's texts (which stay until then).
func TestHighlightInBatches(t *testing.T) {
	ix := newProject(t).open()
	texts := make([]string, 2*marksPerInsert+3)
	for i := range texts {
		texts[i] = fmt.Sprintf("line %d\nthe walrus %d said", i, i)
	}
	for round := range 2 {
		marked, err := ix.shards[0].highlight(context.Background(), expression(parseTerms("walrus")), texts)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range marked {
			if want := fmt.Sprintf("the %cwalrus%c %d said", markOpen, markClose, i); !strings.Contains(m, want) {
				t.Fatalf("round %d, text %d: %q, want %q in it", round, i, m, want)
			}
		}
		texts = texts[:marksPerInsert-1]
	}
}
