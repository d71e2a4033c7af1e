package textdiff

import (
	"strconv"
	"strings"
)

// lineKind is what a line of a hunk does.
type lineKind int

const (
	deleted lineKind = iota
	inserted
	kept
)

// line is a line of a hunk, with its "\n" when it has one.
type line struct {
	kind lineKind
	text string
}

// hunk is a run of changed lines and their context, starting at line
// fromLine of the old text and toLine of the new (from 1).
type hunk struct {
	fromLine, toLine int
	lines            []line
}

// hunkBuilder gathers the hunks of edits of src, each as whole lines.
type hunkBuilder struct {
	lines  []string // src's
	hunks  []*hunk
	h      *hunk // the hunk being built
	last   int   // the line of src after the last edit's, from 0
	toLine int   // the line of the new text at last, from 0
}

// toHunks is the hunks of edits of src (go-udiff's toUnified): edits less
// than twice contextLines apart share a hunk.
func toHunks(src string, edits []edit) []*hunk {
	if len(edits) == 0 {
		return nil
	}
	b := hunkBuilder{}
	b.lines, _ = splitLines(src)
	for _, e := range edits {
		start := strings.Count(src[:e.start], "\n")
		end := strings.Count(src[:e.end], "\n")
		if e.end == len(src) && len(src) > 0 && src[len(src)-1] != '\n' {
			end++ // the end of the text ends its last line
		}
		b.startAt(start)
		for i := start; i < end; i++ {
			b.h.lines = append(b.h.lines, line{deleted, b.lines[i]})
			b.last++
		}
		if e.text != "" {
			newLines, _ := splitLines(e.text)
			for _, text := range newLines {
				b.h.lines = append(b.h.lines, line{inserted, text})
				b.toLine++
			}
		}
	}
	b.addKept(b.last, b.last+contextLines)
	return append(b.hunks, b.h)
}

// startAt carries the hunk on to an edit at line start of src, or closes
// it and opens the next when the edit is too far from it.
func (b *hunkBuilder) startAt(start int) {
	switch {
	case b.h != nil && start == b.last:
	case b.h != nil && start <= b.last+2*contextLines:
		b.addKept(b.last, start)
	default:
		if b.h != nil {
			b.addKept(b.last, b.last+contextLines)
			b.hunks = append(b.hunks, b.h)
		}
		b.toLine += start - b.last
		b.h = &hunk{fromLine: start + 1, toLine: b.toLine + 1}
		context := b.addKept(start-contextLines, start)
		b.h.fromLine -= context
		b.h.toLine -= context
	}
	b.last = start
}

// addKept adds the lines of src from start to end (those that exist) to
// the hunk as context, and returns how many it added.
func (b *hunkBuilder) addKept(start, end int) int {
	added := 0
	for i := max(start, 0); i < end && i < len(b.lines); i++ {
		b.h.lines = append(b.h.lines, line{kept, b.lines[i]})
		added++
	}
	return added
}

// write writes the hunk as a unified diff writes it.
func (h *hunk) write(b *strings.Builder) {
	fromCount, toCount := 0, 0
	for _, l := range h.lines {
		if l.kind != inserted {
			fromCount++
		}
		if l.kind != deleted {
			toCount++
		}
	}
	b.WriteString("@@ -" + lineRange(h.fromLine, fromCount) + " +" + lineRange(h.toLine, toCount) + " @@\n")
	for _, l := range h.lines {
		b.WriteString([...]string{deleted: "-", inserted: "+", kept: " "}[l.kind])
		b.WriteString(l.text)
		if !strings.HasSuffix(l.text, "\n") {
			b.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// lineRange is a hunk header's range: "start,count", "start" alone for
// one line, and "0,0" for none at the start (as GNU diff -u writes an
// empty old or new text).
func lineRange(start, count int) string {
	switch {
	case count > 1:
		return strconv.Itoa(start) + "," + strconv.Itoa(count)
	case start == 1 && count == 0:
		return "0,0"
	default:
		return strconv.Itoa(start)
	}
}
