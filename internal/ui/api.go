package ui

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/transcript"
)

// errorBody is an operation's error as the API answers it.
type errorBody struct {
	Error    string `json:"error"`
	ExitCode int    `json:"exit_code"`
	// Hint says what to do, as the command prints it under its error.
	Hint string `json:"hint,omitempty"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, errorBody{Error: msg, ExitCode: app.ExitUsage})
}

// writeFailure answers an operation's error with its message and exit
// code: 404 for a session not found, 400 for a usage error, else 409.
func writeFailure(w http.ResponseWriter, err error) {
	code := http.StatusConflict
	switch {
	case errors.Is(err, store.ErrNotFound):
		code = http.StatusNotFound
	case app.ExitCode(err) == app.ExitUsage:
		code = http.StatusBadRequest
	}
	report := app.Report(err)
	writeJSON(w, code, errorBody{Error: report.Error, ExitCode: report.Code, Hint: report.Hint})
}

// pipelineOf is the pipeline whose store holds session id, below the root.
func (s *Server) pipelineOf(id string) (app.Pipeline, store.Meta, error) {
	dirs, err := app.FindStores(s.root)
	if err != nil {
		return app.Pipeline{}, store.Meta{}, err
	}
	dir, meta, err := app.FindInStores(dirs, id)
	if err != nil {
		return app.Pipeline{}, meta, err
	}
	st, err := store.OpenExisting(dir)
	if err != nil {
		return app.Pipeline{}, meta, err
	}
	defer st.Close()
	return app.Pipeline{File: st.Abs(meta.File), StateDir: dir}, meta, nil
}

func (s *Server) sessionStatus(w http.ResponseWriter, r *http.Request) {
	s.answerFromBackend(w, r, func(ctx context.Context, be app.Backend, p app.Pipeline, id string) (any, error) {
		return be.Status(ctx, app.StatusRequest{Pipeline: p, Session: id})
	})
}

func (s *Server) sessionMemory(w http.ResponseWriter, r *http.Request) {
	s.answerFromBackend(w, r, func(ctx context.Context, be app.Backend, p app.Pipeline, id string) (any, error) {
		return be.WorkingSet(ctx, app.MemoryRequest{Pipeline: p, Session: id})
	})
}

// answerFromBackend answers a GET of the session in the path with what
// ask gets from the session's backend (local, or the fleet it runs on).
func (s *Server) answerFromBackend(w http.ResponseWriter, r *http.Request, ask func(context.Context, app.Backend, app.Pipeline, string) (any, error)) {
	p, meta, err := s.pipelineOf(r.PathValue("id"))
	if err != nil {
		writeFailure(w, err)
		return
	}
	be, err := s.backendOf(r.Context(), meta)
	if err != nil {
		writeFailure(w, err)
		return
	}
	resp, err := ask(r.Context(), be, p, meta.ID)
	if err != nil {
		writeFailure(w, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// sessionResumeContext is the resume context the session's next agent
// step would get, as pipeline resume --dry-run -o json prints it; a
// session that cannot be resumed answers why.
func (s *Server) sessionResumeContext(w http.ResponseWriter, r *http.Request) {
	p, meta, err := s.pipelineOf(r.PathValue("id"))
	if err != nil {
		writeFailure(w, err)
		return
	}
	resp, err := app.PreviewResume(r.Context(), app.ResumeRequest{Pipeline: p, Session: meta.ID})
	if err != nil {
		writeFailure(w, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// logPiece is one transcript or prompt of a session, rendered as pipeline
// logs renders it.
type logPiece struct {
	Transcript string            `json:"transcript"`
	Prompt     bool              `json:"prompt,omitempty"`
	Text       string            `json:"text"`
	Items      []transcript.Item `json:"items"`
}

func (s *Server) sessionLogs(w http.ResponseWriter, r *http.Request) {
	p, meta, err := s.pipelineOf(r.PathValue("id"))
	if err != nil {
		writeFailure(w, err)
		return
	}
	be, err := s.backendOf(r.Context(), meta)
	if err != nil {
		writeFailure(w, err)
		return
	}
	pieces := []*logPiece{}
	var mu sync.Mutex
	err = be.Logs(r.Context(), app.LogsRequest{Pipeline: p, Session: meta.ID, Prompts: r.URL.Query().Get("prompts") != ""},
		func(c app.LogChunk) error {
			mu.Lock()
			defer mu.Unlock()
			if n := len(pieces); n == 0 || c.First || pieces[n-1].Transcript != c.File {
				pieces = append(pieces, &logPiece{Transcript: c.File, Prompt: c.Prompt, Items: []transcript.Item{}})
			}
			last := pieces[len(pieces)-1]
			last.Text += string(c.Text)
			last.Items = append(last.Items, c.Items...)
			return nil
		})
	if err != nil && !errors.Is(err, context.Canceled) {
		writeFailure(w, err)
		return
	}
	writeJSON(w, http.StatusOK, pieces)
}
