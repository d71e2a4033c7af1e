package app

import (
	"context"
	"errors"
	"slices"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/compare"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// DiffRequest names the two sessions to compare, by id. Each is looked
// for in the pipeline's store, then in every store below the current
// folder (FindStores).
type DiffRequest struct {
	Pipeline
	A string `json:"a"`
	B string `json:"b"`
	// Below is the folder whose stores are searched for a session that
	// is not in the pipeline's store; "": the current folder.
	Below string `json:"-"`
}

// DiffResponse is `pipeline diff -o json`: the sessions side by side,
// phase by phase, and where they diverged. When they diverge (not Same),
// the command line exits 1, as diff(1).
type DiffResponse struct {
	compare.Result
}

// Diff compares two sessions. It reads: no lock, nothing written.
func Diff(_ context.Context, req DiffRequest) (*DiffResponse, error) {
	below := req.Below
	if below == "" {
		below = "."
	}
	a, err := diffSide(req.Pipeline, req.A, below)
	if err != nil {
		return nil, err
	}
	b, err := diffSide(req.Pipeline, req.B, below)
	if err != nil {
		return nil, err
	}
	out := redacted(environmentRedactor(), DiffResponse{compare.Sessions(a, b)})
	return &out, nil
}

// diffSide reads session id for the comparison, redacted with its own
// plan's secrets: from the store of p, or else from a store below the
// folder below.
func diffSide(p Pipeline, id, below string) (compare.Side, error) {
	if err := session.CheckRef(id); err != nil {
		return compare.Side{}, Usagef("%v", err)
	}
	ref, err := p.FindSession(id)
	var ambiguous *store.AmbiguousError
	if err != nil && !errors.As(err, &ambiguous) {
		if ref, err = findBelow(below, id, err); err != nil {
			return compare.Side{}, err
		}
	}
	defer ref.Store.Close()
	defer ref.Close()
	if err := errFleetReadOnly(ref, "diff"); err != nil {
		return compare.Side{}, err
	}
	s, crashed, err := ref.State()
	if err != nil {
		return compare.Side{}, err
	}
	if crashed {
		s = engine.RunnerDied(s)
	}
	plan := ref.Plan
	if of := s.ReplayOf; of != nil {
		plan = session.ReplayPlan(plan, of.Agent, of.Model)
	}
	side := compare.Side{Report: StatusReport(ref.X.Meta, ref.Plan, s), WorkingSet: s.WorkingSet, Agents: planAgents(plan)}
	return redacted(session.NewRedactor(ref.Plan), side), nil
}

// findBelow finds session id in the stores below root, for reading;
// notFound is the error when none has it.
func findBelow(root, id string, notFound error) (*session.Ref, error) {
	dirs, err := FindStores(root)
	if err != nil {
		return nil, notFound
	}
	dir, meta, err := FindInStores(dirs, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	st, err := store.OpenExisting(dir)
	if err != nil {
		return nil, err
	}
	ref, err := session.Find(st, session.Options{ID: meta.ID})
	if err != nil {
		st.Close()
	}
	return ref, err
}

// planAgents are the agents (kind/model) of a plan's agent steps, each
// once, in the order the phases first use them.
func planAgents(plan *spec.Plan) []string {
	var out []string
	for _, p := range plan.Phases {
		for _, s := range p.Steps {
			if s.Agent == nil {
				continue
			}
			name := engine.AgentName(s.Agent.Value)
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}
