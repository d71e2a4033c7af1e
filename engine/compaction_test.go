package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
)

const compacting = `version: 1
agent: {kind: claude, feature: f}
defaults:
  compact_when: context_tokens > 150000
phases:
  - name: build
    steps: [{name: agent, agent: {}}, {name: more, agent: {}, prompt: go on}]
  - name: review
`

func wantCompact(t *testing.T, actions []engine.Action, sessionID string) engine.Compact {
	t.Helper()
	c, ok := last(actions).(engine.Compact)
	if !ok || c.SessionID != sessionID {
		t.Fatalf("want Compact{session %q}, got %#v", sessionID, actions)
	}
	return c
}

// compact_when true after a step: the native session is asked for the
// working set, the answer is merged, and the next step starts a fresh
// session with the resume context (the working set and the tail of the
// output).
func TestCompactionAsksTheNativeSessionThenStartsAFreshOne(t *testing.T) {
	s, actions := newSession(t, planOf(t, compacting))
	wantStart(t, actions, 0, 0, 1, "")
	// Below the threshold: no compaction, the native session goes on.
	actions = s.finish(time.Minute, engine.StepResult{SessionID: "native-1", ContextTokens: 1000, Output: "step one\n"})
	wantStart(t, actions, 0, 1, 1, "native-1")
	output := strings.Repeat("line of output\n", 100) + "the last line\n"
	actions = s.finish(time.Minute, engine.StepResult{SessionID: "native-1", ContextTokens: 160000, Output: output})
	c := wantCompact(t, actions, "native-1")
	if c.Phase != 0 || c.Step != 1 || s.state.Compaction == nil || !s.state.StepRunning {
		t.Fatalf("compact %+v, state %+v", c, s.state.Compaction)
	}
	s.now = s.now.Add(10 * time.Second)
	actions = s.send(engine.Compacted{At: s.now, Tokens: 900, Answer: &engine.CompactionAnswer{
		Summary: "handlers done", PinnedFacts: []string{"the API is v2"}, Decisions: []string{"use FTS5"},
		OpenTasks: []string{"write docs"}, FilesTouched: []string{"api/h.go"}}})
	start, ok := last(actions).(engine.StartStep)
	// Regression: the feature's next step recovered the CLI's session of
	// the feature, the one just compacted, and went on in it.
	if !ok || start.Phase != 1 || start.SessionID != "" || start.Recover || !start.ResumeContext || start.Resuming == nil ||
		start.Resuming.Firing.Reason != engine.ReasonCompaction {
		t.Fatalf("after the compaction: %#v", actions)
	}
	if !strings.HasSuffix(start.Resuming.RecentOutput, "the last line") || strings.Count(start.Resuming.RecentOutput, "\n") >= 40 {
		t.Errorf("recent output is not the bounded tail: %q", start.Resuming.RecentOutput)
	}
	ws := s.state.WorkingSet
	if ws.PhaseSummary("build") != "handlers done" || len(ws.Pinned) != 1 || len(ws.Decisions) != 1 || len(ws.Open) != 1 ||
		len(ws.Files) != 1 || ws.Open[0].Source != engine.SourceCompaction {
		t.Errorf("working set after the compaction: %+v", ws)
	}
	rec := s.state.Phases[0]
	if rec.Compactions != 1 || rec.Fired[len(rec.Fired)-1].Reason != engine.ReasonCompaction || rec.Tokens == 0 {
		t.Errorf("the phase does not count the compaction: %+v", rec)
	}
	if s.state.Compaction != nil || len(s.state.NativeSessions) != 0 {
		t.Errorf("the native session was not dropped: %v", s.state.NativeSessions)
	}
}

func TestCompactionOfACommandAgentFallsBack(t *testing.T) {
	plan := planOf(t, strings.Replace(compacting, "kind: claude", "kind: command, command: [agent]", 1))
	s, _ := newSession(t, plan)
	actions := s.finish(time.Minute, engine.StepResult{Tokens: 5, ContextTokens: 200000})
	start, ok := last(actions).(engine.StartStep)
	if !ok || start.Step != 1 || !start.ResumeContext || start.Resuming.Firing.Reason != engine.ReasonCompaction {
		t.Fatalf("a command agent's compaction: %#v", actions)
	}
	if note := s.state.Phases[0].Fired[0].Note; !strings.Contains(note, "command agent") {
		t.Errorf("the fallback is not recorded: %q", note)
	}
}

