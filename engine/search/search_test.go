package search

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine/store"
)

// project is a store of sessions written as the runner writes them.
type project struct {
	t  testing.TB
	st *store.Store
}

// oneShard makes the indexes of the test one database each (see
// shardCount): for a test that reads the database itself.
func oneShard(t testing.TB) { databases(t, 1) }

// databases makes the new indexes of the test n databases each.
func databases(t testing.TB, n int) {
	was := shardCount
	shardCount = n
	t.Cleanup(func() { shardCount = was })
}

func newProject(t testing.TB) *project {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), ".pipeline"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &project{t: t, st: st}
}

// session makes a session with the status given (running ones keep an
// unfinished last line for later) and its state.
func (p *project) session(id, status string, state any) *store.Session {
	p.t.Helper()
	x, err := p.st.Create(store.Meta{ID: id, Key: "k-" + id, Pipeline: "p", Created: time.Now()})
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { x.Close() })
	p.snapshot(x, status, state)
	return x
}

func (p *project) snapshot(x *store.Session, status string, state any) {
	p.t.Helper()
	if state == nil {
		state = map[string]any{"phases": []any{}}
	}
	content, err := json.Marshal(state)
	if err != nil {
		p.t.Fatal(err)
	}
	if err := x.WriteSnapshot(1, content, store.Summary{ID: x.Meta.ID, Key: x.Meta.Key, Pipeline: "p", Status: status}); err != nil {
		p.t.Fatal(err)
	}
}

// write appends text to a step's transcript (or prompt file).
func (p *project) write(x *store.Session, phase string, attempt int, step string, prompt bool, text string) {
	p.t.Helper()
	var f interface {
		WriteString(string) (int, error)
		Close() error
	}
	var err error
	if prompt {
		f, err = x.CreatePrompt(phase, attempt, step)
	} else {
		f, err = x.CreateTranscript(phase, attempt, step)
	}
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		p.t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		p.t.Fatal(err)
	}
}

// completedSessions makes n completed sessions, s00 to s<n-1>, each with
// one build transcript of lines lines, line(i, j) the j-th of the i-th
// session's; it returns the bytes written.
func (p *project) completedSessions(n, lines int, line func(i, j int) string) int64 {
	p.t.Helper()
	var total int64
	for i := range n {
		x := p.session(fmt.Sprintf("s%02d", i), "completed", nil)
		var b strings.Builder
		for j := range lines {
			b.WriteString(line(i, j))
		}
		p.write(x, "build", 1, "agent", false, b.String())
		total += int64(b.Len())
	}
	return total
}

func (p *project) open() *Index {
	p.t.Helper()
	ix, err := Open(p.st, Options{})
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { ix.Close() })
	return ix
}

func update(t testing.TB, ix *Index) Stats {
	t.Helper()
	stats, err := ix.Update(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return stats
}

func find(t testing.TB, ix *Index, q Query) []Hit {
	t.Helper()
	hits, err := ix.Find(context.Background(), q)
	if err != nil {
		t.Fatalf("%+v: %v", q, err)
	}
	return hits
}

func files(hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.File)
	}
	return out
}

// BM25 puts first a document with the term more often, and of two with
// it as often, the shorter: the corpus is written so that each step of
// the expected order holds by one of the two alone.
func TestRankingIsBM25(t *testing.T) {
	p := newProject(t)
	x := p.session("s1", "completed", nil)
	filler := strings.Repeat("apple pear plum fig kiwi lime ", 5)
	p.write(x, "a", 1, "agent", false, "zebra zebra zebra apple\n")             // tf 3, 4 words
	p.write(x, "b", 1, "agent", false, "zebra zebra apple pear plum fig\n")     // tf 2, 6 words
	p.write(x, "c", 1, "agent", false, "zebra apple pear plum fig kiwi lime\n") // tf 1, 7 words
	p.write(x, "d", 1, "agent", false, "zebra "+filler+"\n")                    // tf 1, 31 words
	p.write(x, "e", 1, "agent", false, filler+"\n")                             // no zebra
	ix := p.open()
	update(t, ix)
	hits := find(t, ix, Query{Text: "zebra"})
	want := []string{"transcripts/a/1-agent.log", "transcripts/b/1-agent.log", "transcripts/c/1-agent.log", "transcripts/d/1-agent.log"}
	if got := files(hits); !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Score >= hits[i-1].Score {
			t.Errorf("scores not decreasing: %v then %v", hits[i-1].Score, hits[i].Score)
		}
	}
	// kiwi: five times in e (30 words) and in d (31 words), once in c.
	hits = find(t, ix, Query{Text: "kiwi"})
	if got := files(hits); !slices.Equal(got, []string{"transcripts/e/1-agent.log", "transcripts/d/1-agent.log", "transcripts/c/1-agent.log"}) {
		t.Errorf("kiwi: %v", got)
	}
}

