package local

import (
	"regexp"
	"testing"
)

// TestLimitShapesReadAsTheRegularExpressionsDid checks the hand-written
// readers of Limits against the regular expressions they replaced, on
// the shapes they take and on near misses.
func TestLimitShapesReadAsTheRegularExpressionsDid(t *testing.T) {
	tokenPattern := regexp.MustCompile(`^\s*tokens\s*>=?\s*([0-9_]+)\s*$`)
	timePattern := regexp.MustCompile(`^\s*elapsed\s*>=?\s*duration\(\s*"([^"]+)"\s*\)\s*$`)
	sources := []string{
		"tokens > 100", "tokens>=1_000_000", " \ttokens \n>  5 \r\f", "tokens > ", "tokens > 1x", "tokens = 5",
		"tokens >= = 5", "tokens > = 5", "tokens2 > 5", "tokens > 5 && x", "x tokens > 5", "",
		`elapsed > duration("10m")`, `elapsed>=duration( "1h30m" ) `, ` elapsed > duration ("5s")`, `elapsed > duration("")`,
		`elapsed > duration("5s"`, `elapsed > duration("5s") + 1`, `elapsed > duration(5s)`, `elapsed > duration("a"b")`,
		`elapsed > durations("5s")`, `elapsed < duration("5s")`, `elapsed > duration("5 s" )`, `elapsed>duration("x")`,
	}
	for _, source := range sources {
		want, wantOK := "", false
		if m := tokenPattern.FindStringSubmatch(source); m != nil {
			want, wantOK = m[1], true
		}
		if got, ok := tokenLimitOf(source); got != want || ok != wantOK {
			t.Errorf("tokenLimitOf(%q) = %q, %v; the expression read %q, %v", source, got, ok, want, wantOK)
		}
		want, wantOK = "", false
		if m := timePattern.FindStringSubmatch(source); m != nil {
			want, wantOK = m[1], true
		}
		if got, ok := timeLimitOf(source); got != want || ok != wantOK {
			t.Errorf("timeLimitOf(%q) = %q, %v; the expression read %q, %v", source, got, ok, want, wantOK)
		}
	}
}

// BenchmarkLimitShapes is what a run's start paid for the limits of a
// phase with the built-in pause_when triggers: the regular expressions
// compiled (before) against the hand-written readers (now).
func BenchmarkLimitShapes(b *testing.B) {
	sources := []string{"tokens > 200_000", `elapsed > duration("2h")`, "step.exit_code != 0"}
	b.Run("compiled", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tokenPattern := regexp.MustCompile(`^\s*tokens\s*>=?\s*([0-9_]+)\s*$`)
			timePattern := regexp.MustCompile(`^\s*elapsed\s*>=?\s*duration\(\s*"([^"]+)"\s*\)\s*$`)
			for _, s := range sources {
				tokenPattern.FindStringSubmatch(s)
				timePattern.FindStringSubmatch(s)
			}
		}
	})
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, s := range sources {
				tokenLimitOf(s)
				timeLimitOf(s)
			}
		}
	})
}
