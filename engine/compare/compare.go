// Package compare puts two sessions side by side, phase by phase, and
// finds the first point where they diverged: what pipeline diff prints.
// It is pure: it reads two status reports and working sets, nothing
// else.
package compare

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/internal/textdiff"
)

// Side is one session as the comparison reads it: its status report,
// its working set (for the decisions of each phase), and the agents its
// plan runs (kind/model, in the order the phases first use them).
type Side struct {
	Report     engine.StatusReport
	WorkingSet engine.WorkingSet
	Agents     []string
}

// Result is the comparison; its JSON is stable (README, "pipeline diff").
type Result struct {
	A Head `json:"a"`
	B Head `json:"b"`
	// Same: no divergence (the same phases, with the same status,
	// attempts, exit codes, triggers fired and decisions); tokens, cost,
	// time, files and summaries may still differ.
	Same bool `json:"same"`
	// Divergence is the first phase where the sessions differ, and how;
	// null when Same.
	Divergence *Divergence `json:"divergence"`
	Phases     []PhaseDiff `json:"phases"`
	OnlyA      []string    `json:"only_in_a"`
	OnlyB      []string    `json:"only_in_b"`
	Tokens     IntPair     `json:"tokens"`
	CostUSD    FloatPair   `json:"cost_usd"`
	ElapsedMS  IntPair     `json:"elapsed_ms"`
	Status     StringPair  `json:"status"`
	Agents     StringsPair `json:"agents"`
	Context    ContextPair `json:"context"`
}

// Head names a session of the comparison.
type Head struct {
	ID       string           `json:"id"`
	Pipeline string           `json:"pipeline"`
	File     string           `json:"file"`
	Spec     string           `json:"spec,omitempty"`
	Status   string           `json:"status"`
	ReplayOf *engine.ReplayOf `json:"replay_of,omitempty"`
	Agents   []string         `json:"agents"`
}

// Divergence says where the sessions first differ: the phase (in A's
// order, then B's), and each field that differs there.
type Divergence struct {
	Phase string   `json:"phase"`
	What  []string `json:"what"`
	// Text says it in a line: "attempts 1 → 2; exit codes [0] → [1 0]".
	Text string `json:"text"`
}

// IntPair is a number of each session and B's minus A's.
type IntPair struct {
	A     int64 `json:"a"`
	B     int64 `json:"b"`
	Delta int64 `json:"delta"`
}

// FloatPair is an amount of each session and B's minus A's.
type FloatPair struct {
	A     float64 `json:"a"`
	B     float64 `json:"b"`
	Delta float64 `json:"delta"`
}

// StringPair is a value of each session.
type StringPair struct {
	A string `json:"a"`
	B string `json:"b"`
}

// StringsPair is a list of each session.
type StringsPair struct {
	A []string `json:"a"`
	B []string `json:"b"`
}

// IntsPair is a list of numbers of each session.
type IntsPair struct {
	A []int `json:"a"`
	B []int `json:"b"`
}

// ContextPair is the resume-context account of each session.
type ContextPair struct {
	A engine.ContextAccount `json:"a"`
	B engine.ContextAccount `json:"b"`
}

// PhaseDiff is one phase of both sessions (or of one: In says which).
type PhaseDiff struct {
	Name string `json:"name"`
	// In is "both", "a" or "b".
	In         string      `json:"in"`
	Status     StringPair  `json:"status"`
	Attempts   IntPair     `json:"attempts"`
	Tokens     IntPair     `json:"tokens"`
	CostUSD    FloatPair   `json:"cost_usd"`
	DurationMS IntPair     `json:"duration_ms"`
	ExitCodes  IntsPair    `json:"exit_codes"`
	Fired      StringsPair `json:"triggers_fired"`
	Decisions  StringsPair `json:"decisions"`
	// FilesAdded are the files B changed in the phase and A did not;
	// FilesRemoved those A changed and B did not.
	FilesAdded   []string `json:"files_added"`
	FilesRemoved []string `json:"files_removed"`
	// Summary is the summary of each; SummaryDiff the unified diff from
	// A's to B's, one line each (empty when they are the same).
	Summary     StringPair `json:"summary"`
	SummaryDiff []string   `json:"summary_diff"`
	// Differs names the fields that make the phase diverge: status,
	// attempts, exit_codes, triggers_fired, decisions; or "phase" for a
	// phase one session lacks.
	Differs []string `json:"differs"`
}

// Sessions compares two sessions. Phases are matched by name: B's
// phases that A lacks are listed after A's, at the place B has them.
func Sessions(a, b Side) Result {
	ra, rb := a.Report, b.Report
	r := Result{
		A: head(a), B: head(b),
		Tokens:    ints(int64(ra.Tokens), int64(rb.Tokens)),
		CostUSD:   floats(ra.CostUSD, rb.CostUSD),
		ElapsedMS: ints(ra.ElapsedMS, rb.ElapsedMS),
		Status:    StringPair{ra.Status, rb.Status},
		Agents:    StringsPair{orEmpty(a.Agents), orEmpty(b.Agents)},
		Context:   ContextPair{ra.Context, rb.Context},
		Phases:    []PhaseDiff{}, OnlyA: []string{}, OnlyB: []string{},
	}
	for _, name := range phaseOrder(ra.Phases, rb.Phases) {
		pa, inA := phase(ra.Phases, name)
		pb, inB := phase(rb.Phases, name)
		d := phaseDiff(name, pa, pb, decisions(a.WorkingSet, name), decisions(b.WorkingSet, name))
		switch {
		case !inB:
			d.In, d.Differs = "a", []string{"phase"}
			r.OnlyA = append(r.OnlyA, name)
		case !inA:
			d.In, d.Differs = "b", []string{"phase"}
			r.OnlyB = append(r.OnlyB, name)
		}
		if r.Divergence == nil && len(d.Differs) > 0 {
			r.Divergence = &Divergence{Phase: name, What: d.Differs, Text: describe(d)}
		}
		r.Phases = append(r.Phases, d)
	}
	r.Same = r.Divergence == nil
	return r
}

