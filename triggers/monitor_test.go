package triggers_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/triggers"
)

// monitor compiles named conditions, first in the list first.
func monitor(t *testing.T, named ...string) *triggers.Monitor {
	t.Helper()
	var list []triggers.Named
	for _, n := range named {
		name, source, _ := strings.Cut(n, ": ")
		e, err := triggers.Compile(source, triggers.Condition)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		list = append(list, triggers.Named{Name: name, Expr: e})
	}
	return triggers.NewMonitor(list)
}

// check is one Check after do, and what it must give: the trigger that
// fired ("" for none), a part of the error ("" for none), and how many
// expressions it ran.
type check struct {
	do        func(m *triggers.Monitor)
	fired     string
	err       string
	evaluated int
}

func TestMonitor(t *testing.T) {
	nothing := func(*triggers.Monitor) {}
	// spec.points > 3 is a run-time error once points is text: a Check
	// that evaluates it when it should not fails the row.
	breakSpec := func(m *triggers.Monitor) { m.Env.Spec["points"] = "many" }
	tests := []struct {
		name     string
		triggers []string
		checks   []check
	}{
		{
			name:     "the first check evaluates every trigger, the next only what changed",
			triggers: []string{"tokens: tokens > 100", "time: elapsed > duration(\"30m\")"},
			checks: []check{
				{do: nothing, evaluated: 2},
				{do: nothing, evaluated: 0},
				{do: func(m *triggers.Monitor) { m.SetTokens(50, 0) }, evaluated: 1},
				{do: func(m *triggers.Monitor) { m.SetTokens(150, 0) }, fired: "tokens", evaluated: 1},
			},
		},
		{
			name:     "a trigger reading nothing that changed is not evaluated",
			triggers: []string{"points: spec.points > 3", "tokens: tokens > 100", "time: elapsed > duration(\"30m\")"},
			checks: []check{
				{do: nothing, evaluated: 3},
				{do: func(m *triggers.Monitor) { breakSpec(m); m.SetTokens(10, 0) }, evaluated: 1},
				{do: func(m *triggers.Monitor) { m.SetElapsed(time.Minute, 0, 0) }, evaluated: 1},
				{do: func(m *triggers.Monitor) { m.Changed(triggers.VarOutput | triggers.VarCostUSD) }, evaluated: 0},
			},
		},
		{
			name:     "a run-time error is returned as an error, with its trigger, never as false",
			triggers: []string{"points: spec.points > 3", "tokens: tokens > 0"},
			checks: []check{
				{do: nothing, evaluated: 2},
				{do: func(m *triggers.Monitor) { breakSpec(m); m.Changed(triggers.VarOf("spec")) }, fired: "points", err: "pause_when.points: ", evaluated: 1},
			},
		},
		{
			name:     "the first true trigger in the list wins, and the rest are not evaluated",
			triggers: []string{"step: tokens > 10", "session: total_tokens > 10", "points: spec.points > 3"},
			checks: []check{
				{do: nothing, evaluated: 3},
				{do: func(m *triggers.Monitor) { breakSpec(m); m.SetTokens(20, 0); m.Changed(triggers.VarOf("spec")) }, fired: "step", evaluated: 1},
			},
		},
		{
			name:     "with the same change, the order of the list decides",
			triggers: []string{"session: total_tokens > 10", "step: tokens > 10"},
			checks: []check{
				{do: func(m *triggers.Monitor) { m.SetTokens(20, 0) }, fired: "session", evaluated: 1},
			},
		},
		{
			name:     "a false trigger does not hide a later true one",
			triggers: []string{"step: tokens > 1000", "session: total_tokens > 1000"},
			checks: []check{
				{do: nothing, evaluated: 2},
				{do: func(m *triggers.Monitor) { m.SetTokens(10, 995) }, fired: "session", evaluated: 2},
			},
		},
		{
			name:     "SetTokens sets the step's tokens and the session's total, and only a new count is a change",
			triggers: []string{"total: total_tokens == 105 && tokens == 5"},
			checks: []check{
				{do: nothing, evaluated: 1},
				{do: func(m *triggers.Monitor) { m.SetTokens(5, 100) }, fired: "total", evaluated: 1},
				{do: func(m *triggers.Monitor) { m.SetTokens(5, 100) }, evaluated: 0},
			},
		},
		{
			name: "SetElapsed moves the step's, the phase's and the session's clocks together",
			triggers: []string{
				"all: elapsed == duration(\"31m\") && phase_elapsed == duration(\"1h31m\") && session_elapsed == duration(\"2h31m\")",
				"tokens: tokens > 0",
			},
			checks: []check{
				{do: nothing, evaluated: 2},
				{do: func(m *triggers.Monitor) { m.SetElapsed(31*time.Minute, time.Hour, 2*time.Hour) }, fired: "all", evaluated: 1},
				{do: func(m *triggers.Monitor) { m.SetElapsed(31*time.Minute, time.Hour, 2*time.Hour) }, evaluated: 0},
			},
		},
		{
			name:     "each clock variable is a change of the clock",
			triggers: []string{"phase: phase_elapsed > duration(\"1h\")", "session: session_elapsed > duration(\"2h\")"},
			checks: []check{
				{do: nothing, evaluated: 2},
				{do: func(m *triggers.Monitor) { m.SetElapsed(time.Second, 30*time.Minute, 2*time.Hour) }, fired: "session", evaluated: 2},
				{do: func(m *triggers.Monitor) { m.SetElapsed(31*time.Minute, 30*time.Minute, 2*time.Hour) }, fired: "phase", evaluated: 1},
			},
		},
		{
			name:     "changes add up until the next check",
			triggers: []string{"note: checkpoint_note contains \"?\"", "fail: output contains \"FAIL\"", "cost: cost_usd > 1"},
			checks: []check{
				{do: nothing, evaluated: 3},
				{do: func(m *triggers.Monitor) {
					m.Env.CheckpointNote, m.Env.Output = "ready", "ok"
					m.Changed(triggers.VarCheckpoint)
					m.Changed(triggers.VarOutput)
				}, evaluated: 2},
				{do: func(m *triggers.Monitor) { m.Env.Output = "--- FAIL"; m.Changed(triggers.VarOutput) }, fired: "fail", evaluated: 1},
			},
		},
		{
			name:     "$env can read anything, so any change evaluates it",
			triggers: []string{"any: $env[\"cost_usd\"] > 1"},
			checks: []check{
				{do: nothing, evaluated: 1},
				{do: func(m *triggers.Monitor) { m.Env.CostUSD = 2; m.Changed(triggers.VarFilesChanged) }, fired: "any", evaluated: 1},
			},
		},
		{
			name:     "no triggers",
			triggers: nil,
			checks: []check{
				{do: func(m *triggers.Monitor) { m.SetTokens(1, 1); m.SetElapsed(time.Hour, 0, 0) }, evaluated: 0},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := monitor(t, tt.triggers...)
			m.Env.Spec = map[string]any{"points": 1}
			for i, c := range tt.checks {
				before := m.Evaluated
				c.do(m)
				fired, err := m.Check()
				got := ""
				if fired != nil {
					got = fired.Name
				}
				if got != c.fired {
					t.Errorf("check %d fired %q, want %q", i+1, got, c.fired)
				}
				switch {
				case c.err == "" && err != nil:
					t.Errorf("check %d: %v", i+1, err)
				case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
					t.Errorf("check %d gave error %v, want one containing %q", i+1, err, c.err)
				}
				if n := m.Evaluated - before; n != c.evaluated {
					t.Errorf("check %d evaluated %d expressions, want %d", i+1, n, c.evaluated)
				}
			}
		})
	}
}

