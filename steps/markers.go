package steps

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// Kinds of working-set markers: an agent prints "[KIND] text" on a line
// of its own to feed the session's working set.
const (
	MarkerDecision = "DECISION"
	MarkerFact     = "FACT"
	MarkerTodo     = "TODO"
	MarkerDone     = "DONE"
	MarkerSummary  = "SUMMARY"
)

// Marker is one working-set marker line an agent printed.
type Marker struct {
	Kind string // one of the Marker* constants
	Text string // the rest of the line, trimmed, at most MaxMarkerText bytes (cut at a rune boundary, ending with "…")
}

// MaxMarkerText bounds the text of a marker, in bytes: a longer line
// keeps its start, cut at a rune boundary, and ends with "…".
const MaxMarkerText = 1024

// MaxMarkers is how many markers one step may report; the ones after are
// dropped, with one warning.
const MaxMarkers = 10000

// The marker line's grammar, bounded so that a line is decided from its
// first bytes: maxMarkerIndent bytes at most of white space, list bullets
// and quotes before the marker (or its bold), and markerHead bytes at most
// of the line before a decision. A line whose start the scanner carries
// from one chunk to the next is at most markerHead bytes long.
const (
	maxMarkerIndent = 32
	markerHead      = 64
	// markerRoom is how much text past MaxMarkerText is kept while the
	// line goes on: a closing "**" and the line end's white space, which
	// the trim takes off again.
	markerRoom = 8
)

// markerKinds are the marker names, as they follow the "[".
var markerKinds = []string{MarkerDecision, MarkerFact, MarkerTodo, MarkerDone, MarkerSummary}

// markerFirst is the first letter of each marker name
// (TestMarkerTablesAreTheirBytes).
var markerFirst = [256]bool{'D': true, 'F': true, 'T': true, 'S': true}

// indentByte is what may stand between a line's start and its marker:
// white space, list bullets and numbers, quotes, bold.
var indentByte = [256]bool{' ': true, '\t': true, '-': true, '*': true, '+': true, '>': true, '.': true, ')': true,
	'0': true, '1': true, '2': true, '3': true, '4': true, '5': true, '6': true, '7': true, '8': true, '9': true}

// MarkerScanner finds working-set marker lines in a stream of text that
// passes in chunks of any size, and reports each marker once its line
// has ended. It is not safe for concurrent use.
//
// A line is a marker line when it starts, after optional white space, an
// optional Markdown list bullet or quote ("- ", "* ", "+ ", "> ", "1. ",
// "1) ", several of them for a nested list or quote) and optional bold
// ("**"), with one of the markers, exactly: "[DECISION]", "[FACT]",
// "[TODO]", "[DONE]" or "[SUMMARY]", uppercase, in square brackets. The
// marker is followed by white space, a colon, or the line's end; its bold
// may close right after it ("**[TODO]** text") or at the line's end
// ("**[TODO] text**"). The text is the rest of the line: the colon, the
// bold's "**" and surrounding white space taken off, "\r\n" ends a line as
// "\n" does. A marker further into a line does not count (an agent that
// echoes a prompt mentioning "[TODO] lines" mid-sentence feeds nothing), a
// marker with no text is ignored, and a line's text is cut at
// MaxMarkerText bytes.
//
// Speed: the scanner looks only at the "[" of the stream (bytes.IndexByte)
// and, for each, at the few bytes before it; the lines themselves are not
// followed except a marker's own.
type MarkerScanner struct {
	// Emit receives each marker.
	Emit func(Marker)
	// Limit is how many markers Emit receives at most; 0 is MaxMarkers.
	// Dropped is called with the first marker over the limit.
	Limit   int
	Dropped func(Marker)

	// head is the start of the current line, when the line began in an
	// earlier chunk, is shorter than markerHead and not decided yet
	// (dead is false); pending: head holds a marker's "[" whose line
	// needs more bytes to be decided.
	head    []byte
	dead    bool
	pending bool
	scratch []byte

	// open is set from a marker to the end of its line; text is its text
	// so far (leading white space skipped), cut when longer than
	// MaxMarkerText.
	open   bool
	kind   string
	bold   bool
	text   []byte
	cut    bool
	count  int
	excess int
}

