package spec

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Position is a place in a file; Line and Column count from 1.
type Position struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
}

func (p Position) String() string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Column)
}

// Problem is one thing wrong with a phases.yaml or a spec file.
type Problem struct {
	Position
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
	// Source is the offending line of the file, for the snippet; a long
	// line is cut to the part around Column, with … where it was cut.
	Source string `json:"source,omitempty"`
	// caret is where the caret goes under a cut Source, counted in
	// characters from 1; 0 when Source starts the line.
	caret int
}

// The most of a line a snippet shows, and how much of it before the column.
const (
	snippetWidth  = 120
	snippetBefore = 60
)

// snippet cuts a long line to the part around column, and returns where
// the column falls in it (0 when the line is whole).
func snippet(line string, column int) (string, int) {
	length := utf8.RuneCountInString(line)
	if length <= snippetWidth {
		return line, 0
	}
	first := max(min(column-1-snippetBefore, length-snippetWidth), 0)
	last := min(first+snippetWidth, length)
	start, end, i := 0, len(line), 0
	for offset := range line {
		if i == first {
			start = offset
		}
		if i == last {
			end = offset
			break
		}
		i++
	}
	cut, caret := line[start:end], column-first
	if first > 0 {
		cut, caret = "…"+cut, caret+1
	}
	if last < length {
		cut += "…"
	}
	return cut, caret
}

// clipped is the most of a message or hint kept: one quotes what was
// written, which can be a name of a hundred thousand characters.
const clipped = 300

// clip cuts the middle out of a text longer than clipped characters.
func clip(text string) string {
	if utf8.RuneCountInString(text) <= clipped {
		return text
	}
	runes := []rune(text)
	return string(runes[:clipped*2/3]) + "…" + string(runes[len(runes)-clipped/3:])
}

// Format renders the problem as "file:line:col: message", the numbered
// source line with a caret under the column, and the hint.
func (p Problem) Format() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", p.Position, p.Message)
	if p.Source != "" {
		gutter := fmt.Sprintf("%5d | ", p.Line)
		b.WriteString(gutter)
		b.WriteString(strings.ReplaceAll(p.Source, "\t", " "))
		b.WriteString("\n")
		b.WriteString(strings.Repeat(" ", len(gutter)-2))
		b.WriteString("| ")
		column := p.Column
		if p.caret > 0 {
			column = p.caret
		}
		b.WriteString(strings.Repeat(" ", max(min(column-1, utf8.RuneCountInString(p.Source)), 0)))
		b.WriteString("^\n")
	}
	if p.Hint != "" {
		fmt.Fprintf(&b, "      hint: %s\n", p.Hint)
	}
	return b.String()
}

// Error is every problem found in the files that were loaded. The loader
// collects them all before it reports, so one run shows every mistake, up
// to maxProblems a file: past that, Omitted counts the rest.
type Error struct {
	Problems []Problem
	Omitted  int
}

// maxProblems is the most problems kept for one file: a broken file can
// hold one on each of thousands of lines, and no one reads past the first.
const maxProblems = 100

func (e *Error) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(p.Format())
	}
	total := len(e.Problems) + e.Omitted
	if e.Omitted > 0 {
		fmt.Fprintf(&b, "\n… and %d more problem%s not shown\n", e.Omitted, plural(e.Omitted))
	}
	fmt.Fprintf(&b, "\n%d problem%s found; fix %s and run pipeline validate again\n",
		total, plural(total), map[bool]string{true: "it", false: "them"}[total == 1])
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// problems collects Problems, sorted by place when reported, and counts
// those past maxProblems.
type problems struct {
	list    []Problem
	omitted int
}

// add keeps p unless maxProblems are kept already; it reports whether it
// did.
func (ps *problems) add(p Problem) bool {
	if ps.full() {
		ps.omitted++
		return false
	}
	ps.list = append(ps.list, p)
	return true
}

func (ps *problems) full() bool { return len(ps.list) >= maxProblems }

func (ps problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	sorted := append([]Problem(nil), ps.list...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	return &Error{Problems: sorted, Omitted: ps.omitted}
}
