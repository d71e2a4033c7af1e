package triggers_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/triggers"
)

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		source     string
		kind       triggers.Kind
		line, col  int // col is 0-based, as expr counts
		message    string
		hintSubstr string
	}{
		{"tokns > 15000", triggers.Condition, 1, 0, `unknown variable "tokns"`, `did you mean "tokens"`},
		{"tokens", triggers.Condition, 1, 0, "must give true or false, but this gives a number", "condition"},
		{"output", triggers.Condition, 1, 0, "gives a string", ""},
		{"tokens >", triggers.Condition, 1, 8, "the expression ends too early", "operator needs a value"},
		{"exit_code != 0 ||\n  foo", triggers.Condition, 2, 2, `unknown variable "foo"`, "docs/expressions.md"},
		{`elapsed > "30m"`, triggers.Condition, 1, 8, "mismatched types", `duration("30m")`},
		{"tokens + 1", triggers.Duration, 1, 0, "gives a number, not a duration", "duration"},
		{"10x", triggers.Duration, 1, 0, `"10x" is not a duration`, "such as 10s"},
		{"-10s", triggers.Duration, 1, 0, `"-10s" is negative`, "such as 10s"},
		{" 1h-5m ", triggers.Duration, 1, 0, `"1h-5m" is not a duration`, "such as 10s"},
		{`duration("10q") * 2`, triggers.Duration, 1, 9, `"10q" is not a duration`, "number and a unit"},
		{`elapsed > duration("3 m")`, triggers.Condition, 1, 19, `"3 m" is not a duration`, ""},
		{"steps.test.exitcode == 0", triggers.Condition, 1, 11, `a step has no field "exitcode"`, `did you mean "exit_code"`},
		{"   ", triggers.Condition, 1, 0, "empty", ""},
		{"exit_code == 0 )", triggers.Condition, 1, 15, `unexpected ")"`, "check the syntax"},
		{"exit_code = 0", triggers.Condition, 1, 10, `unexpected "="`, "compare with =="},
		{`output contains "FAIL`, triggers.Condition, 1, 16, "the text opened here is never closed", "close it"},
		{"phase == 'a' &&\n  output contains 'it\\'s", triggers.Condition, 2, 18, "never closed", ""},
		// A when: reads only what is known before its phase runs; the
		// other expressions cannot read phases.
		{`spec.priority == "low" && tokens > 5`, triggers.When, 1, 26, "tokens is not known then", "phases.<name>.status"},
		{`$env["spec"] != nil`, triggers.When, 1, 0, "cannot read $env", "by name"},
		{`priority == "low"`, triggers.When, 1, 0, `unknown variable "priority"`, "read as spec.priority"},
		{`phase == "docs"`, triggers.When, 1, 0, "phase is not known then", ""},
		{`phasess.build.status == "done"`, triggers.When, 1, 0, `unknown variable "phasess"`, `did you mean "phases"?`},
		{`phases.design.status == "completed"`, triggers.Condition, 1, 0, "phases is read only by a phase's when:", "steps.<name>"},
		{`phases.design.stauts == "completed"`, triggers.When, 1, 14, `a phase has no field "stauts"`, `did you mean "status"`},
		{`files_changed`, triggers.When, 1, 0, "must give true or false", `spec.priority != "low"`},
		// The 101st level: expr's parser recurses at each, before it counts
		// parts.
		{strings.Repeat("(", 100_000) + "tokens" + strings.Repeat(")", 100_000) + " > 0", triggers.Condition, 1, 100, "the expression nests more than 100 levels deep here", "split it"},
		{strings.Repeat("!", 101) + "checkpoint", triggers.Condition, 1, 100, "nests more than 100 levels", ""},
		{"checkpoint ||\n " + strings.Repeat("not ", 200) + "timed_out", triggers.Condition, 2, 401, "nests more than 100 levels", ""},
		// The + that makes the 10001st part.
		{strings.Repeat("tokens + ", 6000) + "1 > 0", triggers.Condition, 1, 9*5000 + 7, "the expression is too long: it has more than 10000 parts", "split it"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%.40s", tt.source), func(t *testing.T) {
			_, err := triggers.Compile(tt.source, tt.kind)
			var ce *triggers.CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v (%T), want a *CompileError", err, err)
			}
			if ce.Line != tt.line || ce.Column != tt.col {
				t.Errorf("at %d:%d, want %d:%d (%s)", ce.Line, ce.Column, tt.line, tt.col, ce.Message)
			}
			if !strings.Contains(ce.Message, tt.message) {
				t.Errorf("message %q, want it to contain %q", ce.Message, tt.message)
			}
			if !strings.Contains(ce.Hint, tt.hintSubstr) {
				t.Errorf("hint %q, want it to contain %q", ce.Hint, tt.hintSubstr)
			}
		})
	}
}

