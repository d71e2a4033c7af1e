package ui

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// actionInput is the body of POST /api/sessions/{id}/{action}; each
// action reads what it needs.
type actionInput struct {
	// Notes: pause's and resume's notes for the next step.
	Notes string `json:"notes"`
	// Text: the fact pin pins.
	Text string `json:"text"`
	// Force: complete's --force.
	Force bool `json:"force"`
}

// runsFolder is where the runners resume starts write their output, in
// the store's folder.
const runsFolder = "ui-runs"

// pauseWait bounds how long a running session gets to stop, as pipeline
// pause's default.
const pauseWait = time.Minute

// actions are what POST /api/sessions/{id}/{action} does, by name.
var actions = map[string]func(s *Server, r *http.Request, p app.Pipeline, meta store.Meta, in actionInput) (any, error){
	"pause": func(_ *Server, r *http.Request, p app.Pipeline, meta store.Meta, in actionInput) (any, error) {
		return app.Pause(r.Context(), app.PauseRequest{Pipeline: p, Session: meta.ID, Notes: in.Notes, Wait: pauseWait})
	},
	"resume": (*Server).resume,
	"complete": func(_ *Server, r *http.Request, p app.Pipeline, meta store.Meta, in actionInput) (any, error) {
		return app.Complete(r.Context(), app.CompleteRequest{Pipeline: p, Session: meta.ID, Force: in.Force})
	},
	"pin": func(_ *Server, r *http.Request, p app.Pipeline, meta store.Meta, in actionInput) (any, error) {
		return app.Remember(r.Context(), app.RememberRequest{MemoryRequest: app.MemoryRequest{Pipeline: p, Session: meta.ID},
			Note: engine.MemoryNote{Kind: engine.NoteFact, Text: in.Text}})
	},
}

func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	if why := s.crossSite(r); why != "" {
		writeError(w, http.StatusForbidden, why)
		return
	}
	do, ok := actions[r.PathValue("action")]
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no action %q: the actions are pause, resume, complete and pin", r.PathValue("action")))
		return
	}
	var in actionInput
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil && len(body) > 0 {
		err = json.Unmarshal(body, &in)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "the body must be a JSON object, as {\"notes\": \"...\"}: "+err.Error())
		return
	}
	p, meta, err := s.pipelineOf(r.PathValue("id"))
	if err != nil {
		writeFailure(w, err)
		return
	}
	out, err := do(s, r, p, meta, in)
	if err != nil {
		writeFailure(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// resumed is what POST .../resume answers: the runner started, and the
// session as it stood when it held it.
type resumed struct {
	Session string `json:"session"`
	Status  string `json:"status"`
	PID     int    `json:"pid"`
	Log     string `json:"log"`
	// ExitCode is the runner's, when it ended before the answer.
	ExitCode *int `json:"exit_code,omitempty"`
}

// resume starts pipeline resume as a detached runner, as the MCP server's
// resume tool does: the run outlives the request.
func (s *Server) resume(r *http.Request, p app.Pipeline, meta store.Meta, in actionInput) (any, error) {
	st, err := store.OpenExisting(p.StateDir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	// Checked here: the runner would take the session first, and report
	// after the answer.
	ref, err := session.Find(st, session.Options{ID: meta.ID})
	if err != nil {
		return nil, err
	}
	state, _, err := ref.State()
	ref.Close()
	if err != nil {
		return nil, err
	}
	if state.Status == engine.StatusCompleted {
		return nil, app.Usagef("session %s is completed: there is nothing to resume", meta.ID)
	}
	app.SettleRunner(st, meta.Key)
	dir, args := app.CommandArgs(p.StateDir, p.File)
	args = append([]string{"resume", meta.ID}, args...)
	if in.Notes != "" {
		args = append(args, "--notes="+in.Notes)
	}
	l, err := app.LaunchRunner(r.Context(), app.LaunchRequest{Store: st, Key: meta.Key, Binary: s.binary,
		Dir: dir, Args: args, Env: s.env, Folder: runsFolder})
	if err != nil {
		return nil, err
	}
	return resumed{Session: l.Session, Status: l.Status, PID: l.PID, Log: l.Log, ExitCode: l.ExitCode}, nil
}
