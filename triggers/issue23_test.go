package triggers

import (
	"errors"
	"strings"
	"testing"
)

// compileProblem compiles source and returns its *CompileError.
func compileProblem(t *testing.T, source string, kind Kind) *CompileError {
	t.Helper()
	_, err := Compile(source, kind)
	var ce *CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("%s: %v, want a *CompileError", source, err)
	}
	return ce
}

// Issue 23, item 27: backoff: 1s * 2 said `bad number syntax: "1s"`, expr's
// words for a duration written bare inside an expression. The message
// now says it is a duration and how one is written there, with the
// expression corrected as the hint, and the caret on the duration's first
// character; a number that is no duration is said to be no number.
func TestIssue23BareDurationInExpressionIsExplained(t *testing.T) {
	cases := []struct {
		source       string
		kind         Kind
		column       int
		message, fix string
	}{
		{"1s * 2", Duration, 0, `1s is a duration written bare: inside an expression a duration is written duration("1s")`, `write duration("1s") * 2`},
		{"elapsed > 30m", Condition, 10, `30m is a duration written bare`, `write elapsed > duration("30m")`},
		{"elapsed > 10ms", Condition, 10, `10ms is a duration written bare`, `duration("10ms")`},
		{"phase_elapsed > 1h30m && tokens > 5", Condition, 16, `1h30m is a duration written bare`, `phase_elapsed > duration("1h30m") && tokens > 5`},
		{"session_elapsed >= 2d", Condition, 19, `2d is a duration written bare`, `duration("2d")`},
		{"duration(\"1s\") * consecutive_errors + 1.5s", Duration, 38, `1.5s is a duration written bare`, `duration("1.5s")`},
		{"elapsed > 30min", Condition, 10, `30min is neither a number nor a duration`, `duration("30m")`},
		{"tokens > 0x1g", Condition, 9, `0x1g is not a number`, `15000`},
	}
	for _, c := range cases {
		ce := compileProblem(t, c.source, c.kind)
		if !strings.HasPrefix(ce.Message, c.message) || !strings.Contains(ce.Hint, c.fix) || ce.Line != 1 || ce.Column != c.column {
			t.Errorf("%s: %d:%d %q (hint %q), want 1:%d %q (hint with %q)", c.source, ce.Line, ce.Column, ce.Message, ce.Hint, c.column, c.message, c.fix)
		}
		if strings.Contains(ce.Message, "bad number syntax") {
			t.Errorf("%s: %q still has expr's words", c.source, ce.Message)
		}
	}
}

// Issue 23, item 27: steps["s"].output[99999] said `type string[int] is
// undefined`: expr's words, with Go's type names. Reading a part of a
// value that has none names the value as written and what it is, and the
// hint says what can be done with it; no message names a Go type.
func TestIssue23IndexOfTextIsExplained(t *testing.T) {
	cases := []struct{ source, message, hint string }{
		{`steps["s"].output[99999] == "a"`, `steps["s"].output is text (a string): [99999] cannot take one element of it`, `steps["s"].output[-200:]`},
		{`output[0] == "x"`, `output is text (a string): [0] cannot take one element of it`, `contains`},
		{`tokens[1] > 5`, `tokens is a whole number: it has no elements to take with [1]`, `spec["priority"]`},
		{`elapsed[0] > duration("1s")`, `elapsed is a duration: it has no elements to take with [0]`, `steps["test"]`},
		{`checkpoint[0]`, `checkpoint is true or false: it has no elements to take with [0]`, `steps["test"]`},
		{`cost_usd[0] > 1`, `cost_usd is a number: it has no elements to take with [0]`, `steps["test"]`},
		{`output.size > 5`, `output is text (a string): it has no field "size"`, `exit_code`},
		{`steps[0].exit_code == 1`, `steps is read by name, not by a number: steps[0]`, `steps.<name>`},
	}
	for _, c := range cases {
		ce := compileProblem(t, c.source, Condition)
		if ce.Message != c.message || !strings.Contains(ce.Hint, c.hint) {
			t.Errorf("%s: %q (hint %q), want %q (hint with %q)", c.source, ce.Message, ce.Hint, c.message, c.hint)
		}
		for _, goWord := range []string{"string[", "int[", "time.Duration", "triggers.", "map[", "is undefined"} {
			if strings.Contains(ce.Message, goWord) {
				t.Errorf("%s: %q names Go's %q", c.source, ce.Message, goWord)
			}
		}
	}
}