func TestEvalCondition(t *testing.T) {
	env := &triggers.Env{
		Tokens: 20000, Elapsed: 31 * time.Minute, ExitCode: 1, Output: "--- FAIL: TestX",
		Steps: map[string]triggers.StepVars{"test": {ExitCode: 0, Ran: true}},
		Spec:  map[string]any{"priority": "high", "tags": []any{"api"}},
	}
	tests := []struct {
		source string
		want   bool
	}{
		{"tokens > 15000", true},
		{"tokens > 25000", false},
		{`elapsed > duration("30m")`, true},
		{`elapsed > duration("1d")`, false},
		{"exit_code != 0 || timed_out", true},
		{`output matches "FAIL"`, true},
		{"steps.test.exit_code == 0 && steps.test.ran", true},
		{`steps.lint.ran`, false},
		{`spec.priority == "high" && "api" in spec.tags`, true},
		{`spec.missing == nil`, true},
	}
	for _, tt := range tests {
		e, err := triggers.Compile(tt.source, triggers.Condition)
		if err != nil {
			t.Fatalf("%s: %v", tt.source, err)
		}
		got, err := e.Eval(env)
		if err != nil || got != tt.want {
			t.Errorf("%s = %v, %v; want %v", tt.source, got, err, tt.want)
		}
	}
}

// A run-time error is an error, never a quiet false.
func TestEvalRuntimeErrorIsAnError(t *testing.T) {
	e, err := triggers.Compile(`spec.points > 3`, triggers.Condition)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := e.Eval(&triggers.Env{Spec: map[string]any{"points": "many"}}); err == nil {
		t.Fatalf("got %v and no error comparing a string with a number", got)
	}
}

func TestEvalDuration(t *testing.T) {
	tests := []struct {
		source string
		env    triggers.Env
		want   time.Duration
	}{
		{"10s", triggers.Env{}, 10 * time.Second},
		{"1d", triggers.Env{}, 24 * time.Hour},
		{`duration("10s") * consecutive_errors`, triggers.Env{ConsecutiveErrors: 3}, 30 * time.Second},
		{`duration("10s") * 1.5`, triggers.Env{}, 15 * time.Second},
		{`duration("1s") * 2 ** attempt`, triggers.Env{Attempt: 3}, 8 * time.Second},
	}
	for _, tt := range tests {
		e, err := triggers.Compile(tt.source, triggers.Duration)
		if err != nil {
			t.Fatalf("%s: %v", tt.source, err)
		}
		got, err := e.EvalDuration(&tt.env)
		if err != nil || got != tt.want {
			t.Errorf("%s = %v, %v; want %v", tt.source, got, err, tt.want)
		}
	}
}

func TestReadsAndStepRefs(t *testing.T) {
	e, err := triggers.Compile(`steps.test.exit_code == 0 && tokens > 5 && steps["unit-tests"].ran`, triggers.Condition)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.Reads, ","); got != "steps,tokens" {
		t.Errorf("reads %s, want steps,tokens", got)
	}
	if len(e.StepRefs) != 2 || e.StepRefs[0].Name != "test" || e.StepRefs[1].Name != "unit-tests" {
		t.Errorf("step refs %+v", e.StepRefs)
	}
	all, err := triggers.Compile(`$env["tokens"] > 5`, triggers.Condition)
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Reads) != len(triggers.Variables) {
		t.Errorf("an expression using $env reads %v, want every variable", all.Reads)
	}
}

