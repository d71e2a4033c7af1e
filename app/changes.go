package app

import (
	"context"
	"path/filepath"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
)

// ChangesRequest asks what changed in the work tree since the phase a
// session stands in began.
type ChangesRequest struct {
	Pipeline
	Session string `json:"session,omitempty"`
}

// ChangesResponse is what changed since the phase began: the files, and
// the spec's own diff.
type ChangesResponse struct {
	Session string `json:"session"`
	Phase   string `json:"phase"`
	// Since is the checkpoint the phase began at.
	Since string   `json:"since"`
	Files []string `json:"files"`
	// Spec is the spec file (relative to phases.yaml's folder) and
	// SpecDiff its unified diff since the checkpoint ("" unchanged).
	Spec     string `json:"spec,omitempty"`
	SpecDiff string `json:"spec_diff,omitempty"`
}

// Changes reads what changed since the session's phase began, from the
// checkpoint git took then (the session's start, or the end of the phase
// before). It reads: no lock, nothing written.
func Changes(_ context.Context, req ChangesRequest) (*ChangesResponse, error) {
	ref, s, _, err := req.readState(req.Session)
	if err != nil {
		return nil, err
	}
	defer ref.Store.Close()
	defer ref.Close()
	out := &ChangesResponse{Session: ref.ID(), Files: []string{}}
	if s.Phase < len(s.Phases) {
		out.Phase = s.Phases[s.Phase].Name
	}
	out.Since = phaseBase(s)
	if out.Since == "" {
		return nil, Usagef("session %s keeps no checkpoint of where phase %s began (checkpoint: off, or not in a git work tree): git cannot say what changed", out.Session, out.Phase)
	}
	dir := filepath.Dir(ref.Plan.File)
	git := session.GitFor(dir)
	if git == nil {
		return nil, Usagef("%s is not in a git work tree: git cannot say what changed", dir)
	}
	files, _, _, err := git.ChangedSince(out.Since)
	if err != nil {
		return nil, err
	}
	out.Files = append(out.Files, files...)
	if spec := ref.Plan.Spec; spec != "" {
		if rel, err := filepath.Rel(dir, spec); err == nil {
			out.Spec = rel
			if out.SpecDiff, err = git.Diff(out.Since, rel); err != nil {
				return nil, err
			}
		}
	}
	r := redacted(session.NewRedactor(ref.Plan), *out)
	return &r, nil
}

// phaseBase is the checkpoint the session's phase began at.
func phaseBase(s engine.State) string {
	if s.Phase == 0 || s.Phase > len(s.Phases) {
		return s.StartCheckpoint
	}
	return s.Phases[s.Phase-1].Checkpoint
}