func TestMonitorNeeds(t *testing.T) {
	m := monitor(t, "tokens: tokens > 100", "slow: phase_elapsed > duration(\"1h\")", "done: checkpoint")
	tests := []struct {
		v    triggers.Var
		want bool
	}{
		{triggers.VarTokens, true},
		{triggers.VarTotalTokens, false},
		{triggers.VarOutput, false},
		{triggers.VarCostUSD, false},
		{triggers.VarElapsed, false},
		{triggers.VarPhaseElapsed, true},
		{triggers.VarTime, true},
		{triggers.VarCheckpoint, true},
		{triggers.VarOf("checkpoint_note"), false},
		{triggers.VarOutput | triggers.VarTokens, true},
		{0, false},
	}
	for _, tt := range tests {
		if got := m.Needs(tt.v); got != tt.want {
			t.Errorf("Needs(%b) = %v, want %v", tt.v, got, tt.want)
		}
	}
	if want := triggers.VarTokens | triggers.VarPhaseElapsed | triggers.VarOf("checkpoint"); m.Reads != want {
		t.Errorf("Reads = %b, want %b", m.Reads, want)
	}
	if m := monitor(t); m.Needs(triggers.VarOutput | triggers.VarTime) {
		t.Error("a monitor without triggers needs a variable")
	}
}

