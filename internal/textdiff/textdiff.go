// Package textdiff writes the unified diff of two texts, line by line, as
// github.com/aymanbagabas/go-udiff's ToUnified(Lines) writes it, over that
// module's own line matching (package lcs).
//
// It exists for the start-up of every command: go-udiff's root package
// compiles a regular expression at init (for ApplyUnified, which pipeline
// never calls), and that init alone cost each start of pipeline about 14
// page faults and 0.1 ms, the code of package regexp read in for it. The
// hunk writing below is go-udiff's (unified.go and diff.go, BSD licence,
// Copyright 2019 The Go Authors), kept to what one line diff needs;
// TestUnifiedIsGoUdiffs holds it to go-udiff's output.
package textdiff

import (
	"cmp"
	"slices"
	"strings"

	"github.com/aymanbagabas/go-udiff/lcs"
)

// contextLines is the number of unchanged lines around each hunk, as
// udiff.DefaultContextLines and diff -u.
const contextLines = 3

// Unified returns the unified diff from before to after, with the file
// names fromName and toName on its "---" and "+++" lines, or "" when they
// are equal. A last line without a "\n" gets diff(1)'s "\ No newline at
// end of file" marker.
func Unified(fromName, toName, before, after string) string {
	hunks := toHunks(before, lineEdits(before, lines(before, after)))
	if len(hunks) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("--- " + fromName + "\n+++ " + toName + "\n")
	for _, h := range hunks {
		h.write(&b)
	}
	return b.String()
}

// edit replaces before[start:end] with text.
type edit struct {
	start, end int
	text       string
}

// lines is the line by line difference of before and after, as edits of
// before (go-udiff's Lines).
func lines(before, after string) []edit {
	beforeLines, offsets := splitLines(before)
	afterLines, _ := splitLines(after)
	diffs := lcs.DiffLines(beforeLines, afterLines)
	edits := make([]edit, len(diffs))
	for i, d := range diffs {
		edits[i] = edit{offsets[d.Start], offsets[d.End], strings.Join(afterLines[d.ReplStart:d.ReplEnd], "")}
	}
	return edits
}

// splitLines splits text into lines that keep their "\n" (the last may
// have none) and returns the offset of each line's start and of the end.
func splitLines(text string) ([]string, []int) {
	var lines []string
	offsets := []int{0}
	start := 0
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' {
			lines = append(lines, text[start:i+1])
			start = i + 1
			offsets = append(offsets, start)
		}
	}
	if start < len(text) {
		lines = append(lines, text[start:])
		offsets = append(offsets, len(text))
	}
	return lines, offsets
}

// lineEdits widens and merges edits, apart as lines returns them, so that
// each replaces whole lines of src: an insertion at the end or one whose
// text lacks a last "\n" takes in the rest of its line. They are sorted
// first, by start then end, as go-udiff's validate sorts them.
func lineEdits(src string, edits []edit) []edit {
	slices.SortStableFunc(edits, func(a, b edit) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end))
	})
	aligned := true
	for _, e := range edits {
		if e.start >= len(src) || e.start > 0 && src[e.start-1] != '\n' || e.end > 0 && src[e.end-1] != '\n' ||
			e.text != "" && e.text[len(e.text)-1] != '\n' {
			aligned = false
			break
		}
	}
	if aligned || len(edits) == 0 {
		return edits
	}
	expanded := make([]edit, 0, len(edits))
	prev := edits[0]
	for _, e := range edits[1:] {
		between := src[prev.end:e.start]
		if !strings.Contains(between, "\n") {
			// On the same line: one edit.
			prev.text += between + e.text
			prev.end = e.end
		} else {
			expanded = append(expanded, wholeLines(prev, src))
			prev = e
		}
	}
	return append(expanded, wholeLines(prev, src))
}

// wholeLines widens e to the start of its first line and past the end of
// its last.
func wholeLines(e edit, src string) edit {
	start := e.start
	if column := start - 1 - strings.LastIndex(src[:start], "\n"); column > 0 {
		e.start -= column
		e.text = src[start-column:start] + e.text
	}
	end := e.end
	if end > 0 && src[end-1] != '\n' || e.text != "" && e.text[len(e.text)-1] != '\n' {
		if nl := strings.IndexByte(src[end:], '\n'); nl < 0 {
			e.end = len(src)
		} else {
			e.end = end + nl + 1
		}
	}
	e.text += src[end:e.end]
	return e
}