// Every variable of the documentation exists in Env, and the reverse.
func TestVariablesMatchEnv(t *testing.T) {
	for _, v := range triggers.Variables {
		kind := triggers.Condition
		if v.Name == "phases" {
			kind = triggers.When // read by a when: only
		}
		if _, err := triggers.Compile(v.Name+" == "+v.Name, kind); err != nil {
			t.Errorf("documented variable %s: %v", v.Name, err)
		}
	}
	if n := triggers.CountExprTags(); n != len(triggers.Variables) {
		t.Errorf("Env has %d variables, the documentation %d", n, len(triggers.Variables))
	}
}

func TestParseDuration(t *testing.T) {
	for text, want := range map[string]time.Duration{"90s": 90 * time.Second, "7d": 7 * 24 * time.Hour, "1d12h": 36 * time.Hour, " 2h ": 2 * time.Hour} {
		if got, err := triggers.ParseDuration(text); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", text, got, err, want)
		}
	}
	for _, bad := range []string{"", "30x", "-5m", "-1d", "d", "1.5d", "5"} {
		if got, err := triggers.ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", bad, got)
		}
	}
	for d, want := range map[time.Duration]string{0: "none", 30 * time.Second: "30s", 90 * time.Second: "1m30s", 2 * time.Hour: "2h", 48 * time.Hour: "2d", 150 * time.Minute: "2h30m"} {
		if got := triggers.FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// Issue 8: an expression must give the same answer when a session is
// replayed on another machine or at another time, so the built-ins that
// read the clock, the machine's time zones or Go's random map order are
// refused at compile time, each with what to write instead.
func TestIssue8NonDeterministicBuiltinsAreRefused(t *testing.T) {
	tests := []struct {
		source    string
		line, col int
		message   string
		hint      string
	}{
		{`now() > date("2026-01-01")`, 1, 0, "now() reads the wall clock", "elapsed, phase_elapsed or session_elapsed"},
		{`tokens > 1 && now().Hour() > 9`, 1, 14, "now() reads the wall clock", "elapsed"},
		{"now", 1, 0, "now() reads the wall clock", "elapsed"},
		{`date("2026-01-01").In(timezone("Europe/Paris")).Hour() > 9`, 1, 22, "timezone() reads the time zones of the machine", "offset"},
		{`date("2026-01-01").Local().Hour() > 9`, 1, 19, ".Local() reads the time zone of the machine", "UTC"},
		{`keys(spec)[0] == "status"`, 1, 0, "keys() gives the keys in a random order", `"status" in spec`},
		{`first(values(spec)) == nil`, 1, 6, "values() gives the values in a random order", "spec.<key>"},
		{`len(toPairs(spec)) > 1`, 1, 4, "toPairs() gives the pairs in a random order", "len(spec)"},
		{`date("2026-01-01", "2006-01-02", "Europe/Paris") > date("2026-01-01")`, 1, 0, "too many arguments", "offset"},
	}
	for _, tt := range tests {
		t.Run(tt.source, func(t *testing.T) {
			_, err := triggers.Compile(tt.source, triggers.Condition)
			var ce *triggers.CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v (%T), want a *CompileError", err, err)
			}
			if ce.Line != tt.line || ce.Column != tt.col {
				t.Errorf("at %d:%d, want %d:%d (%s)", ce.Line, ce.Column, tt.line, tt.col, ce.Message)
			}
			if !strings.Contains(ce.Message, tt.message) || !strings.Contains(ce.Hint, tt.hint) {
				t.Errorf("message %q, hint %q; want them to contain %q and %q", ce.Message, ce.Hint, tt.message, tt.hint)
			}
		})
	}
}

