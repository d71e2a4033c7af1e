package engine_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
)

const memoryPipeline = `version: 1
agent: {kind: command, command: [agent]}
phases:
  - name: design
  - name: build
`

func notes(kind string, texts ...string) []engine.MemoryNote {
	var out []engine.MemoryNote
	for _, t := range texts {
		out = append(out, engine.MemoryNote{Kind: kind, Text: t})
	}
	return out
}

func texts(items []engine.MemoryItem) []string {
	out := []string{}
	for _, m := range items {
		out = append(out, m.Text)
	}
	return out
}

func (s *session) remember(source string, n ...engine.MemoryNote) {
	s.now = s.now.Add(time.Second)
	if actions := s.send(engine.Remembered{At: s.now, Source: source, Notes: n}); len(actions) != 0 {
		s.t.Fatalf("Remembered asked for actions: %v", actions)
	}
}

func TestMarkersFeedTheWorkingSet(t *testing.T) {
	s, _ := newSession(t, planOf(t, memoryPipeline))
	s.remember(engine.SourceAgent, notes(engine.NoteDecision, "use SQLite FTS5", "use SQLite FTS5 ")...)
	s.remember(engine.SourceAgent, notes(engine.NoteFact, "the API is v2")...)
	s.remember(engine.SourceAgent, notes(engine.NoteTodo, "write the migration", "Fix the login bug", "add tests for the parser")...)
	s.remember(engine.SourceAgent, notes(engine.NoteSummary, "designed the index")...)
	ws := s.state.WorkingSet
	if got, want := texts(ws.Decisions), []string{"use SQLite FTS5"}; !reflect.DeepEqual(got, want) {
		t.Errorf("decisions %q, want %q (the same text twice is one decision)", got, want)
	}
	if got := texts(ws.Pinned); !reflect.DeepEqual(got, []string{"the API is v2"}) {
		t.Errorf("facts %q", got)
	}
	if len(ws.Open) != 3 || ws.Open[0].Phase != "design" || ws.Open[0].Source != engine.SourceAgent {
		t.Errorf("open tasks %+v", ws.Open)
	}
	if s.state.Phases[0].Summary != "designed the index" || ws.PhaseSummary("design") != "designed the index" {
		t.Errorf("the [SUMMARY] did not become the phase's summary: %q", s.state.Phases[0].Summary)
	}
	// The step ends with another last line: the agent's [SUMMARY] stands.
	s.finish(time.Second, engine.StepResult{Output: "all done\n", Files: []string{"docs/index.md"}})
	if s.state.Phases[0].Summary != "designed the index" {
		t.Errorf("the last line replaced the agent's summary: %q", s.state.Phases[0].Summary)
	}
	if len(s.state.WorkingSet.Files) != 1 || s.state.WorkingSet.Files[0].Path != "docs/index.md" || s.state.WorkingSet.Files[0].Phase != "design" {
		t.Errorf("files touched %+v", s.state.WorkingSet.Files)
	}
	// The next phase printed no [SUMMARY]: its last line is its summary.
	s.finish(time.Second, engine.StepResult{Output: "built it\n"})
	if got := s.state.WorkingSet.PhaseSummary("build"); got != "built it" {
		t.Errorf("build's summary %q", got)
	}
}

func TestDoneClosesTheTaskItNames(t *testing.T) {
	for _, c := range []struct {
		done   string
		closes string // "" when no task matches
	}{
		{"write the migration", "write the migration"},
		{"Write the migration.", "write the migration"},
		{"fix login bug", "Fix the login bug"},
		{"fixed the login bug", "Fix the login bug"},
		// Regression: a plural of a short word, or a verb ending in "e"
		// in another tense, closed nothing (2 of 4 words shared).
		{"fixed the login bugs", "Fix the login bug"},
		{"writing the migration", "write the migration"},
		{"added tests for the parser", "add tests for the parser"},
		{"add tests for parser", "add tests for the parser"},
		{"wrote the migration", "write the migration"},
		{"add tests for the lexer", ""}, // 2 of 4 words shared
		{"fix the logout page", ""},
		{"deploy", ""},
	} {
		t.Run(c.done, func(t *testing.T) {
			s, _ := newSession(t, planOf(t, memoryPipeline))
			s.remember(engine.SourceAgent, notes(engine.NoteTodo, "write the migration", "Fix the login bug", "add tests for the parser")...)
			s.remember(engine.SourceAgent, notes(engine.NoteDone, c.done)...)
			ws := s.state.WorkingSet
			if c.closes == "" {
				if len(ws.Open) != 3 {
					t.Fatalf("%q closed a task: open %q", c.done, texts(ws.Open))
				}
				if got := texts(ws.Done); !reflect.DeepEqual(got, []string{c.done}) {
					t.Errorf("an unmatched [DONE] is kept as done work: %q", got)
				}
				return
			}
			if len(ws.Open) != 2 || len(ws.Done) != 1 || ws.Done[0].Text != c.closes || ws.Done[0].ClosedBy != c.done || ws.Done[0].Closed == nil {
				t.Fatalf("%q: open %q, done %+v; want %q closed", c.done, texts(ws.Open), ws.Done, c.closes)
			}
		})
	}
}