// Write scans one chunk.
func (s *MarkerScanner) Write(p []byte) (int, error) {
	from := 0
	switch {
	case s.open:
		from = s.extend(p, 0)
		if from < 0 {
			return len(p), nil
		}
	case s.pending:
		// The marker's "[" came in an earlier chunk: decide its line with
		// the start of this one.
		s.scratch = append(append(s.scratch[:0], s.head...), p[:min(len(p), markerHead)]...)
		switch d := decideMarkerLine(s.scratch); d.verdict {
		case markerMaybe:
			s.head = append(s.head, p...)
			return len(p), nil
		case markerYes:
			s.pending = false
			s.start(d)
			if from = s.extend(p, d.text-len(s.head)); from < 0 {
				return len(p), nil
			}
		default:
			s.pending, s.dead = false, true
		}
	}
	for i := from; ; {
		j := bytes.IndexByte(p[i:], '[')
		if j < 0 {
			break
		}
		j += i
		i = j + 1
		if i < len(p) && !markerFirst[p[i]] {
			continue // "[2026-…", "[INFO]", "[1, 2]": the common brackets
		}
		// Back over what may indent a marker, to the line's start.
		b, lo := j, max(0, j-maxMarkerIndent-2)
		for b > lo && indentByte[p[b-1]] {
			b--
		}
		var line []byte
		offset := 0 // of line in p
		switch {
		case b > 0 && p[b-1] == '\n':
			line, offset = p[b:min(len(p), b+markerHead)], b
		case b > 0 || s.dead:
			continue // within a line, or the indent is too long
		default:
			// The first line of the chunk, begun in an earlier one.
			s.scratch = append(append(s.scratch[:0], s.head...), p[:min(len(p), j+markerHead)]...)
			line, offset = s.scratch, -len(s.head)
		}
		d := decideMarkerLine(line)
		if d.verdict == markerMaybe {
			// The chunk ends within the marker: the line's start is kept
			// below, and decided with the next chunk.
			s.pending = true
			break
		}
		if d.verdict == markerNo {
			continue
		}
		s.start(d)
		if i = s.extend(p, offset+d.text); i < 0 {
			return len(p), nil
		}
	}
	// Keep the start of the line the chunk ends in, for the next chunk.
	tail := p[max(0, len(p)-markerHead):]
	switch k := bytes.LastIndexByte(tail, '\n'); {
	case k >= 0:
		s.head, s.dead = append(s.head[:0], tail[k+1:]...), false
	case len(p) >= markerHead:
		s.head, s.dead = s.head[:0], true
	case !s.dead:
		s.head = append(s.head, p...)
		if len(s.head) >= markerHead {
			s.head, s.dead = s.head[:0], true
		}
	}
	return len(p), nil
}

// start opens a marker's line.
func (s *MarkerScanner) start(d markerLine) {
	s.open, s.kind, s.bold = true, d.kind, d.bold
	s.text, s.cut = s.text[:0], false
}

// extend adds p[from:] to the open marker's text up to the end of its
// line; it returns where the next line starts in p, or -1 when the line
// goes on past p.
func (s *MarkerScanner) extend(p []byte, from int) int {
	rest := p[from:]
	end := bytes.IndexByte(rest, '\n')
	if end >= 0 {
		rest = rest[:end]
	}
	if len(s.text) == 0 {
		rest = bytes.TrimLeft(rest, " \t")
	}
	if room := MaxMarkerText + markerRoom - len(s.text); len(rest) > room {
		rest, s.cut = rest[:max(room, 0)], true
	}
	s.text = append(s.text, rest...)
	if end < 0 {
		return -1
	}
	s.finish()
	s.head, s.dead, s.pending = s.head[:0], false, false
	return from + end + 1
}

// EndLine ends the current line: an open marker counts with the text it
// has. The executor calls it at the end of a step, and where an agent's
// text is broken by something else (an error shown on a line of its own).
func (s *MarkerScanner) EndLine() {
	if s.open {
		s.finish()
	}
	s.head, s.dead, s.pending = s.head[:0], false, false
}

