package engine

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/pipeline-dev/pipeline/triggers"
)

// ReasonCompaction is the firing a compaction records in its phase's
// history, and what the fresh session's resume context says it
// continues from.
const ReasonCompaction = "compaction"

// Compact asks the runner to run the compaction turn: the compaction
// prompt, sent to the agent's native session SessionID (of session key
// SessionKey) as a turn of step Step of phase Phase. The runner answers
// with Compacted.
type Compact struct {
	Phase, Step int
	Attempt     int
	// Execution numbers the turn as StartStep.Execution does a step's.
	Execution  int `json:",omitempty"`
	SessionKey string
	SessionID  string
}

func (Compact) isAction() {}

// Compacted ends a compaction: the agent's answer, or why there is none
// (Fallback: a command agent, no native session, a failed turn, an
// answer that is not the working set), and what the turn cost.
type Compacted struct {
	At time.Time
	// Execution is the Compact's (0: the turn running).
	Execution int               `json:",omitempty"`
	Answer    *CompactionAnswer `json:",omitempty"`
	Fallback  string            `json:",omitempty"`
	Tokens    int               `json:",omitempty"`
	CostUSD   float64           `json:",omitempty"`
}

func (e Compacted) eventTime() time.Time { return e.At }

// CompactionAnswer is the working set as the compaction prompt asks the
// agent to write it.
type CompactionAnswer struct {
	Summary      string   `json:"summary"`
	PinnedFacts  []string `json:"pinned_facts"`
	Decisions    []string `json:"decisions"`
	OpenTasks    []string `json:"open_tasks"`
	FilesTouched []string `json:"files_touched"`
}

// empty reports whether the answer says nothing.
func (a CompactionAnswer) empty() bool {
	return strings.TrimSpace(a.Summary) == "" && len(a.PinnedFacts)+len(a.Decisions)+len(a.OpenTasks)+len(a.FilesTouched) == 0
}

// ParseCompactionAnswer finds the working set in an agent's answer to
// the compaction prompt: the last JSON object in the text that has at
// least one of its keys (agents wrap it in a ```json fence, or say a word
// before it). It reports false when there is none.
func ParseCompactionAnswer(text string) (CompactionAnswer, bool) {
	var found CompactionAnswer
	ok := false
	for i := 0; i < len(text); {
		j := strings.IndexByte(text[i:], '{')
		if j < 0 {
			break
		}
		start := i + j
		dec := json.NewDecoder(strings.NewReader(text[start:]))
		var raw map[string]json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			i = start + 1
			continue
		}
		var a CompactionAnswer
		if hasAnswerKey(raw) && json.Unmarshal(mustJSON(raw), &a) == nil && !a.empty() {
			found, ok = a, true
		}
		i = start + int(dec.InputOffset())
	}
	return found, ok
}

