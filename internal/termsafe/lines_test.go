package termsafe

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

// feedOffsets is where b's line feeds are, found one by one.
func feedOffsets(b []byte) []int {
	var at []int
	for i, c := range b {
		if c == '\n' {
			at = append(at, i)
		}
	}
	return at
}

// FilterLines gives what Filter gives, and for a chunk it passes as it is
// every line feed's offset: in random text of printable bytes, line
// feeds, tabs, UTF-8, "·" and other 0xC2 pairs, controls and escape
// sequences, at every alignment; after a chunk that ends within a
// sequence too.
func TestFilterLinesFindsEveryLineFeed(t *testing.T) {
	pieces := []string{"a", "hello world ", "\n", "\n\n", "\t", "·", "\xc2\x85", "\xc2", "é", "\x1b[31m", "\x1b", "\r\n", "\r", "\x7f", "\x00", "0123456789abcdef"}
	rnd := rand.New(rand.NewPCG(5, 6))
	for iter := range 20000 {
		var b bytes.Buffer
		for range rnd.IntN(40) {
			p := pieces[rnd.IntN(len(pieces))]
			if rnd.IntN(3) > 0 {
				p = pieces[rnd.IntN(5)] // mostly clean text, so that many chunks pass
			}
			b.WriteString(p)
		}
		chunk := b.Bytes()
		var f, g Filter
		if iter%5 == 0 {
			f.Filter([]byte("\x1b["))
			g.Filter([]byte("\x1b["))
		}
		want := slices.Clone(g.Filter(chunk))
		got, lines := f.FilterLines(chunk, []int{-1})
		if !bytes.Equal(got, want) {
			t.Fatalf("%q: FilterLines gave %q, Filter %q", chunk, got, want)
		}
		wantLines := []int{-1}
		if Unchanged(chunk, got) {
			wantLines = append(wantLines, feedOffsets(chunk)...)
		}
		if !slices.Equal(lines, wantLines) {
			t.Fatalf("%q: line feeds at %v, want %v", chunk, lines, wantLines)
		}
	}
}
