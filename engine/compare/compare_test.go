package compare_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/compare"
)

func side(phases ...engine.PhaseReport) compare.Side {
	return compare.Side{Report: engine.StatusReport{ID: "x", Status: "completed", Phases: phases}}
}

func completed(name string, attempts int, codes ...int) engine.PhaseReport {
	return engine.PhaseReport{Name: name, Status: "completed", Attempts: attempts, ExitCodes: codes, Tokens: 100}
}

// The divergence is the first phase whose status, attempts, exit codes,
// triggers or decisions differ, with what differed; tokens, files and
// summaries that differ are shown and do not count.
func TestDiffDivergenceIsTheFirstPhaseThatDiffers(t *testing.T) {
	a := side(completed("design", 1, 0), completed("build", 1, 0), completed("review", 1, 0))
	b := side(completed("design", 1, 0), completed("build", 2, 1, 0), engine.PhaseReport{Name: "review", Status: "failed", Attempts: 1, ExitCodes: []int{3}})
	b.Report.Phases[0].Tokens = 999
	b.Report.Phases[0].Summary = "another summary"
	b.Report.Phases[0].FilesChanged = []string{"new.txt"}
	a.Report.Phases[1].Fired = []engine.Firing{{Reason: "checkpoint"}}
	b.Report.Phases[1].Fired = []engine.Firing{{Reason: "checkpoint"}}

	r := compare.Sessions(a, b)
	if r.Same || r.Divergence == nil {
		t.Fatalf("same %v, divergence %+v: want a divergence", r.Same, r.Divergence)
	}
	if r.Divergence.Phase != "build" || !reflect.DeepEqual(r.Divergence.What, []string{"attempts", "exit_codes"}) {
		t.Errorf("divergence %+v, want build: attempts and exit codes", r.Divergence)
	}
	if want := "attempts 1 → 2; exit codes [0] → [1 0]"; r.Divergence.Text != want {
		t.Errorf("text %q, want %q", r.Divergence.Text, want)
	}
	design := r.Phases[0]
	if len(design.Differs) != 0 || design.Tokens.Delta != 899 || !slices.Equal(design.FilesAdded, []string{"new.txt"}) {
		t.Errorf("design: %+v; want no divergence, +899 tokens, new.txt added", design)
	}
	if !slices.Contains(design.SummaryDiff, "+another summary") || !strings.HasPrefix(design.SummaryDiff[0], "--- a/design") {
		t.Errorf("summary diff %q", design.SummaryDiff)
	}
	if got := r.Phases[2].Differs; !reflect.DeepEqual(got, []string{"status", "exit_codes"}) {
		t.Errorf("review differs in %v, want status and exit codes", got)
	}
}

// Different triggers, or different decisions of the working set, are a
// divergence too.
func TestDiffDivergenceInTriggersAndDecisions(t *testing.T) {
	a, b := side(completed("design", 1, 0)), side(completed("design", 1, 0))
	a.Report.Phases[0].Fired = []engine.Firing{{Reason: "checkpoint"}}
	if r := compare.Sessions(a, b); r.Divergence == nil || !reflect.DeepEqual(r.Divergence.What, []string{"triggers_fired"}) {
		t.Errorf("divergence %+v, want the triggers", r.Divergence)
	}
	a.Report.Phases[0].Fired = nil
	a.WorkingSet.Decisions = []engine.MemoryItem{{Text: "plain text", Phase: "design"}}
	b.WorkingSet.Decisions = []engine.MemoryItem{{Text: "JSON", Phase: "design"}}
	if r := compare.Sessions(a, b); r.Divergence == nil || !reflect.DeepEqual(r.Divergence.What, []string{"decisions"}) {
		t.Errorf("divergence %+v, want the decisions", r.Divergence)
	}
	b.WorkingSet.Decisions[0].Text = "plain text"
	if r := compare.Sessions(a, b); !r.Same {
		t.Errorf("divergence %+v, want none", r.Divergence)
	}
}

// Sessions of different pipelines: phases are matched by name, and one
// only a session has is listed, in its place, and diverges.
func TestDiffPhasesMatchedByName(t *testing.T) {
	a := side(completed("design", 1, 0), completed("build", 1, 0))
	b := side(completed("design", 1, 0), completed("test", 1, 0), completed("build", 1, 0))
	r := compare.Sessions(a, b)
	var names []string
	for _, p := range r.Phases {
		names = append(names, p.Name+":"+p.In)
	}
	if want := []string{"design:both", "test:b", "build:both"}; !slices.Equal(names, want) {
		t.Errorf("phases %v, want %v", names, want)
	}
	if !slices.Equal(r.OnlyB, []string{"test"}) || len(r.OnlyA) != 0 || r.Divergence == nil || r.Divergence.Phase != "test" {
		t.Errorf("only in B %v, only in A %v, divergence %+v", r.OnlyB, r.OnlyA, r.Divergence)
	}
}
