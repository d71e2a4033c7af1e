package session_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
)

const replayPipeline = `version: 1
agent: {kind: command, command: [agent]}
defaults:
  retry: {when: "false"}
phases:
  - name: design
    auto_advance: false
  - name: build
`

// at gives the events of a scenario times one second apart.
type clockSteps struct{ t time.Time }

func (c *clockSteps) next() time.Time {
	c.t = c.t.Add(time.Second)
	return c.t
}

// The human interventions of a session are found at the points they
// answered: notes and memory given on a paused session and the resume's
// own notes at the checkpoint; a pause by hand is no point, so its notes
// (and its resume's) go with the next point, the gate after design.
func TestReplayCuesFindEachInterventionAtItsPoint(t *testing.T) {
	plan := planOf(t, replayPipeline)
	c := &clockSteps{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	fact := engine.MemoryNote{Kind: engine.NoteFact, Text: "greetings are lower case"}
	events := []engine.Event{
		engine.Started{At: c.next()},
		engine.StepFinished{At: c.next(), Result: engine.StepResult{Checkpoint: true, CheckpointNote: "drafted"}},
		engine.Noted{At: c.next(), Notes: "note on the paused session"},
		engine.Remembered{At: c.next(), Source: engine.SourceHuman, Notes: []engine.MemoryNote{fact}},
		engine.Remembered{At: c.next(), Source: engine.SourceAgent, Notes: []engine.MemoryNote{{Kind: engine.NoteFact, Text: "the agent's"}}},
		engine.Resumed{At: c.next(), Notes: "the design is fine; go on"},
		engine.PauseRequested{At: c.next(), Reason: engine.ReasonHuman, Notes: "stop: use the v2 API"},
		engine.StepFinished{At: c.next(), Result: engine.StepResult{Stopped: true, ExitCode: -1}},
		engine.Resumed{At: c.next(), Notes: "v2 is in"},
		engine.StepFinished{At: c.next()}, // design done: the gate
		engine.Resumed{At: c.next(), Notes: "build it"},
		engine.StepFinished{At: c.next()},
	}
	got := session.CuesOf(plan, events)
	want := []session.Cue{
		{Point: session.Point{Phase: "design", Step: "agent", Reason: "checkpoint", N: 1},
			Notes: []string{"note on the paused session"}, Memory: []engine.MemoryNote{fact}, ResumeNotes: "the design is fine; go on"},
		{Point: session.Point{Phase: "build", Step: "agent", Reason: engine.ReasonPhaseComplete, N: 1},
			Notes: []string{"stop: use the v2 API", "v2 is in"}, ResumeNotes: "build it"},
	}
	if !reflect.DeepEqual(got.Cues, want) {
		t.Errorf("cues:\n got %+v\nwant %+v", got.Cues, want)
	}
	if len(got.Unplaced.Notes) != 0 {
		t.Errorf("unplaced notes %q, want none", got.Unplaced.Notes)
	}
}

// A replay finds the cue of the point it stands at: the second checkpoint
// at the same step is told from the first by its number, a failure is a
// point, and a stop the original did not resume has no cue.
func TestReplayPointMatchesTheOriginalsNthStop(t *testing.T) {
	plan := planOf(t, replayPipeline)
	c := &clockSteps{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	checkpoint := engine.StepResult{Checkpoint: true, CheckpointNote: "look"}
	original := []engine.Event{
		engine.Started{At: c.next()},
		engine.StepFinished{At: c.next(), Result: checkpoint},
		engine.Resumed{At: c.next(), Notes: "first"},
		engine.StepFinished{At: c.next(), Result: checkpoint},
		engine.Resumed{At: c.next(), Notes: "second"},
		engine.StepFinished{At: c.next(), Result: engine.StepResult{ExitCode: 2}}, // retry.when false: failed
		engine.Resumed{At: c.next(), Notes: "after the failure"},
	}
	cues := session.CuesOf(plan, original)
	if len(cues.Cues) != 3 {
		t.Fatalf("cues %+v, want 3", cues.Cues)
	}
	// The replay: it stops at the first checkpoint, is given the cue, and
	// stops at the second.
	replay := []engine.Event{engine.Started{At: c.next()}, engine.StepFinished{At: c.next(), Result: checkpoint}}
	p, ok := session.PointOf(plan, replay)
	if cue, found := cues.Find(p); !ok || !found || cue.ResumeNotes != "first" {
		t.Fatalf("at %v (%v): cue %+v (%v), want the first", p, ok, cue, found)
	}
	replay = append(replay, engine.Noted{At: c.next(), Notes: "a note"}) // the same stop
	replay = append(replay, engine.Resumed{At: c.next(), Notes: "first"}, engine.StepFinished{At: c.next(), Result: checkpoint})
	p, ok = session.PointOf(plan, replay)
	if cue, found := cues.Find(p); !ok || !found || cue.ResumeNotes != "second" || p.N != 2 {
		t.Fatalf("at %v (%v): cue %+v (%v), want the second", p, ok, cue, found)
	}
	replay = append(replay, engine.Resumed{At: c.next(), Notes: "second"}, engine.StepFinished{At: c.next(), Result: engine.StepResult{ExitCode: 2}})
	p, ok = session.PointOf(plan, replay)
	if cue, found := cues.Find(p); !ok || !found || cue.ResumeNotes != "after the failure" || p.Reason != "failed" {
		t.Fatalf("at %v (%v): cue %+v (%v), want the failure's", p, ok, cue, found)
	}
	// A third checkpoint the original never had: no cue, the replay stays.
	replay = append(replay, engine.Resumed{At: c.next()}, engine.StepFinished{At: c.next(), Result: checkpoint})
	p, ok = session.PointOf(plan, replay)
	if cue, found := cues.Find(p); !ok || found || p.N != 3 {
		t.Fatalf("at %v (%v): cue %+v (%v), want none at the 3rd checkpoint", p, ok, cue, found)
	}
	// A pause by hand is no point.
	running := []engine.Event{engine.Started{At: c.next()}, engine.PauseRequested{At: c.next(), Reason: engine.ReasonHuman},
		engine.StepFinished{At: c.next(), Result: engine.StepResult{Stopped: true}}}
	if p, ok := session.PointOf(plan, running); ok {
		t.Errorf("a pause by hand is the point %v, want none", p)
	}
}
