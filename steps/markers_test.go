package steps

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// scanMarkers runs text through a scanner in the given chunk sizes (the
// last size repeats), ends it, and returns what it reported.
func scanMarkers(text string, sizes ...int) []Marker {
	var got []Marker
	s := MarkerScanner{Emit: func(m Marker) { got = append(got, m) }}
	for i := 0; len(text) > 0; i++ {
		n := len(text)
		if len(sizes) > 0 {
			n = min(sizes[min(i, len(sizes)-1)], len(text))
		}
		s.Write([]byte(text[:n]))
		text = text[n:]
	}
	s.EndLine()
	return got
}

func TestMarkerLines(t *testing.T) {
	for _, c := range []struct {
		line string
		want []Marker // nil: not a marker
	}{
		{"[DECISION] use SQLite FTS5\n", []Marker{{MarkerDecision, "use SQLite FTS5"}}},
		{"[FACT] the API is v2\n", []Marker{{MarkerFact, "the API is v2"}}},
		{"[TODO] write the tests\n", []Marker{{MarkerTodo, "write the tests"}}},
		{"[DONE] write the tests\n", []Marker{{MarkerDone, "write the tests"}}},
		{"[SUMMARY] the design is drafted\n", []Marker{{MarkerSummary, "the design is drafted"}}},
		// Indent, bullets, quotes, numbers, bold.
		{"   [TODO] indented\n", []Marker{{MarkerTodo, "indented"}}},
		{"\t[TODO] tab\n", []Marker{{MarkerTodo, "tab"}}},
		{"- [TODO] dash\n", []Marker{{MarkerTodo, "dash"}}},
		{"* [TODO] star\n", []Marker{{MarkerTodo, "star"}}},
		{"+ [TODO] plus\n", []Marker{{MarkerTodo, "plus"}}},
		{"> [TODO] quote\n", []Marker{{MarkerTodo, "quote"}}},
		{">[TODO] tight quote\n", []Marker{{MarkerTodo, "tight quote"}}},
		{"1. [TODO] first\n", []Marker{{MarkerTodo, "first"}}},
		{"12) [TODO] twelfth\n", []Marker{{MarkerTodo, "twelfth"}}},
		{"  - [FACT] nested\n", []Marker{{MarkerFact, "nested"}}},
		{"> - [FACT] list in a quote\n", []Marker{{MarkerFact, "list in a quote"}}},
		{"**[DECISION]** bold marker\n", []Marker{{MarkerDecision, "bold marker"}}},
		{"**[DECISION] bold line**\n", []Marker{{MarkerDecision, "bold line"}}},
		{"- **[DECISION]**: bold, colon\n", []Marker{{MarkerDecision, "bold, colon"}}},
		{"[TODO]: colon\n", []Marker{{MarkerTodo, "colon"}}},
		{"[TODO]\tafter a tab\n", []Marker{{MarkerTodo, "after a tab"}}},
		{"[TODO]   spaced   \n", []Marker{{MarkerTodo, "spaced"}}},
		{"[TODO] crlf\r\n", []Marker{{MarkerTodo, "crlf"}}},
		{"[TODO] keeps [DONE] inside\n", []Marker{{MarkerTodo, "keeps [DONE] inside"}}},
		{"[SUMMARY] naïve café ✓\n", []Marker{{MarkerSummary, "naïve café ✓"}}},
		// Not markers.
		{"Print [TODO] lines for open tasks.\n", nil},
		{"note: [DECISION] mid-line\n", nil},
		{"[todo] lowercase\n", nil},
		{"[Todo] mixed case\n", nil},
		{"[TODOS] another word\n", nil},
		{"[TODO]s are open tasks\n", nil},
		{"[ TODO ] spaced brackets\n", nil},
		{"TODO: no brackets\n", nil},
		{"[CHECKPOINT] not a working-set marker\n", nil},
		{"[TODO]\n", nil},
		{"[TODO]    \r\n", nil},
		{"- [TODO]:\n", nil},
		{"**[TODO]****\n", nil},
		{"-[TODO] bullet without a space\n", nil},
		{"1.[TODO] number without a space\n", nil},
		{"***[TODO] bold italic\n", nil},
		{"`[TODO]` in code\n", nil},
		{strings.Repeat(" ", maxMarkerIndent+1) + "[TODO] indented too far\n", nil},
		{strings.Repeat("x", 100) + " [TODO] far into a line\n", nil},
	} {
		if got := scanMarkers(c.line); !slices.Equal(got, c.want) {
			t.Errorf("%q: got %q, want %q", c.line, got, c.want)
		}
	}
}