// Issue 8: expr's date() reads a zone abbreviation such as CET with the
// machine's time zone, so the same text gave another instant on a machine
// in Paris. Ours reads it the same everywhere.
func TestIssue8DateDoesNotDependOnTheMachinesZone(t *testing.T) {
	e, err := triggers.Compile(`date("02 Jan 06 15:04 CET") == date("2006-01-02T15:04:00Z") && date("2026-03-01") > date(spec.created)`, triggers.Condition)
	if err != nil {
		t.Fatal(err)
	}
	env := &triggers.Env{Spec: map[string]any{"created": "2026-02-28"}}
	saved := time.Local
	t.Cleanup(func() { time.Local = saved })
	for _, zone := range []*time.Location{time.UTC, time.FixedZone("CET", 3600)} {
		time.Local = zone
		if got, err := e.Eval(env); err != nil || !got {
			t.Errorf("with the machine in %s: %v, %v; want true", zone, got, err)
		}
	}
	bad, err := triggers.Compile(`date(spec.created) > date("2026-01-01")`, triggers.Condition)
	if err != nil {
		t.Fatal(err)
	}
	for _, created := range []any{"yesterday", 20260101} {
		if got, err := bad.Eval(&triggers.Env{Spec: map[string]any{"created": created}}); err == nil {
			t.Errorf("date(%#v) gave %v and no error", created, got)
		}
	}
}

// Issue 9: timeout: 999999999d wrapped around time.Duration and ran with
// no limit, or a small one; a duration too long to count is refused.
func TestIssue9DurationsTooLongAreRefused(t *testing.T) {
	for text, want := range map[string]string{
		"999999999d":              `"999999999d" is too long: a duration is at most 106751d, about 292 years`,
		"106752d":                 `"106752d" is too long: a duration is at most 106751d, about 292 years`,
		"2562048h":                `"2562048h" is too long: a duration is at most 106751d, about 292 years`,
		"1d2562047h":              `"1d2562047h" is too long: a duration is at most 106751d, about 292 years`,
		"100000000000000000000ns": `"100000000000000000000ns" is too long: a duration is at most 106751d, about 292 years`,
		"-10s":                    `"-10s" is negative`,
		"-1d2h":                   `"-1d2h" is negative`,
		"-x":                      `"-x" is not a duration`,
	} {
		got, err := triggers.ParseDuration(text)
		if err == nil || err.Error() != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want the error %s", text, got, err, want)
		}
	}
	for text, want := range map[string]time.Duration{"106751d": 106751 * 24 * time.Hour, "2562047h": 2562047 * time.Hour, "-0s": 0} {
		if got, err := triggers.ParseDuration(text); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", text, got, err, want)
		}
	}
	// At run time, a back-off that overflows is an error, not a wrapped
	// (negative, so immediate) wait.
	e, err := triggers.Compile(`duration("1h") * 1e20 * consecutive_errors`, triggers.Duration)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := e.EvalDuration(&triggers.Env{ConsecutiveErrors: 1}); err == nil || !strings.Contains(err.Error(), "too long for a duration") {
		t.Errorf("EvalDuration gave %v, %v; want an error saying it is too long", d, err)
	}
}

// Issue 9: tokens % 0 > 1 compiled, then paused every run with
// expression-error. What fails whatever the variables hold is refused at
// load time, at the part that fails; a back-off that is always negative
// too.
func TestIssue9ExpressionsThatAlwaysFailAreRefused(t *testing.T) {
	tests := []struct {
		source  string
		kind    triggers.Kind
		col     int // 0-based
		message string
	}{
		{"tokens % 0 > 1", triggers.Condition, 7, "tokens % 0 divides by zero: it fails each time it is evaluated"},
		{"tokens % (2 - 2) > 1", triggers.Condition, 7, "tokens % 0 divides by zero: it fails each time it is evaluated"},
		{"cost_usd / 0.0 > 1", triggers.Condition, 9, "cost_usd / 0 divides by zero: it gives an infinite number"},
		{`tokens > int("many")`, triggers.Condition, 9, `int("many") always fails: `},
		{`exit_code != 0 && tokens > [1, 2][5]`, triggers.Condition, 33, `[1,2][5] always fails: index out of range: 5 (array length is 2)`},
		{`duration("10s") - duration("1m")`, triggers.Duration, 16, "the expression always gives -50s, a negative duration"},
		{`duration("10s") * 1e30`, triggers.Duration, 16, "too long for a duration"},
	}
	for _, tt := range tests {
		_, err := triggers.Compile(tt.source, tt.kind)
		var ce *triggers.CompileError
		if !errors.As(err, &ce) {
			t.Errorf("%s: got %v, want a *CompileError", tt.source, err)
			continue
		}
		if ce.Line != 1 || ce.Column != tt.col || !strings.Contains(ce.Message, tt.message) {
			t.Errorf("%s: %d:%d %q, want 1:%d %q", tt.source, ce.Line, ce.Column, ce.Message, tt.col, tt.message)
		}
	}
	for _, ok := range []struct {
		source string
		kind   triggers.Kind
	}{
		{"tokens % 2 == 0", triggers.Condition},
		{"1 > 2", triggers.Condition},
		{`duration("10s") * consecutive_errors`, triggers.Duration},
		{`duration("1m") - duration("10s")`, triggers.Duration},
		{`date("2026-01-01") < date("2027-01-01") && checkpoint`, triggers.Condition},
		{`len(repeat("x", 3)) > tokens`, triggers.Condition},
		{strings.Repeat("(", 100) + "tokens" + strings.Repeat(")", 100) + " > 0", triggers.Condition},
		{`output contains "` + strings.Repeat("((!", 200) + `"`, triggers.Condition},
		{strings.Repeat("!checkpoint && ", 500) + "true", triggers.Condition},
	} {
		if _, err := triggers.Compile(ok.source, ok.kind); err != nil {
			t.Errorf("%s: %v, want it to compile", ok.source, err)
		}
	}
}