// finish reports the open marker.
func (s *MarkerScanner) finish() {
	s.open = false
	text := bytes.TrimSpace(s.text)
	if s.bold && !s.cut {
		text = bytes.TrimSpace(bytes.TrimSuffix(text, []byte("**")))
	}
	if len(text) == 0 {
		return
	}
	if s.cut || len(text) > MaxMarkerText {
		n := min(len(text), MaxMarkerText-len("…"))
		for n > 0 && n < len(text) && !utf8.RuneStart(text[n]) {
			n--
		}
		text = append(bytes.TrimRight(text[:n], " \t"), "…"...)
	}
	m := Marker{Kind: s.kind, Text: string(text)}
	limit := s.Limit
	if limit <= 0 {
		limit = MaxMarkers
	}
	if s.count >= limit {
		s.excess++
		if s.excess == 1 && s.Dropped != nil {
			s.Dropped(m)
		}
		return
	}
	s.count++
	if s.Emit != nil {
		s.Emit(m)
	}
}

// Count is how many markers were reported; Excess how many were dropped
// over the limit.
func (s *MarkerScanner) Count() int  { return s.count }
func (s *MarkerScanner) Excess() int { return s.excess }

type markerVerdict int

const (
	markerNo markerVerdict = iota
	markerYes
	// markerMaybe: the bytes end before the line is decided.
	markerMaybe
)

// markerLine is what the start of a line says: whether it is a marker
// line, and then its kind, whether its marker is bold and still open, and
// where its text starts.
type markerLine struct {
	verdict markerVerdict
	kind    string
	bold    bool
	text    int
}

// decideMarkerLine reads the start of a line (up to its "\n", or the
// bytes so far). See MarkerScanner for the grammar.
func decideMarkerLine(line []byte) markerLine {
	maybe := markerLine{verdict: markerMaybe}
	i := 0
	// Indent: white space, bullets, numbers, quotes.
	for {
		if i > maxMarkerIndent {
			return markerLine{}
		}
		if i == len(line) {
			return maybe
		}
		c := line[i]
		switch {
		case c == ' ' || c == '\t' || c == '>':
			i++
			continue
		case c == '-' || c == '+' || (c == '*' && (i+1 == len(line) || line[i+1] != '*')):
			if i+1 == len(line) {
				return maybe
			}
			if line[i+1] != ' ' && line[i+1] != '\t' {
				return markerLine{}
			}
			i += 2
			continue
		case '0' <= c && c <= '9':
			j := i
			for j < len(line) && j-i < 9 && '0' <= line[j] && line[j] <= '9' {
				j++
			}
			if j+1 >= len(line) {
				return maybe
			}
			if (line[j] != '.' && line[j] != ')') || (line[j+1] != ' ' && line[j+1] != '\t') {
				return markerLine{}
			}
			i = j + 2
			continue
		}
		break
	}
	d := markerLine{verdict: markerYes}
	if line[i] == '*' {
		// "**", the bold of "**[TODO]** text" or "**[TODO] text**".
		if i+2 > len(line) {
			return maybe
		}
		d.bold = true
		i += 2
		if i == len(line) {
			return maybe
		}
	}
	if line[i] != '[' {
		return markerLine{}
	}
	i++
	// The kind: one of the names, then "]".
	end := bytes.IndexByte(line[i:min(len(line), i+len(MarkerDecision)+1)], ']')
	if end < 0 {
		for _, k := range markerKinds {
			if len(line)-i <= len(k) && k[:len(line)-i] == string(line[i:]) {
				return maybe
			}
		}
		return markerLine{}
	}
	name := line[i : i+end]
	for _, k := range markerKinds {
		if string(name) == k {
			d.kind = k
		}
	}
	if d.kind == "" {
		return markerLine{}
	}
	i += end + 1
	if d.bold && i < len(line) && line[i] == '*' {
		// The bold closes right after the marker.
		if i+1 == len(line) {
			return maybe
		}
		if line[i+1] != '*' {
			return markerLine{}
		}
		d.bold = false
		i += 2
	}
	if i == len(line) {
		return maybe
	}
	switch line[i] {
	case ':':
		i++
	case ' ', '\t', '\r', '\n':
	default:
		return markerLine{} // "[TODO]s", "[DONE]-ish"
	}
	d.text = i
	return d
}

// markerDropped is the warning when a step printed more than the limit.
func markerDropped(limit int) string {
	return fmt.Sprintf("the step printed more than %d working-set markers ([DECISION], [FACT], [TODO], [DONE], [SUMMARY]); the rest are dropped", limit)
}
