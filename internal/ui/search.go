package ui

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/app/appsearch"
)

// searchLimit bounds the hits GET /api/search answers when it is not
// given ?limit=.
const searchLimit = 50

// searchAnswer is what GET /api/search answers: pipeline search -o json's
// hits of every store below the root, best first.
type searchAnswer struct {
	Query string          `json:"query"`
	Hits  []appsearch.Hit `json:"hits"`
}

// search runs the product's search (appsearch.Search) over each store below
// the root and merges the hits by score.
func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	query := r.URL.Query().Get("q")
	limit := searchLimit
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "limit must be a number, 1 or more, not "+strconv.Quote(l))
			return
		}
		limit = n
	}
	dirs, err := app.FindStores(s.root)
	if err != nil {
		writeFailure(w, err)
		return
	}
	out := searchAnswer{Query: query, Hits: []appsearch.Hit{}}
	for _, dir := range dirs {
		resp, err := appsearch.Search(r.Context(), appsearch.SearchRequest{Pipeline: app.Pipeline{StateDir: dir}, Query: query, Limit: limit})
		if err != nil {
			writeFailure(w, err)
			return
		}
		out.Query = resp.Query
		out.Hits = append(out.Hits, resp.Hits...)
	}
	slices.SortStableFunc(out.Hits, func(a, b appsearch.Hit) int { return cmp.Compare(b.Score, a.Score) })
	if len(out.Hits) > limit {
		out.Hits = out.Hits[:limit]
	}
	writeJSON(w, http.StatusOK, out)
}