// Issue 9: a run-time error is an *EvalError at the failing part, which
// the loader's Locate places in the file.
func TestIssue9RunTimeErrorIsPlaced(t *testing.T) {
	e, err := triggers.Compile("checkpoint ||\n  tokens % attempt > 1", triggers.Condition)
	if err != nil {
		t.Fatal(err)
	}
	e.Locate = func(offset int) string { return fmt.Sprintf("phases.yaml:offset %d", offset) }
	_, err = e.Eval(&triggers.Env{})
	var evalErr *triggers.EvalError
	if !errors.As(err, &evalErr) {
		t.Fatalf("Eval gave %v (%T), want a *triggers.EvalError", err, err)
	}
	if evalErr.Offset != 23 || evalErr.Message != "runtime error: integer divide by zero" {
		t.Errorf("%+v: want offset 23, the %%, and expr's message alone", evalErr)
	}
	if want := "phases.yaml:offset 23: checkpoint || tokens % attempt > 1: runtime error: integer divide by zero"; err.Error() != want {
		t.Errorf("the error reads %q, want %q", err, want)
	}
	m := triggers.NewMonitor([]triggers.Named{{Name: "spin", Expr: e}})
	if _, err := m.Check(); err == nil || !strings.HasPrefix(err.Error(), "pause_when.spin: phases.yaml:offset 23: ") {
		t.Errorf("Monitor.Check gave %v, want the placed error", err)
	}
}

// A when: compiles against spec, phases and files_changed, and says which
// phases and spec keys it reads, with their offsets.
func TestWhenReads(t *testing.T) {
	e, err := triggers.Compile(`spec.priority != "low" && phases.design.files_changed > 0 || phases["unit-tests"].status == "skipped" || files_changed > 3`, triggers.When)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.Reads, ","); got != "files_changed,phases,spec" {
		t.Errorf("reads %s", got)
	}
	if len(e.PhaseRefs) != 2 || e.PhaseRefs[0].Name != "design" || e.PhaseRefs[0].Offset != 33 || e.PhaseRefs[1].Name != "unit-tests" {
		t.Errorf("phase refs %+v", e.PhaseRefs)
	}
	if len(e.SpecRefs) != 1 || e.SpecRefs[0].Name != "priority" {
		t.Errorf("spec refs %+v", e.SpecRefs)
	}
	env := &triggers.Env{Spec: map[string]any{"priority": "high"}, FilesChanged: 1,
		Phases: map[string]triggers.PhaseVars{"design": {Status: "completed", FilesChanged: 2}, "unit-tests": {Status: "pending"}}}
	if yes, err := e.Eval(env); err != nil || !yes {
		t.Errorf("Eval = %v, %v; want true", yes, err)
	}
	env.Phases["design"] = triggers.PhaseVars{Status: "completed"}
	if yes, err := e.Eval(env); err != nil || yes {
		t.Errorf("Eval with no files changed = %v, %v; want false", yes, err)
	}
}