func hasAnswerKey(raw map[string]json.RawMessage) bool {
	for _, k := range []string{"summary", "pinned_facts", "decisions", "open_tasks", "files_touched"} {
		if _, ok := raw[k]; ok {
			return true
		}
	}
	return false
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// PendingCompaction is a compaction under way: the result of the step
// after which it fired (decided on once the compaction has ended), the
// native session it asks, and the firing.
type PendingCompaction struct {
	Result     StepResult `json:"result"`
	SessionKey string     `json:"session_key"`
	SessionID  string     `json:"session_id,omitempty"`
	Firing     Firing     `json:"firing"`
}

// recentOutputLines and recentOutputBytes bound the tail of the last
// step's output the fresh session gets after a compaction.
const (
	recentOutputLines = 40
	recentOutputBytes = 4 << 10
)

// recentOutput is the end of a step's output: its last lines, at most
// recentOutputBytes, starting at a line.
func recentOutput(out string) string {
	out = strings.TrimRight(out, "\n ")
	if len(out) > recentOutputBytes {
		out = out[len(out)-recentOutputBytes:]
		if i := strings.IndexByte(out, '\n'); i >= 0 {
			out = out[i+1:]
		}
	}
	lines := bytes.Count([]byte(out), []byte("\n")) + 1
	for ; lines > recentOutputLines; lines-- {
		out = out[strings.IndexByte(out, '\n')+1:]
	}
	return out
}

// compactDue starts a compaction when the phase's compact_when is true
// after an agent step: it reports whether it did (the decision on the
// step waits for Compacted) or an expression failed (which pauses).
func (d *decider) compactDue(r StepResult, env *triggers.Env) (stop bool) {
	s, phase, step := d.s, d.phase(), d.step()
	if step.Agent == nil || phase.CompactWhen.Value == nil {
		return false
	}
	due, ok := d.condition(phase.CompactWhen, env)
	if !ok {
		return true
	}
	if !due || d.endsAfter(r) {
		return false
	}
	key := sessionKey(phase, step)
	f := d.firing(ReasonCompaction, phase.CompactWhen.Value, env)
	s.Compaction = &PendingCompaction{Result: r, SessionKey: key, SessionID: s.NativeSessions[key], Firing: f}
	if step.Agent.Value.Kind == "command" || s.Compaction.SessionID == "" {
		// No native session to ask: the markers and the summaries are
		// the working set.
		fallback := "the agent keeps no native session to ask (a command agent): the working set is its markers and the phase summaries"
		if step.Agent.Value.Kind != "command" {
			fallback = "the agent reported no native session to ask: the working set is its markers and the phase summaries"
		}
		d.compacted(Compacted{At: d.now, Fallback: fallback})
		return true
	}
	s.StepRunning = true
	s.Execution++
	d.do(Compact{Phase: s.Phase, Step: s.Step, Attempt: s.Attempt, Execution: s.Execution, SessionKey: key, SessionID: s.Compaction.SessionID})
	return true
}

// endsAfter reports whether the decision on the step's result ends the
// session (it completes or fails): a compaction then would cost a turn
// for a session that no turn follows.
func (d *decider) endsAfter(r StepResult) bool {
	trial := d.s.clone()
	try := decider{plan: d.plan, s: &trial, now: d.now}
	try.decideAfterStep(r)
	for _, a := range try.actions {
		switch a.(type) {
		case Complete, Fail:
			return true
		}
	}
	return false
}

// compacted merges a compaction's answer into the working set, drops the
// native session it replaced (the next turn starts a fresh one, seeded
// with the working set and the tail of recent output), and then decides
// on the step after which it fired.
func (d *decider) compacted(e Compacted) {
	s := d.s
	c := s.Compaction
	if c == nil {
		return
	}
	s.Compaction, s.StepRunning = nil, false
	rec := d.record()
	rec.Compactions++
	s.TotalTokens += e.Tokens
	s.CostUSD += e.CostUSD
	rec.Tokens += e.Tokens
	rec.CostUSD += e.CostUSD
	f := c.Firing
	f.At = d.now
	f.Note = e.Fallback
	if e.Answer != nil {
		f.Note = "the agent wrote its working set"
		a := e.Answer
		w := &s.WorkingSet
		if strings.TrimSpace(a.Summary) != "" {
			w.Remember(MemoryNote{Kind: NoteSummary, Text: a.Summary}, rec.Name, SourceCompaction, d.now)
			rec.Summary = w.PhaseSummary(rec.Name)
		}
		for _, list := range []struct {
			kind  string
			texts []string
		}{{NoteFact, a.PinnedFacts}, {NoteDecision, a.Decisions}, {NoteTodo, a.OpenTasks}} {
			for _, t := range list.texts {
				w.Remember(MemoryNote{Kind: list.kind, Text: t}, rec.Name, SourceCompaction, d.now)
			}
		}
		w.Touch(cleanPaths(a.FilesTouched), rec.Name, d.now)
	}
	rec.Fired = keepLast(append(rec.Fired, f))
	delete(s.NativeSessions, c.SessionKey)
	delete(s.NativeAgents, c.SessionKey)
	delete(s.ForkOnly, c.SessionKey)
	s.markDropped(c.SessionKey)
	s.ResumeContext = true
	s.Resuming = &Resumption{Firing: f, Phase: rec.Name, RecentOutput: recentOutput(c.Result.Output)}
	d.decideAfterStep(c.Result)
	if s.Status != StatusRunning {
		s.Stopping = nil
	}
}

// cleanPaths keeps the paths an agent listed that look like paths.
func cleanPaths(paths []string) []string {
	var out []string
	for _, p := range paths {
		p = strings.TrimSpace(p)
		if p != "" && len(p) < 4096 && !strings.ContainsAny(p, "\n\x00") {
			out = append(out, p)
		}
	}
	return out
}