// A hit names the line of its best match inside its chunk, and its
// snippet is the text of that line, a JSON line's strings without keys.
func TestHitLineAndSnippet(t *testing.T) {
	p := newProject(t)
	x := p.session("s1", "completed", nil)
	p.write(x, "design", 2, "agent", false, `plain first line
{"event":"init","subtype":"start","session_id":"abc"}
{"type":"assistant","message":{"content":[{"type":"text","text":"the \"quoted\" walrus\nsays hi \u00e9t\u00e9 \ud83d\ude00"}]}}
a walrus, and another walrus here
last line
`)
	p.write(x, "design", 2, "agent", true, "Design it.\n\n----- the next prompt -----\nwalrus in the prompt\n")
	ix := p.open()
	update(t, ix)
	hits := find(t, ix, Query{Text: "walrus"})
	if len(hits) != 2 {
		t.Fatalf("%d hits: %+v", len(hits), hits)
	}
	byKind := map[string]Hit{}
	for _, h := range hits {
		byKind[h.Kind] = h
	}
	tr := byKind[KindTranscript]
	if tr.Session != "s1" || tr.Phase != "design" || tr.Attempt != 2 || tr.Step != "agent" || tr.Line != 4 {
		t.Errorf("transcript hit %+v, want s1 design attempt 2 agent line 4 (the line with two matches)", tr)
	}
	if got := tr.Marked("[", "]"); got != "a [walrus], and another [walrus] here" {
		t.Errorf("snippet %q", got)
	}
	pr := byKind[KindPrompt]
	if pr.Line != 4 || pr.File != "transcripts/design/2-agent.prompt" {
		t.Errorf("prompt hit %+v", pr)
	}
	hits = find(t, ix, Query{Text: `"quoted walrus"`})
	if len(hits) != 1 || hits[0].Line != 3 {
		t.Fatalf("phrase: %+v", hits)
	}
	// FTS5 marks a phrase as one span.
	// An agent's line is what was said, without the JSON's other strings.
	if got := hits[0].Marked("[", "]"); got != `the "[quoted" walrus] says hi été 😀` {
		t.Errorf("JSON line's snippet %q", got)
	}
	// Keys are not indexed; values are (of a JSON line of no agent).
	if hits := find(t, ix, Query{Text: "subtype"}); len(hits) != 0 {
		t.Errorf("a key was indexed: %+v", hits)
	}
	if hits := find(t, ix, Query{Text: "init"}); len(hits) != 1 || hits[0].Line != 2 {
		t.Errorf("a value: %+v", hits)
	}
	// Diacritics are folded: ete finds été.
	if hits := find(t, ix, Query{Text: "ete"}); len(hits) != 1 {
		t.Errorf("ete: %+v", hits)
	}
}

