package ui

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// FleetBackend gives the backend of the fleet a session runs on: in the
// build with the Temporal backend, app/fleet's, dialled. The dashboard
// asks it where a fleet session stands and acts on the session through
// it; without one, a fleet session shows as the local store knows it
// (its copy, marked with its fleet), and the actions that need its state
// are refused with the command to use.
type FleetBackend func(ctx context.Context, f store.Fleet) (app.Backend, error)

// fleets are the fleet backends the server dialled, kept open until it
// closes.
type fleets struct {
	dial FleetBackend
	mu   sync.Mutex
	open map[store.Fleet]app.Backend
}

// of is the backend of the fleet f, dialled once; nil without a
// FleetBackend, or when f does not say which fleet.
func (fs *fleets) of(ctx context.Context, f store.Fleet) (app.Backend, error) {
	if fs.dial == nil || f.Address == "" {
		return nil, nil
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if be, ok := fs.open[f]; ok {
		return be, nil
	}
	be, err := fs.dial(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("reaching %s: %w", f.Where(), err)
	}
	if fs.open == nil {
		fs.open = map[store.Fleet]app.Backend{}
	}
	fs.open[f] = be
	return be, nil
}

func (fs *fleets) close() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, be := range fs.open {
		be.Close()
	}
	fs.open = nil
}

// backendOf is the backend that knows session meta: its fleet's when it
// runs on one the server can reach, else the local one.
func (s *Server) backendOf(ctx context.Context, meta store.Meta) (app.Backend, error) {
	if f := meta.OnFleet(); f != nil {
		be, err := s.fleets.of(ctx, *f)
		if err != nil || be != nil {
			return be, err
		}
	}
	return app.Local{}, nil
}

// fleetLine is a fleet session's line with where it stands on its fleet,
// when the server can ask it; else the line as the local store has it.
func (s *Server) fleetLine(ctx context.Context, line app.SessionLine) app.SessionLine {
	be, err := s.fleets.of(ctx, *line.Fleet)
	if err != nil || be == nil {
		return line
	}
	st, err := be.Status(ctx, app.StatusRequest{Pipeline: app.Pipeline{File: line.File, Spec: line.Spec}, Session: line.ID})
	if err != nil {
		return line
	}
	line.Status, line.Phase, line.PauseReason = st.Status, st.Phase, st.PauseReason
	line.Tokens, line.CostUSD = st.Tokens, st.CostUSD
	return line
}

// startedView is the RunView of a resume the dashboard asks of a fleet:
// the session is set going there, and the answer does not wait for it.
type startedView struct{ started *app.Started }

func (v *startedView) Drive(context.Context, *app.Opened) error {
	return fmt.Errorf("the fleet backend opened the session here")
}

func (v *startedView) Follow(_ context.Context, started app.Started) error {
	v.started = &started
	return nil
}

// resumeOnFleet resumes a fleet session through its fleet's backend.
func resumeOnFleet(r *http.Request, be app.Backend, p app.Pipeline, meta store.Meta, in actionInput) (any, error) {
	var view startedView
	err := be.Resume(r.Context(), app.ResumeRequest{Pipeline: p, Session: meta.ID, Notes: in.Notes, Phase: in.Phase}, &view)
	if err != nil {
		return nil, err
	}
	out := resumed{Session: meta.ID, Status: "running"}
	if view.started != nil {
		out.Session = view.started.ID
	}
	return out, nil
}
