package ui

import (
	"net/http"

	"github.com/pipeline-dev/pipeline/app"
)

// diffSessions answers GET /api/diff?a=ID&b=ID: pipeline diff A B -o
// json (app.Diff). B is looked for in A's store, then in the stores below
// the folder served (--root), wherever the server runs.
func (s *Server) diffSessions(w http.ResponseWriter, r *http.Request) {
	a, b := r.URL.Query().Get("a"), r.URL.Query().Get("b")
	if a == "" || b == "" {
		writeError(w, http.StatusBadRequest, "diff needs two sessions: /api/diff?a=ID&b=ID")
		return
	}
	p, meta, err := s.pipelineOf(a)
	if err != nil {
		writeFailure(w, err)
		return
	}
	if _, metaB, err := s.pipelineOf(b); err == nil {
		b = metaB.ID
	}
	resp, err := app.Diff(r.Context(), app.DiffRequest{Pipeline: p, A: meta.ID, B: b, Below: s.root})
	if err != nil {
		writeFailure(w, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}