// A search indexes only the bytes appended since the last one; a new
// session is indexed, a removed one leaves the index; a file that shrank
// is indexed again whole.
func TestIncrementalIndexing(t *testing.T) {
	p := newProject(t)
	x := p.session("s1", "running", nil)
	first := "alpha one\nalpha two\n"
	p.write(x, "build", 1, "agent", false, first)
	ix := p.open()
	stats := update(t, ix)
	if stats.Bytes != int64(len(first)) || stats.Files != 2 || stats.Chunks != 1 {
		// Files: the transcript and state.json (no documents in it).
		t.Fatalf("first update %+v, want %d bytes, 2 files, 1 chunk", stats, len(first))
	}
	if stats := update(t, ix); stats != (Stats{Sessions: 1}) {
		t.Errorf("nothing new, yet %+v", stats)
	}

	more := "bravo three\nbravo four\n"
	p.write(x, "build", 1, "agent", false, more)
	stats = update(t, ix)
	if stats.Bytes != int64(len(more)) || stats.Files != 1 || stats.Chunks != 1 {
		t.Errorf("after appending %d bytes: %+v", len(more), stats)
	}
	if hits := find(t, ix, Query{Text: "bravo four"}); len(hits) != 1 || hits[0].Line != 4 {
		t.Errorf("appended lines: %+v", hits)
	}
	if hits := find(t, ix, Query{Text: "alpha"}); len(hits) != 1 || hits[0].Line != 1 {
		t.Errorf("the first lines, once: %+v", hits)
	}

	// A line being written (no line break yet) waits for its end, while
	// the session runs.
	p.write(x, "build", 1, "agent", false, "charlie fi")
	if stats := update(t, ix); stats.Bytes != 0 {
		t.Errorf("half a line indexed: %+v", stats)
	}
	p.write(x, "build", 1, "agent", false, "ve\n")
	stats = update(t, ix)
	if stats.Bytes != int64(len("charlie five\n")) {
		t.Errorf("the line finished: %+v", stats)
	}
	if hits := find(t, ix, Query{Text: "five"}); len(hits) != 1 || hits[0].Line != 5 {
		t.Errorf("the finished line: %+v", hits)
	}

	// A new session: only its bytes.
	y := p.session("s2", "completed", nil)
	p.write(y, "build", 1, "agent", false, "delta six\n")
	stats = update(t, ix)
	if stats.Bytes != int64(len("delta six\n")) || stats.Sessions != 2 {
		t.Errorf("new session: %+v", stats)
	}
	if hits := find(t, ix, Query{Text: "delta"}); len(hits) != 1 || hits[0].Session != "s2" {
		t.Errorf("new session's hit: %+v", hits)
	}
	// A finished session's last line needs no line break.
	p.write(y, "build", 1, "agent", false, "echo seven")
	if stats := update(t, ix); stats.Bytes != int64(len("echo seven")) {
		t.Errorf("a finished session's last line: %+v", stats)
	}

	// A file cut and written again is indexed whole.
	path := x.TranscriptPath("build", 1, "agent")
	if err := os.WriteFile(path, []byte("foxtrot only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stats = update(t, ix)
	if stats.Bytes != int64(len("foxtrot only\n")) {
		t.Errorf("a shrunk file: %+v", stats)
	}
	if hits := find(t, ix, Query{Text: "alpha"}); len(hits) != 0 {
		t.Errorf("the old content stays: %+v", hits)
	}
	// A file replaced by another (a new inode) of a greater size too.
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte("golf eight\ngolf nine and more text\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	update(t, ix)
	if hits := find(t, ix, Query{Text: "foxtrot"}); len(hits) != 0 {
		t.Errorf("the replaced file's content stays: %+v", hits)
	}
	if hits := find(t, ix, Query{Text: "golf nine"}); len(hits) != 1 || hits[0].Line != 2 {
		t.Errorf("the replacing file: %+v", hits)
	}

	// A removed session leaves the index.
	x.Close()
	if err := p.st.Remove("s1"); err != nil {
		t.Fatal(err)
	}
	stats = update(t, ix)
	if stats.Removed != 1 || stats.Sessions != 1 {
		t.Errorf("removal: %+v", stats)
	}
	if hits := find(t, ix, Query{Text: "golf"}); len(hits) != 0 {
		t.Errorf("a removed session's hits: %+v", hits)
	}
	if err := ix.Check(context.Background()); err != nil {
		t.Error(err)
	}
}

// A large file is indexed in several transactions, and whole.
func TestLargeFileInBatches(t *testing.T) {
	defer func(was int64) { batchBytes = was }(batchBytes)
	batchBytes = 64 << 10
	p := newProject(t)
	x := p.session("s1", "completed", nil)
	var b strings.Builder
	for i := 0; int64(b.Len()) < 3*batchBytes+batchBytes/2; i++ {
		fmt.Fprintf(&b, `{"type":"text","text":"line %d of a long transcript with words enough to fill it %s"}`+"\n", i, strings.Repeat("x", 200))
	}
	b.WriteString("the needle at the end\n")
	p.write(x, "build", 1, "agent", false, b.String())
	ix := p.open()
	stats := update(t, ix)
	if stats.Bytes != int64(b.Len()) {
		t.Fatalf("%+v, want %d bytes", stats, b.Len())
	}
	lines := strings.Count(b.String(), "\n")
	if hits := find(t, ix, Query{Text: "needle"}); len(hits) != 1 || hits[0].Line != lines {
		t.Errorf("the last line: %+v, want line %d", hits, lines)
	}
}

func TestNotesAndWorkingSet(t *testing.T) {
	p := newProject(t)
	old := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	state := map[string]any{
		"phases": []any{
			map[string]any{"name": "design", "notes": []string{"keep the kiwi schema"}, "summary": "designed the kiwi API"},
		},
		"working_set": map[string]any{
			"decisions":     []any{map[string]any{"id": 7, "text": "use kiwi for the cache", "phase": "design", "at": old, "source": "agent"}},
			"open_tasks":    []any{map[string]any{"id": 8, "text": "benchmark the cache", "phase": "design", "at": time.Now(), "source": "human"}},
			"files_touched": []any{map[string]any{"path": "internal/kiwi/cache.go", "phase": "design", "at": time.Now()}},
		},
	}
	x := p.session("s1", "paused", state)
	ix := p.open()
	update(t, ix)
	hits := find(t, ix, Query{Text: "kiwi"})
	got := map[string]Hit{}
	for _, h := range hits {
		got[h.Kind+"/"+h.Section] = h
	}
	if h := got["note/human"]; h.Phase != "design" || h.Item != 1 || h.Snippet != "keep the kiwi schema" || h.File != "state.json" {
		t.Errorf("human note: %+v", h)
	}
	if h := got["note/summary"]; h.Snippet != "designed the kiwi API" {
		t.Errorf("summary: %+v", h)
	}
	if h := got["working-set/decisions"]; h.Item != 7 || !h.At.Equal(old) {
		t.Errorf("decision: %+v", h)
	}
	if h := got["working-set/files_touched"]; h.Snippet != "internal/kiwi/cache.go" {
		t.Errorf("file touched: %+v", h)
	}
	// --since: the decision is older.
	since := find(t, ix, Query{Text: "kiwi", Since: old.Add(time.Hour)})
	if len(since) != len(hits)-1 {
		t.Errorf("since: %d hits of %d", len(since), len(hits))
	}
	noted := got["note/human"].At

	// A new note: the state is indexed again; the old note keeps its time.
	state["phases"].([]any)[0].(map[string]any)["notes"] = []string{"keep the kiwi schema", "and the kiwi names"}
	p.snapshot(x, "paused", state)
	if stats := update(t, ix); stats.Files != 1 {
		t.Errorf("state changed: %+v", stats)
	}
	hits = find(t, ix, Query{Text: "kiwi", Phase: "design"})
	var notes []Hit
	for _, h := range hits {
		if h.Kind == KindNote && h.Section == "human" {
			notes = append(notes, h)
		}
	}
	if len(notes) != 2 {
		t.Fatalf("notes: %+v", notes)
	}
	for _, n := range notes {
		if n.Item == 1 && !n.At.Equal(noted) {
			t.Errorf("the first note's time moved: %v, was %v", n.At, noted)
		}
	}
	if hits := find(t, ix, Query{Text: "kiwi", Phase: "other"}); len(hits) != 0 {
		t.Errorf("--phase other: %+v", hits)
	}
}

func TestFilters(t *testing.T) {
	p := newProject(t)
	for _, id := range []string{"s1", "s2"} {
		x := p.session(id, "completed", nil)
		p.write(x, "design", 1, "agent", false, "mango in design of "+id+"\n")
		p.write(x, "build", 1, "agent", false, "mango in build of "+id+"\n")
	}
	ix := p.open()
	update(t, ix)
	check := func(q Query, want int) {
		t.Helper()
		hits := find(t, ix, q)
		if len(hits) != want {
			t.Errorf("%+v: %d hits, want %d", q, len(hits), want)
		}
		for _, h := range hits {
			if q.Session != "" && h.Session != q.Session || q.Phase != "" && h.Phase != q.Phase {
				t.Errorf("%+v: hit %+v", q, h)
			}
		}
	}
	check(Query{Text: "mango"}, 4)
	check(Query{Text: "mango", Session: "s2"}, 2)
	check(Query{Text: "mango", Phase: "build"}, 2)
	check(Query{Text: "mango", Session: "s1", Phase: "design"}, 1)
	check(Query{Text: "mango", Since: time.Now().Add(time.Hour)}, 0)
	check(Query{Text: "mango", Since: time.Now().Add(-time.Hour)}, 4)
	check(Query{Text: "mango", Limit: 3}, 3)
	check(Query{Text: "mang*"}, 4)
	check(Query{Text: "mang"}, 0)
}

// No query is an FTS5 syntax error: what FTS5 reads as syntax is quoted.
func TestQueriesAreNeverSyntax(t *testing.T) {
	p := newProject(t)
	x := p.session("s1", "completed", nil)
	p.write(x, "design", 1, "agent", false, "AND OR NOT NEAR body col value a-b c_d e.f\n")
	ix := p.open()
	update(t, ix)
	for _, q := range []string{`"`, `a"b`, `AND`, `OR NOT`, `NEAR(a b)`, `body:value`, `a*b`, `(value`, `^value`, `-value`,
		`+value`, `value AND`, `"unterminated value`, `{body}:value`, `ü`, `日本`, `a-b`, `c_d`, `e.f*`, `'value'`, `value*`, `**`, `"*"`, `NOT value`} {
		if _, err := ix.Find(context.Background(), Query{Text: q}); err != nil && !errors.Is(err, ErrNoWords) {
			t.Errorf("%q: %v", q, err)
		}
	}
	for _, q := range []string{`!!!`, `"" ''`, `*`, ` `, `-- ::`, `"*"`} {
		if _, err := MatchExpression(q); !errors.Is(err, ErrNoWords) {
			t.Errorf("%q: %v, want ErrNoWords", q, err)
		}
	}
	for q, want := range map[string]int{`AND`: 1, `NOT value`: 1, `a-b`: 1, `"c d"`: 1, `e.f*`: 1, `NEAR`: 1, `col:value`: 1, `body:value`: 0} {
		if hits := find(t, ix, Query{Text: q}); len(hits) != want {
			t.Errorf("%q: %d hits, want %d", q, len(hits), want)
		}
	}
}

func FuzzQuery(f *testing.F) {
	p := newProject(f)
	x := p.session("s1", "completed", nil)
	p.write(x, "design", 1, "agent", false, "AND OR NOT NEAR body col value a-b c_d e.f\n")
	ix := p.open()
	update(f, ix)
	for _, seed := range []string{`"`, `NEAR(a b)`, `body:value`, `a*b`, `"x" OR "y"`, `^*`, "\x00", `""""`, `a "b c" d*`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if _, err := ix.Find(context.Background(), Query{Text: q}); err != nil && !errors.Is(err, ErrNoWords) {
			t.Fatalf("%q: %v", q, err)
		}
	})
}

// The index, deleted or damaged under the tool, is built again from the
// sessions, with the same hits; a damaged database is moved aside, with
// one line saying so, and only its files are indexed again: the other
// database is whole, and kept.
func TestIndexDeletedOrCorruptIsRebuilt(t *testing.T) {
	databases(t, 2)
	p := newProject(t)
	p.completedSessions(12, 120, func(i, j int) string {
		return fmt.Sprintf(`{"type":"text","text":"session %d line %d quokka %s"}`+"\n", i, j, strings.Repeat("filler words ", j%7))
	})
	search := func() (Result, string) {
		t.Helper()
		var warn bytes.Buffer
		r, err := Search(context.Background(), p.st, Query{Text: "quokka", Limit: 40}, Options{Warn: &warn})
		if err != nil {
			t.Fatal(err)
		}
		return r, warn.String()
	}
	want, _ := search()
	if len(want.Hits) != 40 {
		t.Fatalf("%d hits", len(want.Hits))
	}
	path := Path(p.st.Root)
	damage := map[string]func(t *testing.T){
		"deleted": func(t *testing.T) {
			if err := os.RemoveAll(filepath.Dir(path)); err != nil {
				t.Fatal(err)
			}
		},
		"random bytes": func(t *testing.T) {
			info, _ := os.Stat(path)
			garbage := make([]byte, info.Size())
			rand.Read(garbage)
			os.WriteFile(path, garbage, 0o600)
		},
		"cut mid-page": func(t *testing.T) {
			info, _ := os.Stat(path)
			os.Truncate(path, info.Size()/2+100)
		},
		"zero length": func(t *testing.T) { os.Truncate(path, 0) },
		"pages overwritten, header whole": func(t *testing.T) {
			content, _ := os.ReadFile(path)
			rand.Read(content[4096:])
			os.WriteFile(path, content, 0o600)
		},
		"cut at a page": func(t *testing.T) {
			info, _ := os.Stat(path)
			os.Truncate(path, info.Size()/2/4096*4096)
		},
	}
	for name, spoil := range damage {
		t.Run(name, func(t *testing.T) {
			again := indexedIn(t, p, 0)
			if name == "deleted" {
				again = want.Indexed.Bytes
			}
			if again == 0 || again > want.Indexed.Bytes || name != "deleted" && again == want.Indexed.Bytes {
				t.Fatalf("index.db holds %d bytes of files, of %d: want a part", again, want.Indexed.Bytes)
			}
			spoil(t)
			got, warn := search()
			if !sameHits(got.Hits, want.Hits) {
				t.Errorf("other hits after a rebuild:\n%+v\nwant\n%+v", got.Hits, want.Hits)
			}
			if got.Indexed.Bytes != again {
				t.Errorf("indexed %d bytes, want those of the database rebuilt again (%d)", got.Indexed.Bytes, again)
			}
			if name == "deleted" {
				if warn != "" || got.Rebuilt != "" {
					t.Errorf("a deleted index is built quietly; got %q, %q", warn, got.Rebuilt)
				}
				return
			}
			if strings.Count(warn, "\n") != 1 || !strings.Contains(warn, "rebuilding") || got.Rebuilt == "" {
				t.Errorf("warning %q, rebuilt %q", warn, got.Rebuilt)
			}
			if _, err := os.Stat(path + asideSuffix); err != nil {
				t.Errorf("not moved aside: %v", err)
			}
			ix := p.open()
			if err := ix.Check(context.Background()); err != nil {
				t.Error(err)
			}
			ix.Close()
		})
	}
}

// indexedIn is how many bytes of files database i of the index holds.
func indexedIn(t *testing.T, p *project, i int) int64 {
	t.Helper()
	ix := p.open()
	defer ix.Close()
	var n int64
	if err := ix.shards[i].db.QueryRow(`SELECT coalesce(sum(offset), 0) FROM files`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func sameHits(a, b []Hit) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		a[i].At, b[i].At = time.Time{}, time.Time{}
		if fmt.Sprint(a[i]) != fmt.Sprint(b[i]) {
			return false
		}
	}
	return true
}

// Two searches updating the index at once index each line once, and
// leave it whole.
func TestTwoUpdatesAtOnce(t *testing.T) {
	p := newProject(t)
	total := p.completedSessions(20, 300, func(i, j int) string { return fmt.Sprintf("session %d line %d wombat\n", i, j) })
	a, b := p.open(), p.open()
	var wg sync.WaitGroup
	stats := make([]Stats, 2)
	errs := make([]error, 2)
	for i, ix := range []*Index{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stats[i], errs[i] = ix.Update(context.Background())
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if got := stats[0].Bytes + stats[1].Bytes; got != total {
		t.Errorf("the two indexed %d + %d bytes, want %d in all (each once)", stats[0].Bytes, stats[1].Bytes, total)
	}
	docs, _, err := a.Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if hits := find(t, a, Query{Text: "wombat", Session: "s07", Limit: 1000}); len(hits) != (300+chunkLines-1)/chunkLines {
		t.Errorf("s07: %d chunks", len(hits))
	}
	if err := a.Check(context.Background()); err != nil {
		t.Error(err)
	}
	if docs == 0 {
		t.Error("no documents")
	}
}

// removeIndex deletes the index's folder.
func removeIndex(t testing.TB, p *project) {
	t.Helper()
	if err := os.RemoveAll(filepath.Dir(Path(p.st.Root))); err != nil {
		t.Fatal(err)
	}
}