func TestHumansEditTheWorkingSetByNumber(t *testing.T) {
	s, _ := newSession(t, planOf(t, memoryPipeline))
	s.remember(engine.SourceHuman, notes(engine.NoteFact, "staging is read-only")...)
	s.remember(engine.SourceHuman, notes(engine.NoteTodo, "document the flag")...)
	ws := s.state.WorkingSet
	fact, task := ws.Pinned[0].ID, ws.Open[0].ID
	if fact == task || fact == 0 {
		t.Fatalf("items are not numbered apart: %d, %d", fact, task)
	}
	s.remember(engine.SourceHuman, engine.MemoryNote{Kind: engine.NoteDone, ID: task}, engine.MemoryNote{Kind: engine.NoteUnpin, ID: fact})
	ws = s.state.WorkingSet
	if len(ws.Pinned) != 0 || len(ws.Open) != 0 || len(ws.Done) != 1 || ws.Done[0].ID != task {
		t.Errorf("after done %d and unpin %d: %+v", task, fact, ws)
	}
}

// The lists are bounded: the oldest go first, but not what a human
// pinned.
func TestTheWorkingSetIsBounded(t *testing.T) {
	s, _ := newSession(t, planOf(t, memoryPipeline))
	s.remember(engine.SourceHuman, notes(engine.NoteFact, "pinned by hand")...)
	var many []engine.MemoryNote
	for i := range 500 {
		many = append(many, engine.MemoryNote{Kind: engine.NoteFact, Text: fmt.Sprintf("fact %d", i)},
			engine.MemoryNote{Kind: engine.NoteDecision, Text: fmt.Sprintf("decision %d", i)})
	}
	s.remember(engine.SourceAgent, many...)
	ws := s.state.WorkingSet
	if len(ws.Pinned) != 200 || ws.Pinned[0].Text != "pinned by hand" || ws.Pinned[199].Text != "fact 499" {
		t.Errorf("facts: %d, first %q, last %q", len(ws.Pinned), ws.Pinned[0].Text, ws.Pinned[len(ws.Pinned)-1].Text)
	}
	if len(ws.Decisions) != 200 || ws.Decisions[0].Text != "decision 300" {
		t.Errorf("decisions: %d, first %q", len(ws.Decisions), ws.Decisions[0].Text)
	}
	long := string(make([]byte, 5000))
	s.remember(engine.SourceAgent, engine.MemoryNote{Kind: engine.NoteTodo, Text: "x" + long + "y"})
	if n := len(s.state.WorkingSet.Open[0].Text); n > engine.MaxMemoryText {
		t.Errorf("an item of %d bytes was kept", n)
	}
}

// The working set is in the event log: replaying the log's events
// (through their JSON, as the store keeps them) rebuilds it.
func TestTheWorkingSetIsRebuiltByReplay(t *testing.T) {
	plan := planOf(t, memoryPipeline)
	s, _ := newSession(t, plan)
	log := []engine.Event{engine.Started{At: s.now}}
	record := func(ev engine.Event) {
		s.send(ev)
		log = append(log, ev)
	}
	record(engine.Remembered{At: s.now, Source: engine.SourceAgent, Notes: notes(engine.NoteTodo, "a", "b")})
	record(engine.Remembered{At: s.now, Source: engine.SourceAgent, Notes: notes(engine.NoteDecision, "d")})
	record(engine.StepFinished{At: s.now, Result: engine.StepResult{Output: "x", Files: []string{"f.go"}}})
	record(engine.Remembered{At: s.now, Source: engine.SourceHuman, Notes: notes(engine.NoteDone, "a")})

	var replayed engine.State
	for _, ev := range log {
		typ, payload, err := engine.EncodeEvent(ev)
		if err != nil {
			t.Fatal(err)
		}
		decoded, err := engine.DecodeEvent(typ, payload)
		if err != nil {
			t.Fatal(err)
		}
		replayed, _ = engine.Decide(plan, replayed, decoded)
	}
	if !reflect.DeepEqual(deepCopy(t, replayed).WorkingSet, deepCopy(t, s.state).WorkingSet) {
		t.Errorf("replayed working set\n%+v\nwant\n%+v", replayed.WorkingSet, s.state.WorkingSet)
	}
	if len(replayed.WorkingSet.Open) != 1 || len(replayed.WorkingSet.Done) != 1 || len(replayed.WorkingSet.Files) != 1 {
		t.Errorf("replayed %+v", replayed.WorkingSet)
	}
}

// A phase's summary, when the agent printed no [SUMMARY], is its last
// line of output that is not a marker (the marker is in the working set).
func TestThePhaseSummarySkipsMarkerLines(t *testing.T) {
	s, _ := newSession(t, planOf(t, memoryPipeline))
	s.finish(time.Second, engine.StepResult{Output: "wrote the storage layer\n[TODO] write its tests\n- [DECISION] keep it in SQLite\n\n"})
	if got := s.state.Phases[0].Summary; got != "wrote the storage layer" {
		t.Errorf("summary %q", got)
	}
}
