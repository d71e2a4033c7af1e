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
	// Source is the offending line of the file, for the snippet.
	Source string `json:"source,omitempty"`
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
		b.WriteString(strings.Repeat(" ", max(min(p.Column-1, utf8.RuneCountInString(p.Source)), 0)))
		b.WriteString("^\n")
	}
	if p.Hint != "" {
		fmt.Fprintf(&b, "      hint: %s\n", p.Hint)
	}
	return b.String()
}

// Error is every problem found in the files that were loaded. The loader
// collects them all before it reports, so one run shows every mistake.
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(p.Format())
	}
	fmt.Fprintf(&b, "\n%d problem%s found; fix %s and run pipeline validate again\n",
		len(e.Problems), plural(len(e.Problems)), map[bool]string{true: "it", false: "them"}[len(e.Problems) == 1])
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// problems collects Problems, sorted by place when reported.
type problems []Problem

func (ps problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	sorted := append([]Problem(nil), ps...)
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
	return &Error{Problems: sorted}
}
