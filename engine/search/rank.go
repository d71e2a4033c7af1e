package search

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
)

// ranked is a match's document (its id in its database) and its BM25
// score (FTS5's sign: lower is better).
type ranked struct {
	shard int
	id    int64
	score float64
}

// BM25's constants, FTS5's bm25() defaults.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// rank finds the best limit documents among the most recent matches of
// terms that pass q's filters, by BM25 as FTS5's bm25() computes it, but
// for how many documents each phrase is in, which bm25() counts over the
// whole index before it scores the first match (for a common word, its
// whole list of documents; for a phrase, the phrase's query over every
// document with its words: 54 ms at 1 GB). Here that count is read from
// the phrase's most recent matches (see documentFrequencies): exact when
// it has fewer than candidates of them, estimated from how densely they
// fill the newest documents otherwise. The rest is what bm25() reads of
// each match (statsFunction): the phrases' counts in it, its length; and
// the index's rows and average length.
//
// Each database of the index is asked at once for its most recent
// matches and its counts; the matches of all are scored with the sums
// (rows, lengths, documents of each phrase), as if the index were one:
// a score does not depend on the database its document is in.
//
// A phrase of several words is scored as a phrase and as its words: a
// document with the phrase twice is above one with it once, and of two
// with it once each, the one with more of its rarer word is first.
func (ix *Index) rank(ctx context.Context, q Query, terms []term, limit int) ([]ranked, error) {
	scoring := scoringTerms(terms)
	// The candidates are shared out: each database scores as many of its
	// most recent matches, which together are as many as one would.
	bound := max((candidates+len(ix.shards)-1)/len(ix.shards), limit)
	parts := make([]shardMatches, len(ix.shards))
	err := ix.eachShard(func(i int, s *shard) error {
		var err error
		parts[i], err = s.matches(ctx, q, terms, scoring, bound)
		return err
	})
	if err != nil {
		return nil, err
	}
	ix.times.done("rank: matches and document frequencies")
	var (
		found        []ranked
		rows, tokens int64
		docs         = make([]float64, len(scoring))
	)
	for _, p := range parts {
		rows, tokens = rows+p.rows, tokens+p.tokens
		for i, n := range p.docs {
			docs[i] += n
		}
	}
	for i, p := range parts {
		for _, m := range p.found {
			m.rows, m.tokens = rows, tokens
			found = append(found, ranked{i, m.id, -bm25(m, docs)})
		}
	}
	// Stable: of equal scores, the newest of a database first.
	slices.SortStableFunc(found, func(a, b ranked) int { return cmp.Compare(a.score, b.score) })
	return found[:min(limit, len(found))], nil
}

