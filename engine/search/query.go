package search

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pipeline-dev/pipeline/engine/store"
)

// Query is a search: the user's words, and the filters.
type Query struct {
	// Text is the user's words: every word must match (in any order);
	// "quoted words" match as a phrase; a word ending in * matches as a
	// prefix. Nothing in it is FTS5 syntax: it cannot be a syntax error.
	Text string
	// Session keeps one session (its whole id).
	Session string
	// Phase keeps one phase.
	Phase string
	// Since keeps what was written at or after it (zero: all).
	Since time.Time
	// Limit is the number of hits at most (0: DefaultLimit).
	Limit int
}

// DefaultLimit is the number of hits a search returns unless asked.
const DefaultLimit = 20

// Hit is one document that matched, with the line of its best match.
type Hit struct {
	Session string `json:"session"`
	Phase   string `json:"phase,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	Step    string `json:"step,omitempty"`
	// Kind is transcript, prompt, note or working-set.
	Kind string `json:"kind"`
	// Section is, for a note, human or summary; for a working-set item,
	// the list it is in (decisions, open_tasks, files_touched...).
	Section string `json:"section,omitempty"`
	// Item is a note's number in its phase, or a working-set item's id.
	Item int `json:"item,omitempty"`
	// File is the transcript or prompt file, inside the session's
	// folder (transcripts/design/1-agent.log), or state.json.
	File string `json:"file"`
	// Line is the line of the file with the best match (transcripts and
	// prompts; 0 otherwise).
	Line int `json:"line,omitempty"`
	// Snippet is the text of that line (a JSON line's string values),
	// cut around the match; Marks are the matches in it, as byte offsets
	// [start, end).
	Snippet string   `json:"snippet"`
	Marks   [][2]int `json:"marks"`
	// Score is the BM25 relevance: higher is better.
	Score float64 `json:"score"`
	// At is when it was written: a transcript's or prompt's time when
	// the lines were indexed, a working-set item's own time, a note's
	// first sight.
	At time.Time `json:"at"`
	// Place is, in an agent's transcript, the line's turn and tool call
	// (see placer.go); its Line is 0 elsewhere.
	Place Place `json:"-"`
}

// Marked is the snippet with each match between the markers open and
// close.
func (h Hit) Marked(open, close string) string {
	var b strings.Builder
	last := 0
	for _, m := range h.Marks {
		b.WriteString(h.Snippet[last:m[0]])
		b.WriteString(open)
		b.WriteString(h.Snippet[m[0]:m[1]])
		b.WriteString(close)
		last = m[1]
	}
	b.WriteString(h.Snippet[last:])
	return b.String()
}

// ErrNoWords is a query with nothing to search for: no letter or digit.
var ErrNoWords = errors.New("the query has no words to search for (letters or digits)")

// MatchExpression turns the user's words into an FTS5 query: each word
// or quoted phrase becomes an FTS5 string (its quotes doubled), so that
// no character of it is FTS5 syntax; a word of punctuation alone is
// dropped (the tokenizer would find nothing in it). A query with no word
// left is ErrNoWords.
func MatchExpression(text string) (string, error) {
	terms := parseTerms(text)
	if len(terms) == 0 {
		return "", ErrNoWords
	}
	return expression(terms), nil
}

// term is a word or a quoted phrase of the user's, as FTS5 gets it; a
// prefix term matches the words its last word begins.
type term struct {
	text   string
	prefix bool
}

// parseTerms reads the user's words and phrases.
func parseTerms(text string) []term {
	// FTS5 reads its query as a C string: a NUL would end it inside a
	// quoted term. No control character is text to search for.
	text = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, text)
	var terms []term
	add := func(text string, prefix bool) {
		if hasWord(text) {
			terms = append(terms, term{text, prefix})
		}
	}
	rest := text
	for rest != "" {
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
		if rest == "" {
			break
		}
		if rest[0] == '"' {
			// A phrase, to the next quote (or the end).
			phrase, after, _ := strings.Cut(rest[1:], `"`)
			add(phrase, false)
			rest = after
			continue
		}
		end := strings.IndexFunc(rest, func(r rune) bool { return unicode.IsSpace(r) || r == '"' })
		if end < 0 {
			end = len(rest)
		}
		word := rest[:end]
		rest = rest[end:]
		word, prefix := strings.CutSuffix(word, "*")
		// A prefix of a word ending in punctuation means the word.
		add(word, prefix && endsInWord(word))
	}
	return terms
}

// expression is terms as an FTS5 query: each an FTS5 string, which FTS5
// reads as a phrase of the words the tokenizer finds in it.
func expression(terms []term) string {
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = `"` + strings.ReplaceAll(t.text, `"`, `""`) + `"`
		if t.prefix {
			quoted[i] += "*"
		}
	}
	return strings.Join(quoted, " ")
}

