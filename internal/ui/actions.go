package ui

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// actionInput is the body of POST /api/sessions/{id}/{action}; each
// action reads what it needs.
type actionInput struct {
	// Notes: pause's and resume's notes for the next step.
	Notes string `json:"notes"`
	// Text: the fact pin pins.
	Text string `json:"text"`
	// Force: complete's and rewind's --force.
	Force bool `json:"force"`
	// Phase: resume's --phase, rewind's --to, fork's --at.
	Phase string `json:"phase"`
	// Worktree: fork's --worktree, relative to the folder served ("":
	// beside the project, when that is inside the folder served).
	Worktree string `json:"worktree"`
	// ID: the number of the task done closes (or Text, its text).
	ID int `json:"id"`
}

// runsFolder is where the runners resume starts write their output, in
// the store's folder.
const runsFolder = "ui-runs"

// pauseWait bounds how long a running session gets to stop, as pipeline
// pause's default.
const pauseWait = time.Minute

// action is one of POST /api/sessions/{id}/{action}: be is the backend
// that knows the session (its fleet's, for a fleet session the server
// can reach).
type action func(s *Server, r *http.Request, be app.Backend, p app.Pipeline, meta store.Meta, in actionInput) (any, error)

// actions are what POST /api/sessions/{id}/{action} does, by name.
var actions = map[string]action{
	"pause": func(_ *Server, r *http.Request, be app.Backend, p app.Pipeline, meta store.Meta, in actionInput) (any, error) {
		return be.Pause(r.Context(), app.PauseRequest{Pipeline: p, Session: meta.ID, Notes: in.Notes, Wait: pauseWait})
	},
	"resume": (*Server).resume,
	"complete": func(_ *Server, r *http.Request, be app.Backend, p app.Pipeline, meta store.Meta, in actionInput) (any, error) {
		return be.Complete(r.Context(), app.CompleteRequest{Pipeline: p, Session: meta.ID, Force: in.Force})
	},
	"pin":  remember(engine.NoteFact),
	"task": remember(engine.NoteTodo),
	"done": remember(engine.NoteDone),
	"rewind": func(_ *Server, r *http.Request, _ app.Backend, p app.Pipeline, meta store.Meta, in actionInput) (any, error) {
		return app.Rewind(r.Context(), app.RewindRequest{Pipeline: p, Session: meta.ID, To: in.Phase, Force: in.Force})
	},
	"fork": (*Server).fork,
}

// remember is the action that adds a note of kind to the working set
// (pipeline memory pin, task add, task done).
func remember(kind string) action {
	return func(_ *Server, r *http.Request, be app.Backend, p app.Pipeline, meta store.Meta, in actionInput) (any, error) {
		return be.Remember(r.Context(), app.RememberRequest{MemoryRequest: app.MemoryRequest{Pipeline: p, Session: meta.ID},
			Note: engine.MemoryNote{Kind: kind, Text: in.Text, ID: in.ID}})
	}
}

// actionNames are the actions, as an unknown one's error lists them.
const actionNames = "pause, resume, complete, pin, task, done, rewind and fork"

func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	if why := s.crossSite(r); why != "" {
		writeError(w, http.StatusForbidden, why)
		return
	}
	do, ok := actions[r.PathValue("action")]
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no action %q: the actions are %s", r.PathValue("action"), actionNames))
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
	be, err := s.backendOf(r.Context(), meta)
	if err != nil {
		writeFailure(w, err)
		return
	}
	out, err := do(s, r, be, p, meta, in)
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
func (s *Server) resume(r *http.Request, be app.Backend, p app.Pipeline, meta store.Meta, in actionInput) (any, error) {
	if _, local := be.(app.Local); !local {
		return resumeOnFleet(r, be, p, meta, in)
	}
	if f := meta.OnFleet(); f != nil {
		// Refused here, with the command to use: the runner would refuse
		// it too, after the answer.
		return nil, &app.Error{Code: app.ExitUsage,
			Message: fmt.Sprintf("session %s runs on %s, not here: this dashboard does not reach that fleet", meta.ID, f.Where()),
			Hint:    "use: " + app.FleetCommand("resume", *f, meta.ID)}
	}
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
	plan := ref.Plan
	ref.Close()
	if err != nil {
		return nil, err
	}
	if state.Status == engine.StatusCompleted {
		return nil, app.Usagef("session %s is completed: there is nothing to resume", meta.ID)
	}
	if in.Phase != "" && plan != nil && !slices.ContainsFunc(plan.Phases, func(p spec.PhasePlan) bool { return p.Name == in.Phase }) {
		return nil, app.Usagef("--phase %q is not a phase of %s (%s)%s", in.Phase, meta.File, session.PhaseNames(plan), session.PhaseHint(plan, in.Phase))
	}
	app.SettleRunner(st, meta.Key)
	dir, args := app.CommandArgs(p.StateDir, p.File)
	args = append([]string{"resume", meta.ID}, args...)
	if in.Notes != "" {
		args = append(args, "--notes="+in.Notes)
	}
	if in.Phase != "" {
		args = append(args, "--phase="+in.Phase)
	}
	return s.launch(r, st, meta.Key, dir, args)
}

