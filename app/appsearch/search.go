// Package appsearch is the product's search operation (pipeline search,
// the MCP search tool, the dashboard's search box). It is apart from
// package app because its index is SQLite: the local pipeline, which
// links app, hands search to the companion build and links no SQLite
// (see cmd/pipeline/handoff.go).
package appsearch

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine/search"
	"github.com/pipeline-dev/pipeline/triggers"
)

// Markers of a match in a snippet where there is no colour: in the
// "marked" field of a hit, and in text on a pipe. They are not brackets,
// which transcripts are full of ([CHECKPOINT], JSON, markdown links).
const (
	MatchOpen  = "«"
	MatchClose = "»"
)

// SearchRequest is a query over the sessions of a pipeline's store.
type SearchRequest struct {
	app.Pipeline
	// Query: the words must all match, in any order; "quoted words" as a
	// phrase; word* as a prefix.
	Query string `json:"query"`
	// Session, Phase and Since narrow it; Limit bounds the hits (0: the
	// default).
	Session string    `json:"session,omitempty"`
	Phase   string    `json:"phase,omitempty"`
	Since   time.Time `json:"since,omitempty"`
	Limit   int       `json:"limit,omitempty"`
	// Warn receives what the indexer says on the way (a rebuilt index).
	Warn io.Writer `json:"-"`
}

// SearchResponse is `pipeline search -o json`: the hits, best first.
type SearchResponse struct {
	Query   string       `json:"query"`
	Hits    []Hit        `json:"hits"`
	Indexed search.Stats `json:"indexed"`
	Rebuilt string       `json:"rebuilt,omitempty"`
}

// Hit is a hit with its snippet also with its matches between « and »;
// in an agent's transcript, the turn it is in (the model's answers
// counted from 1 in the step) and the tool call (its number in the step
// and the tool) when it is a call or its result.
type Hit struct {
	search.Hit
	Marked string `json:"marked"`
	Turn   int    `json:"turn,omitempty"`
	Call   int    `json:"call,omitempty"`
	Tool   string `json:"tool,omitempty"`
}

// Search brings the store's index up to date and queries it.
func Search(ctx context.Context, req SearchRequest) (*SearchResponse, error) {
	if strings.TrimSpace(req.Query) == "" {
		return nil, app.Usagef("search needs a query: the words to look for, e.g. pipeline search flaky test")
	}
	if _, err := search.MatchExpression(req.Query); errors.Is(err, search.ErrNoWords) {
		return nil, app.Usagef("the query %q has no words to search for: give letters or digits", req.Query)
	}
	limit := req.Limit
	if limit == 0 {
		limit = search.DefaultLimit
	}
	if limit < 1 {
		return nil, app.Usagef("--limit must be 1 or more, not %d", limit)
	}
	q := search.Query{Text: req.Query, Phase: req.Phase, Limit: limit, Since: req.Since}
	st, err := req.Existing()
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if req.Session != "" {
		meta, err := st.Find(req.Session)
		if err != nil {
			return nil, app.Usagef("--session: %v (pipeline sessions lists them)", err)
		}
		q.Session = meta.ID
	}
	warn := req.Warn
	if warn == nil {
		warn = io.Discard
	}
	r, err := search.Search(ctx, st, q, search.Options{Warn: warn})
	if err != nil {
		return nil, app.StoreWriteFailed(err)
	}
	red := app.Redactor()
	out := &SearchResponse{Query: red.String(req.Query), Hits: []Hit{}, Indexed: r.Indexed, Rebuilt: r.Rebuilt}
	for _, h := range r.Hits {
		// The store keeps what it indexes redacted; a secret of this
		// process's environment is hidden too, and then the marks,
		// offsets into the snippet as it was, go.
		if safe := red.String(h.Snippet); safe != h.Snippet {
			h.Snippet, h.Marks = safe, nil
		}
		out.Hits = append(out.Hits, Hit{Hit: h, Marked: h.Marked(MatchOpen, MatchClose)})
	}
	out.Hits = onceEach(out.Hits)
	placeInTurns(out.Hits)
	return out, nil
}

// onceEach drops the copies of a thing said: a phase's summary is kept
// in the phase's record and in the working set, and is often the agent's
// last words in the transcript. Where the same text of a session's phase
// is hit more than once, the transcript's hit stays (it names the turn),
// else the first.
func onceEach(hits []Hit) []Hit {
	key := func(h Hit) string { return h.Session + "\x00" + h.Phase + "\x00" + strings.TrimSpace(h.Snippet) }
	inTranscript := map[string]bool{}
	for _, h := range hits {
		if h.Kind == search.KindTranscript {
			inTranscript[key(h)] = true
		}
	}
	seen := map[string]bool{}
	kept := hits[:0]
	for _, h := range hits {
		k := key(h)
		if h.Kind == search.KindNote || h.Kind == search.KindWorkingSet {
			if inTranscript[k] || seen[k] {
				continue
			}
			seen[k] = true
		}
		kept = append(kept, h)
	}
	return kept
}

// ParseSince reads a since: a duration back from now, or a date (local
// midnight), or a time in RFC 3339.
func ParseSince(text string, now time.Time) (time.Time, error) {
	if d, err := triggers.ParseDuration(text); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	if at, err := time.ParseInLocation("2006-01-02", text, time.Local); err == nil {
		return at, nil
	}
	if at, err := time.Parse(time.RFC3339, text); err == nil {
		return at, nil
	}
	return time.Time{}, app.Usagef("--since %q is neither a duration (2h, 3d, 1d12h) nor a date (2026-11-20, or 2026-11-20T15:04:05Z)", text)
}