// eachShard runs fn on each database of the index at once, and returns
// the first error.
func (ix *Index) eachShard(fn func(i int, s *shard) error) error {
	errs := make([]error, len(ix.shards))
	var wg sync.WaitGroup
	for i, s := range ix.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(i, s)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// shardMatches is what one database has of a query: its most recent
// matches, how many of its documents each scoring term is in, and its
// rows and tokens.
type shardMatches struct {
	found        []match
	docs         []float64
	rows, tokens int64
}

// matches reads the database's most recent matches of terms (with their
// statistics), its counts of documents of each scoring term, and its
// totals. A database with no match still counts: its rows are the
// index's, and its documents with a term.
func (s *shard) matches(ctx context.Context, q Query, terms, scoring []term, bound int) (shardMatches, error) {
	var out shardMatches
	found, sample, err := s.recentMatches(ctx, q, expression(scoring), bound)
	if err != nil {
		return out, err
	}
	out.found = found
	if out.rows, out.tokens, err = s.totals(ctx); err != nil {
		return out, err
	}
	// The first term of a query of one has the documents of the query
	// (the words added are its own): its sample is the walk's.
	var samples []matchSample
	if len(terms) == 1 {
		samples = []matchSample{sample}
	}
	out.docs, err = s.documentFrequencies(ctx, scoring, samples, bound, float64(out.rows))
	return out, err
}

// averagesID is the rowid of FTS5's record of the table's rows and
// tokens (its "averages": FTS5_AVERAGES_ROWID in fts5Int.h) in
// text_data: varints, the rows then the tokens of each column.
const averagesID = 1

// totals reads the database's rows and tokens from FTS5's record of
// them, as FTS5's bm25() reads them.
func (s *shard) totals(ctx context.Context) (rows, tokens int64, err error) {
	var record []byte
	err = s.db.QueryRowContext(ctx, `SELECT block FROM text_data WHERE id = ?`, averagesID).Scan(&record)
	if errors.Is(err, sql.ErrNoRows) || err == nil && len(record) == 0 {
		return 0, 0, nil // nothing indexed yet
	}
	if err != nil {
		return 0, 0, err
	}
	r, n := sqliteVarint(record)
	t, m := sqliteVarint(record[n:])
	if n == 0 || m == 0 {
		return 0, 0, fmt.Errorf("the search index %s: FTS5's totals are not readable (%d bytes)", s.path, len(record))
	}
	return int64(r), int64(t), nil
}

// sqliteVarint decodes one of SQLite's varints (big-endian, 7 bits a
// byte, the ninth byte whole); n is 0 when b ends first.
func sqliteVarint(b []byte) (v uint64, n int) {
	for i := 0; i < len(b) && i < 9; i++ {
		if i == 8 {
			return v<<8 | uint64(b[i]), 9
		}
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

// matchSample is what a walk of a term's matches, newest first, saw of
// its first bound: count of them, the oldest's id.
type matchSample struct {
	count  int
	oldest int64
}

// recentMatches reads the most recent matches of expr, newest first,
// with statsFunction's statistics, and keeps up to bound of those that
// pass q's filters. sample is of the first bound matches, filtered or
// not: the walk reads them all (with the statistics of those that pass),
// then, if it needs more, goes on from the oldest of them with SQLite
// keeping only those that pass (a filter that passes few would otherwise
// bring every match to this side).
func (s *shard) recentMatches(ctx context.Context, q Query, expr string, bound int) (kept []match, sample matchSample, err error) {
	from, passes, args := filters(q)
	stats := statsFunction + `(text)`
	if len(args) > 0 {
		stats = `CASE WHEN ` + passes + ` THEN ` + stats + ` END`
	}
	first := append(slices.Clone(args), expr, bound)
	kept, err = s.walkMatches(ctx, kept, &sample, `SELECT text.rowid, `+stats+` FROM `+from+`
		WHERE text MATCH ? ORDER BY text.rowid DESC LIMIT ?`, first...)
	if err != nil || len(args) == 0 || sample.count < bound || len(kept) >= bound {
		return kept, sample, err
	}
	rest := append([]any{expr}, args...)
	rest = append(rest, sample.oldest, bound-len(kept))
	kept, err = s.walkMatches(ctx, kept, nil, `SELECT text.rowid, `+statsFunction+`(text) FROM `+from+`
		WHERE text MATCH ? AND `+passes+` AND text.rowid < ? ORDER BY text.rowid DESC LIMIT ?`, rest...)
	return kept, sample, err
}

// walkMatches runs a query of ids and statsFunction's blobs (NULL: a
// match that does not pass the filters), appends those with a blob to
// kept, and counts every row in sample (when not nil).
func (s *shard) walkMatches(ctx context.Context, kept []match, sample *matchSample, query string, args ...any) ([]match, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var (
		blob   sql.RawBytes // SQLite's own, valid until the next row
		counts []int64      // of every match kept here, one after the other
	)
	for rows.Next() {
		var m match
		if err := rows.Scan(&m.id, &blob); err != nil {
			return nil, err
		}
		if sample != nil {
			sample.count++
			sample.oldest = m.id
		}
		if blob != nil {
			start := len(counts)
			m.rows, m.tokens, m.docTokens, counts = appendMatchStats(counts, blob)
			m.counts = counts[start:len(counts):len(counts)]
			kept = append(kept, m)
		}
	}
	return kept, rows.Err()
}

// filters is the FROM of a query with q's filters, and the condition
// that they pass (its arguments in args; none without a filter). Without a filter the
// full-text table alone is read: a join would look up every match's row
// in docs.
func filters(q Query) (from, passes string, args []any) {
	var conditions []string
	if q.Session != "" {
		conditions, args = append(conditions, "d.session = ?"), append(args, q.Session)
	}
	if q.Phase != "" {
		conditions, args = append(conditions, "d.phase = ?"), append(args, q.Phase)
	}
	if !q.Since.IsZero() {
		conditions, args = append(conditions, "d.at >= ?"), append(args, q.Since.UnixNano())
	}
	if len(conditions) == 0 {
		return "text", "", nil
	}
	return "text JOIN docs d ON d.id = text.rowid", "(" + strings.Join(conditions, " AND ") + ")", args
}

// match is a matching document and what statsFunction read of it.
type match struct {
	id                      int64
	rows, tokens, docTokens int64
	counts                  []int64 // of each phrase of the query
}

// bm25 is FTS5's bm25() of m (higher is better), with docs[i] the
// documents phrase i is in, computed in the order bm25() computes it.
func bm25(m match, docs []float64) float64 {
	if m.rows == 0 {
		return 0
	}
	rows, avgdl, d := float64(m.rows), float64(m.tokens)/float64(m.rows), float64(m.docTokens)
	score := 0.0
	for i, n := range docs {
		idf := math.Log((rows - n + 0.5) / (n + 0.5))
		if idf <= 0 {
			idf = 1e-6
		}
		f := 0.0
		if i < len(m.counts) {
			f = float64(m.counts[i])
		}
		score += idf * (f * (bm25K1 + 1)) / (f + bm25K1*(1-bm25B+bm25B*d/avgdl))
	}
	return score
}

// scoringTerms are the terms a query is scored by: its own, then each
// word of its phrases that is not a term already.
func scoringTerms(terms []term) []term {
	out := slices.Clone(terms)
	seen := map[term]bool{}
	for _, t := range terms {
		seen[normalTerm(t)] = true
	}
	for _, t := range terms {
		split, phrase := words([]term{t})
		if !phrase {
			continue
		}
		for _, w := range split {
			if key := normalTerm(w); !seen[key] {
				seen[key] = true
				out = append(out, w)
			}
		}
	}
	return out
}

// normalTerm is t as the tokenizer would compare it, near enough to
// leave a word out that is a term already (case folded).
func normalTerm(t term) term {
	return term{strings.ToLower(strings.TrimSpace(t.text)), t.prefix}
}

// documentFrequencies is, for each of the scoring terms, how many
// documents of the database it is in (at most rows), from the walk of
// its most recent matches: samples has those of the first terms, the
// others are walked here.
func (s *shard) documentFrequencies(ctx context.Context, scoring []term, samples []matchSample, bound int, rows float64) ([]float64, error) {
	span, err := s.rowidSpan(ctx)
	if err != nil {
		return nil, err
	}
	docs := make([]float64, len(scoring))
	for i, t := range scoring {
		var sample matchSample
		if i < len(samples) {
			sample = samples[i]
		} else if err := s.db.QueryRowContext(ctx, `SELECT count(*), coalesce(min(rowid), 0) FROM
			(SELECT rowid FROM text WHERE text MATCH ? ORDER BY rowid DESC LIMIT ?)`,
			expression([]term{t}), bound).Scan(&sample.count, &sample.oldest); err != nil {
			return nil, fmt.Errorf("counting the documents of %q: %w", t.text, err)
		}
		docs[i] = span.documents(sample, bound, rows)
	}
	return docs, nil
}

// rowids is the span of the index's document ids: they are given in
// order, so that the newest documents are those of the highest ids.
type rowids struct{ low, high int64 }

// rowidSpan reads the lowest and the highest document id.
func (s *shard) rowidSpan(ctx context.Context) (rowids, error) {
	var low, high sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT (SELECT min(id) FROM docs), (SELECT max(id) FROM docs)`).Scan(&low, &high)
	return rowids{low.Int64, high.Int64}, err
}

// documents is how many documents of the index a term is in, from the
// sample of its most recent matches (at most bound). Fewer than bound, or
// a walk to the first document, are all its matches. bound of them are
// as many of the newest documents, those with the ids from the oldest of
// them up (ids are given in order, and the newest have had no time to
// leave gaps): the term is in the rest of the index's rows as densely,
// and at most in every one.
func (span rowids) documents(s matchSample, bound int, rows float64) float64 {
	if s.count < bound || s.oldest <= span.low || span.high < s.oldest {
		return min(rows, float64(s.count))
	}
	newest := float64(span.high - s.oldest + 1)
	return min(rows, float64(s.count)*rows/newest)
}