// The markers of a text, in their order, however the text is cut into
// chunks: at every byte position, and byte by byte.
func TestMarkersSplitAtEveryByte(t *testing.T) {
	text := "intro [TODO] not this one\n" +
		"- [DECISION] one\r\n" +
		"plain line\n" +
		"  **[FACT]** two\n" +
		"[[TODO] not this either\n" +
		"12. [TODO] three\n" +
		"[SUMMARY] four, not ended"
	want := []Marker{{MarkerDecision, "one"}, {MarkerFact, "two"}, {MarkerTodo, "three"}, {MarkerSummary, "four, not ended"}}
	if got := scanMarkers(text); !slices.Equal(got, want) {
		t.Fatalf("one chunk: %q, want %q", got, want)
	}
	for split := 0; split <= len(text); split++ {
		for _, next := range []int{1, 2, 7, len(text)} {
			if got := scanMarkers(text, split, next); !slices.Equal(got, want) {
				t.Fatalf("split at %d, then chunks of %d: %q, want %q", split, next, got, want)
			}
		}
	}
}

// A marker is reported when its line ends, not before: the text that
// comes in pieces is whole.
func TestMarkerReportedWhenItsLineEnds(t *testing.T) {
	var got []Marker
	s := MarkerScanner{Emit: func(m Marker) { got = append(got, m) }}
	s.Write([]byte("[TODO] write"))
	s.Write([]byte(" the tests"))
	if len(got) != 0 {
		t.Fatalf("reported before the line ended: %q", got)
	}
	s.Write([]byte("\nnext"))
	if want := []Marker{{MarkerTodo, "write the tests"}}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	// EndLine ends an open marker line, and the line after starts anew.
	s.Write([]byte("\n[FACT] cut short"))
	s.EndLine()
	s.Write([]byte("[DONE] on a line of its own\n"))
	want := []Marker{{MarkerTodo, "write the tests"}, {MarkerFact, "cut short"}, {MarkerDone, "on a line of its own"}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// A long line keeps its start, cut at a rune boundary, with "…"; the
// next line is read as usual.
func TestMarkerLongLineIsCut(t *testing.T) {
	long := strings.Repeat("é", MaxMarkerText) // 2 bytes each
	for _, size := range []int{1, 100, 1 << 20} {
		got := scanMarkers("[FACT] "+long+"\n[TODO] next\n", size)
		if len(got) != 2 || got[1] != (Marker{MarkerTodo, "next"}) {
			t.Fatalf("chunks of %d: %d markers", size, len(got))
		}
		text := got[0].Text
		if len(text) > MaxMarkerText || !utf8.ValidString(text) || !strings.HasSuffix(text, "…") ||
			!strings.HasPrefix(long, strings.TrimSuffix(text, "…")) || len(text) < MaxMarkerText-4 {
			t.Errorf("chunks of %d: cut text of %d bytes, valid %v: …%q", size, len(text), utf8.ValidString(text), text[max(0, len(text)-10):])
		}
	}
	// Exactly MaxMarkerText bytes stay whole; a closing bold and spaces
	// past it are not text.
	exact := strings.Repeat("a", MaxMarkerText)
	for _, line := range []string{"[FACT] " + exact + "\n", "**[FACT] " + exact + "**  \n"} {
		if got := scanMarkers(line, 3); len(got) != 1 || got[0].Text != exact {
			t.Errorf("%d bytes: got %d markers, text of %d bytes", len(exact), len(got), len(got[0].Text))
		}
	}
	// Spaces past the limit that end the line are trimmed, the line is
	// still longer: cut.
	got := scanMarkers("[FACT] " + exact[:1000] + strings.Repeat(" ", 40) + "more\n")
	if len(got) != 1 || got[0].Text != exact[:1000]+"…" {
		t.Errorf("got %q", got)
	}
}

// A text line that has not ended when the output ends counts then.
func TestMarkerUnendedLastLine(t *testing.T) {
	if got := scanMarkers("x\n- [DONE] the last line"); !slices.Equal(got, []Marker{{MarkerDone, "the last line"}}) {
		t.Errorf("got %q", got)
	}
	// A marker cut before its text: nothing.
	for _, text := range []string{"x\n[DON", "x\n[DONE]", "**[DONE]*"} {
		if got := scanMarkers(text, 1); len(got) != 0 {
			t.Errorf("%q: got %q", text, got)
		}
	}
}

// At most Limit markers are reported; Dropped is called once.
func TestMarkerCap(t *testing.T) {
	var got []Marker
	var dropped []Marker
	s := MarkerScanner{Limit: 3, Emit: func(m Marker) { got = append(got, m) }, Dropped: func(m Marker) { dropped = append(dropped, m) }}
	for i := range 6 {
		fmt.Fprintf(&s, "[TODO] task %d\n[TODO]\n", i)
	}
	if len(got) != 3 || got[2].Text != "task 2" || len(dropped) != 1 || dropped[0].Text != "task 3" ||
		s.Count() != 3 || s.Excess() != 3 {
		t.Errorf("got %q, dropped %q, count %d, excess %d", got, dropped, s.Count(), s.Excess())
	}
	if MaxMarkers != 10000 {
		t.Errorf("MaxMarkers is %d: the README says 10 000", MaxMarkers)
	}
}

// Random texts full of near-markers, in random chunks: the same markers
// as in one chunk.
func TestMarkersDoNotDependOnChunks(t *testing.T) {
	pieces := []string{"[TODO] a", "[DONE]", "[DECISION]", "**", "- ", "* ", "> ", "1. ", "12)", " ", "\t", "\n", "\r\n",
		"[", "]", "x", "[FACT]:", "é", "[SUMM", "ARY] s", "[TODO]s", strings.Repeat("y", 70)}
	r := rand.New(rand.NewPCG(1, 2))
	seen := 0
	for range 2000 {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		text := b.String()
		want := scanMarkers(text)
		seen += len(want)
		sizes := []int{r.IntN(len(text) + 1)}
		for range 5 {
			sizes = append(sizes, 1+r.IntN(8))
		}
		if got := scanMarkers(text, sizes...); !slices.Equal(got, want) {
			t.Fatalf("%q in chunks of %v: %q, in one chunk: %q", text, sizes, got, want)
		}
	}
	if seen < 500 {
		t.Errorf("%d markers in the random texts: the test checks too little", seen)
	}
}

func FuzzMarkerScanner(f *testing.F) {
	f.Add("- [TODO] x\n**[DONE]** y\r\nz [FACT] no\n", 3)
	f.Add("[SUMMARY] "+strings.Repeat("ü", 600)+"\n", 7)
	f.Fuzz(func(t *testing.T, text string, size int) {
		size = 1 + max(size, -size)%64
		want := scanMarkers(text)
		if got := scanMarkers(text, size); !slices.Equal(got, want) {
			t.Fatalf("chunks of %d: %q, one chunk: %q", size, got, want)
		}
		for _, m := range want {
			if len(m.Text) > MaxMarkerText || m.Text == "" || strings.Contains(m.Text, "\n") {
				t.Fatalf("marker %q", m)
			}
		}
	})
}

// The scanner on plain output, the executor's hot path: 100-byte log
// lines, without brackets and with brackets at every line's start and
// within it.
func BenchmarkMarkerScanner(b *testing.B) {
	for _, c := range []struct{ name, line string }{
		{"no-brackets", "2026-11-25T09:00:00.000Z INFO worker=7 request served path=/api/v1/items status=200 took=3ms ok"},
		{"bracket-per-line", "[2026-11-25T09:00:00.000Z] [INFO] worker=7 served path=/api/v1/items?ids=[1,2] status=200 ok"},
	} {
		line := []byte(c.line)
		for len(line) < 99 {
			line = append(line, '.')
		}
		line = append(line[:99], '\n')
		chunk := make([]byte, 0, chunkSize)
		for len(chunk)+len(line) <= chunkSize {
			chunk = append(chunk, line...)
		}
		b.Run(c.name, func(b *testing.B) {
			s := MarkerScanner{Emit: func(Marker) {}}
			b.SetBytes(int64(len(chunk)))
			for b.Loop() {
				s.Write(chunk)
			}
		})
		// Beside it, for scale, the checkpoint scan every chunk passes.
		b.Run(c.name+"/checkpoint-scan", func(b *testing.B) {
			var s OutputScanner
			b.SetBytes(int64(len(chunk)))
			for b.Loop() {
				s.Write(chunk)
			}
		})
	}
}
