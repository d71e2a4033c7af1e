package engine_test

import (
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/engine"
)

// Checkpointed keeps each commit where it belongs; Rewound sets a
// finished session back, paused, to the start of a phase as a new
// attempt, clears the checkpoints from that phase on and keeps the rest
// of the history; a resume that brings conflict markers stays paused.
func TestCheckpointsRewindAndConflicts(t *testing.T) {
	plan := planOf(t, `version: 1
phases:
  - name: one
    steps: [{name: s, run: "true"}]
  - name: two
    steps: [{name: s, run: "true"}]
`)
	s, _ := newSession(t, plan)
	s.send(engine.Checkpointed{At: s.now, Kind: engine.CheckpointStart, Phase: -1, Commit: "c0"})
	s.finish(1, engine.StepResult{})
	s.send(engine.Checkpointed{At: s.now, Kind: engine.CheckpointPhase, Phase: 0, Commit: "c1"})
	s.finish(1, engine.StepResult{})
	s.send(engine.Checkpointed{At: s.now, Kind: engine.CheckpointPhase, Phase: 1, Commit: "c2"})
	if s.state.Status != engine.StatusCompleted || s.state.StartCheckpoint != "c0" ||
		s.state.Phases[0].Checkpoint != "c1" || s.state.Phases[1].Checkpoint != "c2" {
		t.Fatalf("after the run: %+v", s.state)
	}

	actions := s.send(engine.Rewound{At: s.now, Phase: "two", Checkpoint: "c1", Rescued: "refs/pipeline/x/rescued-1"})
	st := s.state
	switch {
	case len(actions) != 0:
		t.Errorf("a rewind asked for %#v; it only records", actions)
	case st.Status != engine.StatusPaused || st.Pause == nil || st.Pause.Reason != engine.ReasonRewound:
		t.Errorf("after the rewind: %s, pause %+v", st.Status, st.Pause)
	case !strings.Contains(st.Pause.Note, "rescued-1"):
		t.Errorf("the rewind's note does not name the rescued ref: %q", st.Pause.Note)
	case st.Phase != 1 || st.Step != 0 || st.Attempt != 2 || st.FreshSession || !st.ResumeContext:
		t.Errorf("after the rewind: phase %d step %d attempt %d, fresh %v", st.Phase, st.Step, st.Attempt, st.FreshSession)
	case st.Phases[0].Checkpoint != "c1" || st.Phases[0].Status != engine.StatusCompleted:
		t.Errorf("the rewind touched phase one: %+v", st.Phases[0])
	case st.Phases[1].Checkpoint != "" || st.Phases[1].Status != "" || st.Phases[1].Attempts != 1 || st.Phases[1].Human != 1:
		t.Errorf("phase two after the rewind: %+v", st.Phases[1])
	}

	actions = s.send(engine.Resumed{At: s.now, Changed: []string{"a.go", "b.go"}, Conflicts: []string{"b.go"}})
	if p, ok := last(actions).(engine.Pause); !ok || p.Firing.Reason != engine.ReasonConflicts || !strings.Contains(p.Firing.Note, "b.go") {
		t.Fatalf("a resume over conflict markers: %#v", actions)
	}
	actions = s.send(engine.Resumed{At: s.now, Changed: []string{"a.go", "b.go"}})
	start, ok := last(actions).(engine.StartStep)
	if !ok || start.Phase != 1 || start.Attempt != 2 {
		t.Fatalf("the resume once resolved: %#v", actions)
	}
	if r := s.state.Resuming; r == nil || strings.Join(r.Changed, ",") != "a.go,b.go" {
		t.Errorf("the resume context is owed no list of the human's changes: %+v", r)
	}
	if s.state.Phases[1].Attempts != 2 {
		t.Errorf("phase two has %d attempts, want 2", s.state.Phases[1].Attempts)
	}
}
