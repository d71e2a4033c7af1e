package textdiff

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aymanbagabas/go-udiff"
)

// udiffs is what go-udiff writes for the same texts, as pipeline wrote
// its diffs before this package.
func udiffs(t testing.TB, before, after string) string {
	t.Helper()
	want, err := udiff.ToUnified("a/x", "b/x", before, udiff.Lines(before, after), udiff.DefaultContextLines)
	if err != nil {
		t.Fatalf("udiff: %v", err)
	}
	return want
}

// The diff is go-udiff's, byte for byte, on texts that differ anywhere:
// lines changed, added and removed at the start, middle and end, hunks
// near enough to merge and far enough apart not to, empty texts, and
// last lines with and without a "\n".
func TestUnifiedIsGoUdiffs(t *testing.T) {
	cases := [][2]string{
		{"", ""}, {"a\n", "a\n"}, {"", "a\n"}, {"a\n", ""}, {"", "a"}, {"a", ""},
		{"a", "b"}, {"a\n", "a"}, {"a", "a\n"}, {"a\nb", "a\nc"}, {"a\nb\n", "a\nb"},
		{"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n", "1\nX\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\nY\n15\n"},
		{"1\n2\n3\n4\n5\n6\n7\n8\n", "0\n1\n2\n3\n4\nX\n6\n7\n8\n9"},
		{"name: x\nsteps:\n  - run: a\n", "name: x\nsteps:\n  - run: b\n  - run: c\n"},
		{"é\nü\n", "é\nö\n"}, {"a\xff\nb\n", "a\xfe\nb\n"},
	}
	for _, c := range cases {
		if got, want := Unified("a/x", "b/x", c[0], c[1]), udiffs(t, c[0], c[1]); got != want {
			t.Errorf("%q → %q:\n%s\ngo-udiff:\n%s", c[0], c[1], got, want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		before, after := randomText(rng), randomText(rng)
		if rng.IntN(2) == 0 {
			after = mutate(rng, before)
		}
		if got, want := Unified("a/x", "b/x", before, after), udiffs(t, before, after); got != want {
			t.Fatalf("case %d, %q → %q:\n%s\ngo-udiff:\n%s", i, before, after, got, want)
		}
	}
}

// randomText is up to 30 lines drawn from a few, so that texts share
// lines; the last line has a "\n" or not.
func randomText(rng *rand.Rand) string {
	words := []string{"a", "b", "c", "d", "", "  x: 1", "é"}
	var b strings.Builder
	for range rng.IntN(30) {
		b.WriteString(words[rng.IntN(len(words))] + "\n")
	}
	if rng.IntN(3) == 0 {
		b.WriteString(words[rng.IntN(len(words))])
	}
	return b.String()
}

// mutate changes, adds or removes a few of text's lines.
func mutate(rng *rand.Rand, text string) string {
	lines := strings.SplitAfter(text, "\n")
	for range 1 + rng.IntN(4) {
		i := rng.IntN(len(lines) + 1)
		switch rng.IntN(3) {
		case 0:
			lines = append(lines[:i], append([]string{"new\n"}, lines[i:]...)...)
		case 1:
			if i < len(lines) {
				lines = append(lines[:i], lines[i+1:]...)
			}
		default:
			if i < len(lines) {
				lines[i] = "changed\n"
			}
		}
	}
	return strings.Join(lines, "")
}