func head(s Side) Head {
	r := s.Report
	return Head{ID: r.ID, Pipeline: r.Pipeline, File: r.File, Spec: r.Spec, Status: r.Status, ReplayOf: r.ReplayOf, Agents: orEmpty(s.Agents)}
}

// phaseOrder is A's phases, with B's that A lacks placed after the phase
// B has before them.
func phaseOrder(a, b []engine.PhaseReport) []string {
	var order []string
	for _, p := range a {
		order = append(order, p.Name)
	}
	for i, p := range b {
		if slices.Contains(order, p.Name) {
			continue
		}
		at := 0
		if i > 0 {
			at = slices.Index(order, b[i-1].Name) + 1
		}
		order = slices.Insert(order, at, p.Name)
	}
	return order
}

func phase(list []engine.PhaseReport, name string) (engine.PhaseReport, bool) {
	i := slices.IndexFunc(list, func(p engine.PhaseReport) bool { return p.Name == name })
	if i < 0 {
		return engine.PhaseReport{Status: "-"}, false
	}
	return list[i], true
}

// decisions are the working set's decisions made in phase, oldest first.
func decisions(w engine.WorkingSet, phase string) []string {
	out := []string{}
	for _, d := range w.Decisions {
		if d.Phase == phase {
			out = append(out, d.Text)
		}
	}
	return out
}

func phaseDiff(name string, a, b engine.PhaseReport, decA, decB []string) PhaseDiff {
	d := PhaseDiff{Name: name, In: "both",
		Status:       StringPair{a.Status, b.Status},
		Attempts:     ints(int64(a.Attempts), int64(b.Attempts)),
		Tokens:       ints(int64(a.Tokens), int64(b.Tokens)),
		CostUSD:      floats(a.CostUSD, b.CostUSD),
		DurationMS:   ints(a.DurationMS, b.DurationMS),
		ExitCodes:    IntsPair{orEmpty(a.ExitCodes), orEmpty(b.ExitCodes)},
		Fired:        StringsPair{reasons(a.Fired), reasons(b.Fired)},
		Decisions:    StringsPair{decA, decB},
		FilesAdded:   minus(b.FilesChanged, a.FilesChanged),
		FilesRemoved: minus(a.FilesChanged, b.FilesChanged),
		Summary:      StringPair{a.Summary, b.Summary},
		SummaryDiff:  summaryDiff(name, a.Summary, b.Summary),
		Differs:      []string{},
	}
	if d.Status.A != d.Status.B {
		d.Differs = append(d.Differs, "status")
	}
	if d.Attempts.A != d.Attempts.B {
		d.Differs = append(d.Differs, "attempts")
	}
	if !slices.Equal(d.ExitCodes.A, d.ExitCodes.B) {
		d.Differs = append(d.Differs, "exit_codes")
	}
	if !slices.Equal(d.Fired.A, d.Fired.B) {
		d.Differs = append(d.Differs, "triggers_fired")
	}
	if !slices.Equal(d.Decisions.A, d.Decisions.B) {
		d.Differs = append(d.Differs, "decisions")
	}
	return d
}

// describe says how a phase diverges, field by field.
func describe(d PhaseDiff) string {
	var parts []string
	for _, what := range d.Differs {
		switch what {
		case "phase":
			parts = append(parts, "only session "+strings.ToUpper(d.In)+" has this phase")
		case "status":
			parts = append(parts, fmt.Sprintf("status %s → %s", d.Status.A, d.Status.B))
		case "attempts":
			parts = append(parts, fmt.Sprintf("attempts %d → %d", d.Attempts.A, d.Attempts.B))
		case "exit_codes":
			parts = append(parts, fmt.Sprintf("exit codes %v → %v", d.ExitCodes.A, d.ExitCodes.B))
		case "triggers_fired":
			parts = append(parts, fmt.Sprintf("triggers fired [%s] → [%s]", strings.Join(d.Fired.A, " "), strings.Join(d.Fired.B, " ")))
		case "decisions":
			parts = append(parts, fmt.Sprintf("decisions %d → %d, not the same", len(d.Decisions.A), len(d.Decisions.B)))
		}
	}
	return strings.Join(parts, "; ")
}

func reasons(fired []engine.Firing) []string {
	out := []string{}
	for _, f := range fired {
		out = append(out, f.Reason)
	}
	return out
}

// minus is what a has and b does not, in a's order.
func minus(a, b []string) []string {
	out := []string{}
	for _, f := range a {
		if !slices.Contains(b, f) {
			out = append(out, f)
		}
	}
	return out
}

// summaryDiff is the unified diff of two summaries, line by line.
func summaryDiff(phase, a, b string) []string {
	if a == b {
		return []string{}
	}
	if a != "" && !strings.HasSuffix(a, "\n") {
		a += "\n"
	}
	if b != "" && !strings.HasSuffix(b, "\n") {
		b += "\n"
	}
	text := textdiff.Unified("a/"+phase, "b/"+phase, a, b)
	return strings.Split(strings.TrimRight(text, "\n"), "\n")
}

func ints(a, b int64) IntPair       { return IntPair{a, b, b - a} }
func floats(a, b float64) FloatPair { return FloatPair{a, b, b - a} }

func orEmpty[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}