// Each variable has a bit of its own, and a name that is not a variable
// has none.
func TestVarOf(t *testing.T) {
	seen := triggers.Var(0)
	for _, v := range triggers.Variables {
		bit := triggers.VarOf(v.Name)
		if bit == 0 || bit&(bit-1) != 0 || seen&bit != 0 {
			t.Errorf("VarOf(%q) = %b: want one bit no other variable has", v.Name, bit)
		}
		seen |= bit
	}
	if got := triggers.VarOf("tokns"); got != 0 {
		t.Errorf("VarOf(tokns) = %b, want 0", got)
	}
	if triggers.VarTime != triggers.VarElapsed|triggers.VarPhaseElapsed|triggers.VarSessionElapsed {
		t.Errorf("VarTime = %b", triggers.VarTime)
	}
}

// Values is the record of a trigger that fired: what it read, long text cut
// to its end (where the latest output is), durations as text.
func TestEnvValues(t *testing.T) {
	env := &triggers.Env{Tokens: 12, Elapsed: 90 * time.Second, Output: strings.Repeat("a", 300) + "--- FAIL: TestX", Phase: "build"}
	got := env.Values([]string{"tokens", "elapsed", "output", "phase", "tokns"})
	if got["tokens"] != 12 || got["elapsed"] != "1m30s" || got["phase"] != "build" {
		t.Errorf("values %v", got)
	}
	if _, ok := got["tokns"]; ok || len(got) != 4 {
		t.Errorf("values %v: want the four names that are variables", got)
	}
	out, _ := got["output"].(string)
	if !strings.HasPrefix(out, "…") || !strings.HasSuffix(out, "--- FAIL: TestX") || len([]rune(out)) != 201 {
		t.Errorf("output %q: want … and its last 200 characters", out)
	}
}

// The checkpoint decision is on the latency of every pause: a Check of the
// default checkpoint trigger (the variable alone, read without expr's
// machine) allocates nothing, and gives what the machine gives beside a
// trigger the machine runs.
func TestCheckpointCheckAllocatesNothing(t *testing.T) {
	m := monitor(t, "tokens: tokens > 1000", "checkpoint: checkpoint")
	m.Check()
	m.Env.Checkpoint, m.Env.CheckpointNote = true, "design drafted"
	var named *triggers.Named
	allocs := testing.AllocsPerRun(100, func() {
		m.Changed(triggers.VarCheckpoint)
		named, _ = m.Check()
	})
	if named == nil || named.Name != "checkpoint" {
		t.Fatalf("fired %v, want checkpoint", named)
	}
	if allocs != 0 {
		t.Errorf("%v allocations per Check, want 0", allocs)
	}
	both := monitor(t, "later: checkpoint && checkpoint_note == \"later\"", "checkpoint: checkpoint")
	for _, c := range []struct {
		checkpoint bool
		note, want string
	}{{false, "", ""}, {true, "design drafted", "checkpoint"}, {true, "later", "later"}} {
		both.Env.Checkpoint, both.Env.CheckpointNote = c.checkpoint, c.note
		both.Changed(triggers.VarCheckpoint)
		named, err := both.Check()
		if got := ""; err != nil || (named == nil) != (c.want == "") || (named != nil && named.Name != c.want) {
			if named != nil {
				got = named.Name
			}
			t.Errorf("checkpoint %v, note %q: fired %q (%v), want %q", c.checkpoint, c.note, got, err, c.want)
		}
	}
}
