package search

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An index of two databases scores every match as an index of one does
// (where the counts are exact): the ranking sums the databases' rows,
// lengths and documents of each phrase, so a score does not depend on
// the database its document is in; with a filter too. Both databases
// hold documents, and an update after it indexes nothing twice.
func TestShardsScoreAsOneIndex(t *testing.T) {
	p := newProject(t)
	for s := range 4 {
		x := p.session(fmt.Sprintf("s%d", s), "completed", nil)
		for i, phase := range []string{"build", "test", "review"} {
			var b strings.Builder
			for j := range 40 + 30*s + 7*i {
				words := []string{"line", fmt.Sprint(j), "of", phase}
				for _, w := range []struct {
					word string
					in   bool
				}{{"zebra", j%5 == 0}, {"kiwi", (j+s)%7 == 0}, {"apple", j%3 == 0}, {"fig", (j*s+i)%11 == 1},
					{"apple pear", (j+s)%4 == 0}, {"lime", (j+i)%9 == 2}, {"pear zebra", (j*i+s)%13 == 3}} {
					if w.in {
						words = append(words, w.word)
					}
				}
				b.WriteString(strings.Join(words, " ") + "\n")
			}
			p.write(x, phase, 1, "agent", false, b.String())
		}
	}
	queries := []Query{{Text: "zebra"}, {Text: "kiwi apple"}, {Text: `"apple pear"`}, {Text: `"pear zebra" fig`},
		{Text: "lime", Phase: "test"}, {Text: "zebra*", Session: "s2"}}
	scores := func(shards int) []map[string]float64 {
		t.Helper()
		defer func(was int) { shardCount = was }(shardCount)
		shardCount = shards
		if err := os.RemoveAll(filepath.Join(p.st.Root, FolderName)); err != nil {
			t.Fatal(err)
		}
		ix := p.open()
		defer ix.Close()
		update(t, ix)
		for i, s := range ix.shards {
			var docs int
			if err := s.db.QueryRow(`SELECT count(*) FROM docs`).Scan(&docs); err != nil || docs == 0 {
				t.Fatalf("%d databases: database %d holds %d documents (%v)", shards, i, docs, err)
			}
		}
		var out []map[string]float64
		for _, q := range queries {
			q.Limit = 10000
			got := map[string]float64{}
			for _, h := range find(t, ix, q) {
				got[fmt.Sprintf("%s/%s:%d", h.Session, h.File, h.Line)] = h.Score
			}
			if len(got) == 0 {
				t.Fatalf("%+v: no hits", q)
			}
			out = append(out, got)
		}
		if stats := update(t, ix); stats.Bytes != 0 {
			t.Errorf("%d databases: indexed again %+v", shards, stats)
		}
		return out
	}
	one, two := scores(1), scores(2)
	for i, q := range queries {
		if len(one[i]) != len(two[i]) {
			t.Errorf("%+v: %d hits in one database, %d in two", q, len(one[i]), len(two[i]))
		}
		for hit, want := range one[i] {
			if got, ok := two[i][hit]; !ok || !(math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want))) {
				t.Errorf("%+v: %s scored %v in two databases, %v in one", q, hit, got, want)
			}
		}
	}
}
