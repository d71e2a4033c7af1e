package termview

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/internal/termsafe"
)

// LogMarkers writes a CI system's own markers into a Plain view's lines
// (GitHub Actions' groups, GitLab CI's sections): they are pipeline's,
// written as they are, never through the terminal filter that step
// output passes.
type LogMarkers interface {
	// Begin is called once, before anything else is written.
	Begin(w *bufio.Writer)
	// StepStarted and StepFinished are called at the start of a line;
	// title is the step's, made safe.
	StepStarted(w *bufio.Writer, info local.StepInfo, title string)
	StepFinished(w *bufio.Writer)
	// End closes what is open.
	End(w *bufio.Writer)
}

// Plain writes timestamped lines: for CI logs and anything that is not
// a terminal.
type Plain struct {
	mu      sync.Mutex
	w       *bufio.Writer
	now     func() time.Time
	atStart bool
	prefix  []byte
	stamp   time.Time
	// out gathers the lines of output and their prefixes for w; made
	// with room for a block and a line, so that it rarely grows.
	out    []byte
	text   ScreenText
	filter termsafe.Filter
	// feeds are the offsets of the line feeds of a chunk the filter
	// passed as it is, found by the filter.
	feeds []int
	// changed holds the start of a line of output that the filter
	// changed, until its end: the line is redacted again whole, for a
	// secret split by an escape sequence. (The step's redaction holds a
	// secret's first bytes until what follows them, the escape sequence
	// here, so they arrive in the same chunk.)
	changed   []byte
	inChanged bool
	// marks, in CI mode on GitHub Actions or GitLab CI, puts each step
	// in a group; nil elsewhere.
	marks LogMarkers
}

// plainBlock is how much output write gathers before it writes: the
// size of the buffered writer, which passes a block that size on
// without a copy.
const plainBlock = 64 << 10

// maxChangedLine bounds the line held in Plain.changed.
const maxChangedLine = 64 << 10

// NewPlain writes to w, each line stamped with the time now says.
func NewPlain(w io.Writer, now func() time.Time) *Plain {
	return &Plain{w: bufio.NewWriterSize(w, plainBlock), out: make([]byte, 0, plainBlock+4<<10), now: now, atStart: true, text: NewScreenText()}
}

// WithMarks makes the view write a CI system's markers; nil: none.
func (v *Plain) WithMarks(marks LogMarkers) *Plain {
	if marks != nil {
		v.marks = marks
		marks.Begin(v.w)
	}
	return v
}

// endLine ends the step's output and the line it left open.
func (v *Plain) endLine() {
	v.endOutput()
	if !v.atStart {
		v.w.WriteByte('\n')
		v.atStart = true
	}
}

// line prints text, made safe, as a line of its own.
func (v *Plain) line(text string) {
	v.endLine()
	fmt.Fprintf(v.w, "%s %s\n", v.now().Format("15:04:05"), v.text.Line(text))
}

// StepStarted prints the step's header line, in CI mode after the start
// of its group.
func (v *Plain) StepStarted(info local.StepInfo) {
	v.mu.Lock()
	defer v.mu.Unlock()
	title := fmt.Sprintf("phase %d/%d %s · step %s · attempt %d", info.PhaseIndex+1, info.Phases, info.Phase, info.Step, info.Attempt)
	if v.marks != nil {
		v.endLine()
		v.marks.StepStarted(v.w, info, v.text.Line(title))
	}
	v.line("== " + title + " · " + info.What)
	v.w.Flush()
}