// words splits the phrases of terms into their words (at what is not a
// letter or digit, as the tokenizer does); phrase says whether a term
// had more than one.
func words(terms []term) (out []term, phrase bool) {
	for _, t := range terms {
		parts := strings.FieldsFunc(t.text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
		phrase = phrase || len(parts) > 1
		for i, p := range parts {
			out = append(out, term{p, t.prefix && i == len(parts)-1})
		}
	}
	return out, phrase
}

// hasWord tells whether s has a character the tokenizer keeps (letters
// and numbers; unicode61's token characters).
func hasWord(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }) >= 0
}

func endsInWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return unicode.IsLetter(r) || unicode.IsNumber(r)
}

// candidates bounds the matches a search scores: the most recent ones
// (the documents indexed last), of which the best Limit are returned. A
// word in every document would otherwise have every document scored
// before the best 20 are kept (300-440 ms at 1 GB); FTS5 walks the
// matches by rowid, newest first, and stops at the bound. A query with
// fewer matches has them all scored. Each of the index's databases
// scores its share, its most recent (see rank).
var candidates = 500 // a variable for the tests

// Find returns the hits of q, best first: the best by BM25 among the
// most recent matches (see candidates). It reads the index as it is:
// Update first to see what is new.
func (ix *Index) Find(ctx context.Context, q Query) ([]Hit, error) {
	terms := parseTerms(q.Text)
	if len(terms) == 0 {
		return nil, ErrNoWords
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	match := expression(terms)
	found, err := ix.rank(ctx, q, terms, limit)
	if err != nil {
		return nil, err
	}
	ix.times.done("rank: scores")
	return ix.hits(ctx, match, found)
}

// hits makes the documents found into hits: where each comes from, and
// its text, read from its file (or docs, for a note or working-set
// item), with the matches marked.
func (ix *Index) hits(ctx context.Context, match string, found []ranked) ([]Hit, error) {
	hits := make([]Hit, 0, len(found))
	texts := make([]string, 0, len(found))
	starts := make([]int64, 0, len(found))
	places := make([][]byte, 0, len(found))
	ids := make([][]int64, len(ix.shards))
	for _, r := range found {
		ids[r.shard] = append(ids[r.shard], r.id)
	}
	docs := make([]map[int64]foundDocument, len(ix.shards))
	for i, s := range ix.shards {
		var err error
		if docs[i], err = s.documents(ctx, ids[i]); err != nil {
			return nil, err
		}
	}
	files := chunkFiles{st: ix.st}
	defer files.close()
	for _, r := range found {
		d, ok := docs[r.shard][r.id]
		if !ok {
			return nil, fmt.Errorf("document %d: %w", r.id, sql.ErrNoRows)
		}
		text := d.stored
		if d.hit.Kind == KindTranscript || d.hit.Kind == KindPrompt {
			text = files.chunk(d.hit.Session, d.hit.File, d.offset, d.length)
		} else {
			d.places = nil
		}
		// FTS5's bm25() is lower for better: the score shown is higher.
		d.hit.Score = -r.score
		hits = append(hits, d.hit)
		texts = append(texts, text)
		starts = append(starts, d.line)
		places = append(places, d.places)
	}
	ix.times.done("rows and texts")
	// Any database's connection highlights: the table is in memory.
	marked, err := ix.shards[0].highlight(ctx, match, texts)
	if err != nil {
		return nil, err
	}
	ix.times.done("highlight")
	for i := range hits {
		best, offset := bestLine(marked[i])
		if starts[i] > 0 {
			hits[i].Line = int(starts[i]) + offset
		}
		if kept, ok := decodeChunkPlaces(places[i]); ok && places[i] != nil {
			turn, call, tool := kept.at(offset)
			hits[i].Place = Place{Line: hits[i].Line, Turn: turn, Call: call, Tool: tool}
		}
		hits[i].Snippet, hits[i].Marks = snippet(best, snippetBytes)
	}
	return hits, nil
}

// foundDocument is a document's row: line is the number of its first
// line in its file (0 for a note or working-set item), offset and length
// where it is in the file, stored its text when the index keeps it (a
// note's, a working-set item's), places its lines' places (a transcript
// chunk's).
type foundDocument struct {
	hit                  Hit
	line, offset, length int64
	stored               string
	places               []byte
}

// documentsPerQuery bounds the ids of one query of documents (one of
// SQLite's variables each, of 32,766 at most).
const documentsPerQuery = 500

// documents reads the rows of the documents ids, by one query for many
// (20 queries of one took 1.2-1.7 ms of CPU at 1 GB).
func (s *shard) documents(ctx context.Context, ids []int64) (map[int64]foundDocument, error) {
	docs := make(map[int64]foundDocument, len(ids))
	for start := 0; start < len(ids); start += documentsPerQuery {
		batch := ids[start:min(len(ids), start+documentsPerQuery)]
		args := make([]any, len(batch))
		for i, id := range batch {
			args[i] = id
		}
		rows, err := s.db.QueryContext(ctx, `SELECT d.id, d.session, d.phase, d.attempt, d.step, d.kind, d.section, d.item,
			d.line, d.at, d.offset, d.length, d.body, d.places, f.rel
			FROM docs d LEFT JOIN files f ON f.id = d.file WHERE d.id IN (`+strings.Repeat("?, ", len(batch)-1)+`?)`, args...)
		if err != nil {
			return nil, err
		}
		err = scanDocuments(rows, docs)
		rows.Close()
		if err != nil {
			return nil, err
		}
	}
	return docs, nil
}

// scanDocuments reads the rows of a query of documents into docs.
func scanDocuments(rows *sql.Rows, docs map[int64]foundDocument) error {
	for rows.Next() {
		var (
			id, at int64
			d      foundDocument
			file   sql.NullString
		)
		h := &d.hit
		if err := rows.Scan(&id, &h.Session, &h.Phase, &h.Attempt, &h.Step, &h.Kind, &h.Section, &h.Item,
			&d.line, &at, &d.offset, &d.length, &d.stored, &d.places, &file); err != nil {
			return err
		}
		h.File = file.String
		h.At = time.Unix(0, at)
		docs[id] = d
	}
	return rows.Err()
}

// chunkFiles reads chunks of transcripts and prompts, each file opened
// once for all the hits in it.
type chunkFiles struct {
	st   *store.Store
	open map[[2]string]*os.File // by session and file; nil: gone
}

// chunk is the text of a chunk of a transcript or prompt, read from its
// file; "" when the file is gone (the next search removes it from the
// index).
func (c *chunkFiles) chunk(session, rel string, offset, length int64) string {
	key := [2]string{session, rel}
	f, seen := c.open[key]
	if !seen {
		f, _ = c.st.OpenSessionFile(session, rel)
		if c.open == nil {
			c.open = map[[2]string]*os.File{}
		}
		c.open[key] = f
	}
	if f == nil {
		return ""
	}
	raw := make([]byte, length)
	n, err := f.ReadAt(raw, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	return string(chunkText(raw[:n]))
}

func (c *chunkFiles) close() {
	for _, f := range c.open {
		if f != nil {
			f.Close()
		}
	}
}

// highlight marks the matches of match in each text, as FTS5 finds them:
// the texts go to a full-text table in memory (temp.marks, of the same
// tokenizer) for highlight(). A text with no match (its file changed
// since it was indexed) comes back unmarked.
//
// The texts go in by one statement (20 of them by one statement each
// took 3.1 ms of CPU, by one 1.4 ms), and stay until the next highlight
// on the connection: deleting from an FTS5 table tokenizes each text
// again (1 ms), and a search's connection is closed after one (the
// table goes with it).
func (s *shard) highlight(ctx context.Context, match string, texts []string) ([]string, error) {
	out := slices.Clone(texts)
	if len(texts) == 0 {
		return out, nil
	}
	if _, err := s.db.ExecContext(ctx, `CREATE VIRTUAL TABLE IF NOT EXISTS temp.marks USING fts5(body,
		tokenize='unicode61 remove_diacritics 2')`); err != nil {
		return nil, err
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM temp.marks`); err != nil {
		return nil, err
	}
	for start := 0; start < len(texts); start += marksPerInsert {
		batch := texts[start:min(len(texts), start+marksPerInsert)]
		values := strings.Repeat("(?, ?), ", len(batch)-1) + "(?, ?)"
		args := make([]any, 0, 2*len(batch))
		for i, text := range batch {
			args = append(args, start+i, text)
		}
		if _, err := s.db.ExecContext(ctx, `INSERT INTO temp.marks(rowid, body) VALUES `+values, args...); err != nil {
			return nil, err
		}
	}
	rows, err := s.db.QueryContext(ctx, `SELECT rowid, highlight(marks, 0, char(1), char(2)) FROM temp.marks WHERE marks MATCH ?`, match)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			i      int
			marked string
		)
		if err := rows.Scan(&i, &marked); err != nil {
			return nil, err
		}
		out[i] = marked
	}
	return out, rows.Err()
}

// marksPerInsert bounds the texts of one statement that fills temp.marks
// (two of SQLite's variables each, of 32,766 at most).
const marksPerInsert = 500

// Markers of the matches in highlight()'s text: control characters,
// which the indexed text never holds (see appendPlain).
const (
	markOpen  = '\x01'
	markClose = '\x02'
)

// bestLine is the line of a highlighted text with the most matches (the
// first of those), and its index.
func bestLine(text string) (string, int) {
	best, bestIndex, bestCount := "", 0, -1
	for i := 0; text != "" || i == 0; i++ {
		line, rest, _ := strings.Cut(text, "\n")
		if n := strings.Count(line, string(markOpen)); n > bestCount {
			best, bestIndex, bestCount = line, i, n
		}
		text = rest
	}
	return best, bestIndex
}

// snippetBytes is about the length of a snippet: a line of a terminal.
const snippetBytes = 160

// snippet makes a line with highlight markers into its plain text, with
// runs of spaces as one, cut to about limit bytes around its first match,
// and the matches' byte offsets in it. A cut end shows as "…".
func snippet(line string, limit int) (string, [][2]int) {
	var (
		b     []byte
		marks [][2]int
		space = true // drop leading spaces
	)
	for i := 0; i < len(line); i++ {
		switch c := line[i]; c {
		case markOpen:
			marks = append(marks, [2]int{len(b), len(b)})
			space = false
		case markClose:
			if n := len(marks); n > 0 {
				marks[n-1][1] = len(b)
			}
		case ' ':
			if !space {
				b = append(b, ' ')
			}
			space = true
		default:
			b = append(b, c)
			space = false
		}
	}
	b = bytes.TrimRight(b, " ")
	if len(b) <= limit {
		return string(b), clipMarks(marks, 0, len(b))
	}
	// A window of max bytes that starts a little before the first match.
	start := 0
	if len(marks) > 0 {
		start = max(0, marks[0][0]-limit/4)
	}
	end := min(len(b), start+limit)
	if end == len(b) {
		start = max(0, end-limit)
	}
	start, end = runeStart(b, start), runeStart(b, end)
	// At a word's edge where one is near.
	if start > 0 {
		if i := bytes.IndexByte(b[start:min(start+20, end)], ' '); i >= 0 {
			start += i + 1
		}
	}
	if end < len(b) {
		if i := bytes.LastIndexByte(b[max(start, end-20):end], ' '); i >= 0 {
			end = max(start, end-20) + i
		}
	}
	out := make([]byte, 0, end-start+8)
	shift := -start
	if start > 0 {
		out = append(out, "…"...)
		shift += len("…")
	}
	out = append(out, b[start:end]...)
	if end < len(b) {
		out = append(out, "…"...)
	}
	kept := clipMarks(marks, start, end)
	for i := range kept {
		kept[i][0] += shift
		kept[i][1] += shift
	}
	return string(out), kept
}

// clipMarks keeps the marks within [start, end), cut to it.
func clipMarks(marks [][2]int, start, end int) [][2]int {
	out := [][2]int{}
	for _, m := range marks {
		m[0], m[1] = max(m[0], start), min(m[1], end)
		if m[0] < m[1] {
			out = append(out, m)
		}
	}
	return out
}

// runeStart moves i back to the start of the UTF-8 character it is in.
func runeStart(b []byte, i int) int {
	for i > 0 && i < len(b) && !utf8.RuneStart(b[i]) {
		i--
	}
	return i
}

// Result is what Search found.
type Result struct {
	Hits []Hit `json:"hits"`
	// Indexed is what the search indexed before it looked.
	Indexed Stats `json:"indexed"`
	// Rebuilt says why the index was built anew ("" if it was not).
	Rebuilt string `json:"rebuilt,omitempty"`
}

// Search brings the index of st up to date and finds q in it. An index
// found corrupt on the way (by SQLite, in the middle of an update or a
// query) is moved aside and rebuilt, once.
func Search(ctx context.Context, st *store.Store, q Query, o Options) (Result, error) {
	if _, err := MatchExpression(q.Text); err != nil {
		return Result{}, err
	}
	ix, err := Open(st, o)
	if err != nil {
		return Result{}, err
	}
	times := ix.times
	defer times.print()
	defer func() {
		ix.Close()
		times.done("close")
	}()
	var r Result
	for attempt := 1; ; attempt++ {
		stats, err := ix.Update(ctx)
		r.Indexed.add(stats)
		r.Indexed.Sessions = stats.Sessions
		times.done("update")
		if err == nil {
			r.Hits, err = ix.Find(ctx, q)
		}
		if err != nil && corrupt(err) && attempt == 1 {
			if err := ix.rebuild(fmt.Sprintf("is corrupt (%v)", err)); err != nil {
				return r, err
			}
			continue
		}
		r.Rebuilt = ix.Rebuilt
		if err != nil {
			return r, fmt.Errorf("searching %s: %w", ix.dir, err)
		}
		return r, nil
	}
}