// launch starts args as a detached runner of the session key in st.
func (s *Server) launch(r *http.Request, st *store.Store, key, dir string, args []string) (resumed, error) {
	l, err := app.LaunchRunner(r.Context(), app.LaunchRequest{Store: st, Key: key, Binary: s.binary,
		Dir: dir, Args: args, Env: s.env, Folder: runsFolder})
	if err != nil {
		return resumed{}, err
	}
	return resumed{Session: l.Session, Status: l.Status, PID: l.PID, Log: l.Log, ExitCode: l.ExitCode}, nil
}

// forked is what POST .../fork answers: the fork's git worktree and its
// session, which a detached runner runs.
type forked struct {
	resumed
	Parent   string `json:"parent"`
	Worktree string `json:"worktree"`
}

// fork makes the fork here (app.PrepareFork: its worktree and its
// session, started from the checkpoint), then hands the session to a
// detached runner, a resume in the fork's folder, which outlives the
// request as resume's does.
func (s *Server) fork(r *http.Request, _ app.Backend, p app.Pipeline, meta store.Meta, in actionInput) (any, error) {
	worktree, err := s.forkFolder(p, in)
	if err != nil {
		return nil, err
	}
	in.Worktree = worktree
	f, err := app.PrepareFork(r.Context(), app.ForkRequest{Pipeline: p, Session: meta.ID, At: in.Phase, Worktree: in.Worktree})
	if err != nil {
		return nil, err
	}
	sess, st := f.Session, f.Session.Store
	defer st.Close()
	id, key, file := sess.ID(), sess.X.Meta.Key, sess.X.Meta.File
	// The Started event records the parent and the checkpoint; the
	// runner that takes the session then runs it from there.
	_, err = sess.Apply(f.First)
	if closeErr := sess.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return nil, app.StoreWriteFailed(err)
	}
	dir, args := app.CommandArgs(st.Root, st.Abs(file))
	l, err := s.launch(r, st, key, dir, append([]string{"resume", id}, args...))
	if err != nil {
		return nil, err
	}
	return forked{resumed: l, Parent: meta.ID, Worktree: f.Worktree}, nil
}

// forkFolder is the fork's folder, which must be inside the folder
// served: a fork elsewhere would not be listed here. A folder given is
// taken relative to the folder served; none is the command's own choice,
// beside the project's work tree, when that lies inside it.
func (s *Server) forkFolder(p app.Pipeline, in actionInput) (string, error) {
	if in.Worktree != "" {
		dir := in.Worktree
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(s.root, dir)
		}
		dir = filepath.Clean(dir)
		if !inside(s.root, dir) || dir == s.root {
			return "", app.Usagef("the fork's folder %s is not inside the folder this dashboard serves (%s), where it would not be listed: name a folder inside it", in.Worktree, s.root)
		}
		return dir, nil
	}
	git := session.GitFor(filepath.Dir(p.File))
	if git == nil {
		return "", nil // the fork refuses it, with the command's message
	}
	if beside := filepath.Dir(git.Root()); !inside(s.root, beside) {
		return "", app.Usagef("a fork goes beside the project (in %s), outside the folder this dashboard serves (%s), where it would not be listed: name a folder for it inside %s, or serve a folder above the project (pipeline ui --root %s)",
			beside, s.root, s.root, beside)
	}
	return "", nil
}

// inside tells whether path is dir or below it.
func inside(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