// A pause asked for during the compaction turn stops it; the session
// pauses before the next step, which resume starts (the step before the
// compaction is not run again).
func TestPauseDuringCompactionPausesBeforeTheNextStep(t *testing.T) {
	s, _ := newSession(t, planOf(t, compacting))
	s.finish(time.Minute, engine.StepResult{SessionID: "native-1", ContextTokens: 1000})
	wantCompact(t, s.finish(time.Minute, engine.StepResult{SessionID: "native-1", ContextTokens: 160000}), "native-1")
	if _, ok := last(s.send(engine.PauseRequested{At: s.now, Reason: engine.ReasonInterrupted})).(engine.StopStep); !ok {
		t.Fatal("the compaction turn is not stopped")
	}
	wantPause(t, s.send(engine.Compacted{At: s.now, Fallback: "stopped"}), engine.ReasonInterrupted)
	if s.state.Phase != 1 || s.state.Step != 0 {
		t.Errorf("paused at phase %d step %d, want the next step (1, 0)", s.state.Phase, s.state.Step)
	}
	wantStart(t, s.send(engine.Resumed{At: s.now}), 1, 0, 1, "")
}

// A runner that died in the compaction turn runs it again.
func TestARecoveredCompactionRunsAgain(t *testing.T) {
	s, _ := newSession(t, planOf(t, compacting))
	s.finish(time.Minute, engine.StepResult{SessionID: "native-1", ContextTokens: 1000})
	s.finish(time.Minute, engine.StepResult{SessionID: "native-1", ContextTokens: 160000})
	wantCompact(t, s.send(engine.Recovered{At: s.now}), "native-1")
}

func TestParseCompactionAnswer(t *testing.T) {
	for _, c := range []struct {
		name, text, summary string
		ok                  bool
	}{
		{"bare", `{"summary": "s1", "open_tasks": ["a"]}`, "s1", true},
		{"fenced with words", "Here it is:\n```json\n{\"summary\": \"s2\", \"decisions\": [\"d\"]}\n```\nDone.", "s2", true},
		{"the last of two", `{"summary": "old"} and then {"summary": "new"}`, "new", true},
		{"braces in strings", `{"summary": "a } inside { text"}`, "a } inside { text", true},
		{"another object", `{"name": "x"}`, "", false},
		{"empty shape", `{"summary": "", "open_tasks": []}`, "", false},
		{"broken", `{"summary": "s`, "", false},
		{"no json", "I could not do it.", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, ok := engine.ParseCompactionAnswer(c.text)
			if ok != c.ok || a.Summary != c.summary {
				t.Errorf("got %+v, %v; want summary %q, %v", a, ok, c.summary, c.ok)
			}
		})
	}
}

// The compacted session is not adopted again by its feature: the next
// turn is fresh, and asks for no recovery.
func TestACompactedSessionIsNotRecovered(t *testing.T) {
	s, _ := newSession(t, planOf(t, compacting))
	s.finish(time.Minute, engine.StepResult{SessionID: "native-1", ContextTokens: 1000})
	s.finish(time.Minute, engine.StepResult{SessionID: "native-1", ContextTokens: 160000})
	start, ok := last(s.send(engine.Compacted{At: s.now, Fallback: "no answer"})).(engine.StartStep)
	if !ok || start.SessionID != "" || start.Recover {
		t.Fatalf("after a compaction the next turn is %#v; want a fresh session, no recovery", start)
	}
	// Once the fresh session has an id, it is the one kept.
	s.finish(time.Minute, engine.StepResult{SessionID: "native-2", ContextTokens: 2000})
	if s.state.NativeSessions["feature:f"] != "native-2" || s.state.Dropped["feature:f"] {
		t.Errorf("native sessions %v, dropped %v", s.state.NativeSessions, s.state.Dropped)
	}
}

// No compaction after the step that ends the session: no turn follows.
func TestNoCompactionWhenTheSessionEnds(t *testing.T) {
	plan := planOf(t, strings.Replace(compacting, "  - name: review\n", "", 1))
	s, _ := newSession(t, plan)
	s.finish(time.Minute, engine.StepResult{SessionID: "native-1", ContextTokens: 1000})
	actions := s.finish(time.Minute, engine.StepResult{SessionID: "native-1", ContextTokens: 160000})
	if _, ok := last(actions).(engine.Complete); !ok {
		t.Fatalf("the last step's end: %#v, want Complete with no compaction", actions)
	}
}
