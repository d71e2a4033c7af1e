package triggers_test

import (
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/triggers"
)

func TestClosest(t *testing.T) {
	long := strings.Repeat("b", 100_000)
	tests := []struct {
		word       string
		candidates []string
		want       string
	}{
		{"tokns", triggers.VariableNames(), "tokens"},
		{"consecutive_erors", triggers.VariableNames(), "consecutive_errors"},
		{"colour", []string{"agent", "name", "phases"}, ""},
		// The distance is at least the difference of the lengths: a
		// candidate far longer or shorter is no typo of the word.
		{"tset", []string{"test", strings.Repeat("t", 50)}, "test"},
		// A name this long is no typo; comparing it would cost the product
		// of the lengths (10^10 steps here).
		{long, []string{long[1:], "test"}, ""},
	}
	for _, tt := range tests {
		if got := triggers.Closest(tt.word, tt.candidates); got != tt.want {
			t.Errorf("Closest(%.20q…) = %.20q, want %q", tt.word, got, tt.want)
		}
	}
}

// BenchmarkClosestLongWord is Closest of a 100,000-character name among
// names as long: 16 s before it gave up on words too long to be typos.
func BenchmarkClosestLongWord(b *testing.B) {
	word, other := strings.Repeat("b", 100_000), strings.Repeat("a", 100_000)
	for b.Loop() {
		triggers.Closest(word, []string{other, "test"})
	}
}
