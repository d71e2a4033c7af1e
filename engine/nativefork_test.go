package engine_test

import (
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
)

func wantFork(t *testing.T, actions []engine.Action, sessionID string, fork, forkOnly bool) {
	t.Helper()
	start, ok := last(actions).(engine.StartStep)
	if !ok || start.SessionID != sessionID || start.Fork != fork || start.ForkOnly != forkOnly {
		t.Fatalf("want StartStep{session %q, fork %v, fork only %v}, got %#v", sessionID, fork, forkOnly, actions)
	}
}

// Each phase branches the feature's session it inherits, so that the
// conversation as a phase started stays as it was; a rewind to the phase
// resumes that point as a fork, and so does a fork at it.
func TestRewindForksTheNativeSessionAsThePhaseStarted(t *testing.T) {
	plan := planOf(t, "version: 1\nagent: {kind: command, command: [a], feature: f}\nphases: [{name: one}, {name: two}, {name: three}]\n")
	s, actions := newSession(t, plan)
	wantFork(t, actions, "", false, false)
	actions = s.finish(1, engine.StepResult{SessionID: "s1"})
	wantFork(t, actions, "s1", true, false) // two branches one's session
	actions = s.sleepThrough(s.finish(1, engine.StepResult{ExitCode: 1, SessionID: "s2"}), 10*time.Second)
	wantFork(t, actions, "s2", false, false) // two's retry continues two's own
	actions = s.finish(1, engine.StepResult{SessionID: "s2"})
	wantFork(t, actions, "s2", true, false)
	s.finish(1, engine.StepResult{SessionID: "s3"})
	if s.state.Status != engine.StatusCompleted {
		t.Fatalf("after the run: %s", s.state.Status)
	}
	if at := s.state.Phases[1].NativeAtStart["feature:f"]; at.ID != "s1" || at.Agent != "command" {
		t.Fatalf("phase two started with %+v, want s1 by command", s.state.Phases[1].NativeAtStart)
	}

	if actions := s.send(engine.Rewound{At: s.now, Phase: "two", Checkpoint: "c1"}); len(actions) != 0 {
		t.Fatalf("a rewind asked for %#v", actions)
	}
	if s.state.NativeSessions["feature:f"] != "s1" || !s.state.ForkOnly["feature:f"] || !s.state.ResumeContext || s.state.FreshSession {
		t.Fatalf("after the rewind: sessions %v, fork only %v, resume context %v, fresh %v",
			s.state.NativeSessions, s.state.ForkOnly, s.state.ResumeContext, s.state.FreshSession)
	}
	actions = s.send(engine.Resumed{At: s.now})
	wantFork(t, actions, "s1", true, true)
	if start := last(actions).(engine.StartStep); !start.ResumeContext || start.Phase != 1 {
		t.Fatalf("the first step after the rewind: %+v", start)
	}
	// The forked turn failed before it made a session: the next attempt
	// forks s1 again, never continues it.
	actions = s.sleepThrough(s.finish(1, engine.StepResult{ExitCode: 1}), 10*time.Second)
	wantFork(t, actions, "s1", true, true)
	// The fourth attempt asks for a human; the resume goes on in s4.
	if p, ok := last(s.finish(1, engine.StepResult{ExitCode: 1, SessionID: "s4"})).(engine.Pause); !ok || p.Firing.Reason != engine.ReasonNeedsHuman {
		t.Fatalf("want the escalation's pause, got %+v", s.state.Pause)
	}
	actions = s.send(engine.Resumed{At: s.now})
	wantFork(t, actions, "s4", false, false)
	if s.state.ForkOnly["feature:f"] {
		t.Errorf("s4 is the phase's own session, still fork only: %v", s.state.ForkOnly)
	}
	actions = s.finish(1, engine.StepResult{SessionID: "s4"})
	wantFork(t, actions, "s4", true, false)

	// A phase recorded before its sessions were starts fresh after a
	// rewind, as it always did.
	s.finish(1, engine.StepResult{SessionID: "s5"})
	s.state.Phases[1].NativeAtStart = nil
	s.send(engine.Rewound{At: s.now, Phase: "two"})
	actions = s.send(engine.Resumed{At: s.now})
	wantFork(t, actions, "", false, false)
}

func TestForkResumesTheParentsSessionAsAFork(t *testing.T) {
	plan := planOf(t, "version: 1\nagent: {kind: command, command: [a], feature: f}\nphases: [{name: one}, {name: two}]\n")
	s := &session{t: t, plan: plan, now: time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)}
	actions := s.send(engine.Started{At: s.now, From: "two", Parent: &engine.Parent{Session: "p", Phase: "two",
		Native: map[string]engine.NativeRef{"feature:f": {ID: "s1", Agent: "command"}}}})
	wantFork(t, actions, "s1", true, true)
	if s.state.Parent == nil || s.state.Parent.Native != nil || s.state.Phases[0].Status != engine.StatusSkipped {
		t.Fatalf("the fork's state: parent %+v, phases %+v", s.state.Parent, s.state.Phases)
	}
	actions = s.finish(1, engine.StepResult{SessionID: "s2"})
	if _, ok := last(actions).(engine.Complete); !ok || len(s.state.ForkOnly) != 0 || s.state.NativeSessions["feature:f"] != "s2" {
		t.Fatalf("after the forked turn: %#v, fork only %v, sessions %v", actions, s.state.ForkOnly, s.state.NativeSessions)
	}

	// Another agent never gets the parent's session.
	other := planOf(t, "version: 1\nagent: {kind: command, command: [a], model: m2, feature: f}\nphases: [{name: one}, {name: two}]\n")
	s = &session{t: t, plan: other, now: time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)}
	actions = s.send(engine.Started{At: s.now, From: "two", Parent: &engine.Parent{Session: "p", Phase: "two",
		Native: map[string]engine.NativeRef{"feature:f": {ID: "s1", Agent: "command"}}}})
	wantFork(t, actions, "", false, false)
}