// Output prefixes each line of the chunk with the time. The prefix is
// made once per chunk: the time of arrival is the chunk's.
func (v *Plain) Output(chunk []byte) {
	v.mu.Lock()
	defer v.mu.Unlock()
	safe, feeds := v.filter.FilterLines(chunk, v.feeds[:0])
	v.feeds = feeds
	if !v.inChanged && termsafe.Unchanged(chunk, safe) {
		v.writeLines(safe, feeds)
		return
	}
	for len(safe) > 0 {
		i := bytes.IndexByte(safe, '\n')
		if i < 0 {
			v.changed = append(v.changed, safe...)
			v.inChanged = true
			if len(v.changed) >= maxChangedLine {
				v.writeChanged()
			}
			return
		}
		v.changed = append(v.changed, safe[:i+1]...)
		v.writeChanged()
		safe = safe[i+1:]
		if termsafe.Unchanged(chunk[len(chunk)-len(safe):], safe) {
			break // the rest is as the step wrote it
		}
	}
	v.write(safe)
}

// writeChanged writes the line held in changed, redacted again.
func (v *Plain) writeChanged() {
	v.write([]byte(v.text.Redactor.String(string(v.changed))))
	v.changed, v.inChanged = v.changed[:0], false
}

// endOutput writes what the filter and changed hold at the end of a
// step's output.
func (v *Plain) endOutput() {
	if rest := v.filter.End(); len(rest) > 0 {
		v.changed = append(v.changed, rest...)
		v.inChanged = true
	}
	if v.inChanged {
		v.writeChanged()
	}
}

// write prints safe output, each line after the time.
func (v *Plain) write(chunk []byte) {
	v.feeds = v.feeds[:0]
	for i := 0; ; {
		j := bytes.IndexByte(chunk[i:], '\n')
		if j < 0 {
			break
		}
		v.feeds = append(v.feeds, i+j)
		i += j + 1
	}
	v.writeLines(chunk, v.feeds)
}

// writeLines prints safe output whose line feeds are at the offsets
// feeds, each line after the time. The lines and their prefixes are
// gathered in out and handed to the buffered writer a block at a time:
// two writes a line (the prefix, the line) cost more than the bytes they
// copy.
func (v *Plain) writeLines(chunk []byte, feeds []int) {
	if len(chunk) == 0 {
		return
	}
	if now := v.now(); v.prefix == nil || now.Sub(v.stamp) >= time.Second || now.Before(v.stamp) {
		v.stamp = now.Truncate(time.Second)
		v.prefix = append(v.prefix[:0], now.Format("15:04:05")+" | "...)
	}
	out := v.out[:0]
	from := 0
	for _, feed := range feeds {
		if v.atStart {
			out = append(out, v.prefix...)
		}
		out = append(out, chunk[from:feed+1]...)
		v.atStart = true
		from = feed + 1
		if len(out) >= plainBlock {
			// What the writer holds goes first, so that the block passes
			// it without a copy.
			if v.w.Buffered() > 0 {
				v.w.Flush()
			}
			v.w.Write(out)
			out = out[:0]
		}
	}
	if from < len(chunk) {
		// A line not ended yet.
		if v.atStart {
			out = append(out, v.prefix...)
			v.atStart = false
		}
		v.w.Write(out)
		out = out[:0]
		v.w.Write(chunk[from:])
	}
	v.w.Write(out)
	v.out = out[:0]
}

// Progress is not shown in plain output: the lines carry the time.
func (v *Plain) Progress(local.Progress) {
	v.mu.Lock()
	v.w.Flush()
	v.mu.Unlock()
}

// StepFinished prints how the step ended, in CI mode after the end of
// its group.
func (v *Plain) StepFinished(info local.StepInfo, r engine.StepResult) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.marks != nil {
		v.endLine()
		v.marks.StepFinished(v.w)
	}
	v.line("== " + describeResult(info, r))
	v.w.Flush()
}

// Say prints a line of the engine's own.
func (v *Plain) Say(format string, args ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.line(fmt.Sprintf(format, args...))
	v.w.Flush()
}

// Close flushes what is buffered, after the end of any group still open.
func (v *Plain) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.endOutput()
	if v.marks != nil {
		v.endLine()
		v.marks.End(v.w)
	}
	return v.w.Flush()
}
