package session

import (
	"fmt"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
)

// Rewinding is what a rewind did: the phase it set the session back to,
// the checkpoint it restored, and the ref that keeps what no checkpoint
// held (with force).
type Rewinding struct {
	Phase      string `json:"phase"`
	Checkpoint string `json:"checkpoint"`
	Rescued    string `json:"rescued,omitempty"`
	Attempt    int    `json:"attempt"`
}

// Rewind restores the work tree to the checkpoint taken before phase (the
// one of the latest phase before it that completed, or the session's
// start) and sets the session back to the start of phase, paused, as a
// new attempt (a Rewound event; nothing recorded is deleted). It refuses
// when the work tree holds changes that are in no checkpoint of the
// session, unless force, which first keeps them under
// refs/pipeline/<session>/rescued-<n>.
func (s *Session) Rewind(now time.Time, phase string, force bool) (Rewinding, error) {
	if err := CheckPhase(s.Plan, phase); err != nil {
		return Rewinding{}, err
	}
	if phase == "" {
		return Rewinding{}, refused("rewind needs --to PHASE (%s)", PhaseNames(s.Plan))
	}
	st := s.state
	switch {
	case s.Created || st.Status == "":
		return Rewinding{}, refused("session %s has not started: there is nothing to rewind", s.ID())
	case st.Status == engine.StatusRunning:
		return Rewinding{}, refused("session %s is running: pause it first (pipeline pause), then rewind", s.ID())
	case s.git == nil:
		return Rewinding{}, refused("%s is not in a git work tree (or git ignores it): session %s has no checkpoints to rewind to", s.Dir(), s.ID())
	}
	i := 0
	for i < len(st.Phases) && st.Phases[i].Name != phase {
		i++
	}
	checkpoint := CheckpointBefore(st, i)
	if checkpoint == "" {
		return Rewinding{}, refused("session %s has no checkpoint before phase %s (made with checkpoint: off, or outside git)", s.ID(), phase)
	}
	_, tree := s.git.Snapshot()
	if tree == "" {
		return Rewinding{}, fmt.Errorf("git could not snapshot the work tree of %s", s.Dir())
	}
	r := Rewinding{Phase: phase, Checkpoint: checkpoint, Attempt: st.Phases[i].Attempts + 1}
	if !s.inCheckpoint(st, tree) {
		if !force {
			return Rewinding{}, refused("the work tree holds changes that are in no checkpoint of session %s: commit or keep them, or rewind --force, which first saves them under %s",
				s.ID(), CheckpointRef(s.ID(), "rescued-<n>"))
		}
		ref := s.rescueRef()
		if _, err := s.git.Checkpoint(ref, fmt.Sprintf("pipeline: work rescued before a rewind of session %s to phase %s", s.ID(), phase)); err != nil {
			return Rewinding{}, err
		}
		r.Rescued = ref
	}
	if err := s.git.Restore(checkpoint); err != nil {
		return Rewinding{}, fmt.Errorf("restoring the checkpoint %s: %w", checkpoint, err)
	}
	if _, err := s.Apply(engine.Rewound{At: now, Phase: phase, Checkpoint: checkpoint, Rescued: r.Rescued}); err != nil {
		return Rewinding{}, err
	}
	return r, nil
}

// CheckpointBefore is the checkpoint taken before phase i: the one of
// the latest phase before it that has one, else the session's start.
func CheckpointBefore(st engine.State, i int) string {
	for j := i - 1; j >= 0; j-- {
		if c := st.Phases[j].Checkpoint; c != "" {
			return c
		}
	}
	return st.StartCheckpoint
}

// inCheckpoint reports whether the tree is that of one of the session's
// checkpoints: those its state names and every ref it keeps.
func (s *Session) inCheckpoint(st engine.State, tree string) bool {
	commits := []string{st.StartCheckpoint, st.PauseCheckpoint}
	for _, p := range st.Phases {
		commits = append(commits, p.Checkpoint)
	}
	for _, c := range s.git.Refs(CheckpointRef(s.ID(), "")) {
		commits = append(commits, c)
	}
	for _, c := range commits {
		if c != "" && s.git.Tree(c) == tree {
			return true
		}
	}
	return false
}

// rescueRef is the next free refs/pipeline/<session>/rescued-<n>.
func (s *Session) rescueRef() string {
	refs := s.git.Refs(CheckpointRef(s.ID(), ""))
	n := 1
	for {
		ref := CheckpointRef(s.ID(), fmt.Sprintf("rescued-%d", n))
		if _, taken := refs[ref]; !taken {
			return ref
		}
		n++
	}
}
