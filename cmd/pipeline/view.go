package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/internal/redact"
	"github.com/pipeline-dev/pipeline/internal/termsafe"
)

// screenText makes what a view shows safe to show: secrets redacted (a
// step's output arrives redacted; a step's command line, a note or an
// error message may not be), then escape sequences removed and control
// characters shown (see package termsafe). Text that the filter changed is
// redacted again: a secret split by an escape sequence is whole once the
// sequence is gone.
type screenText struct {
	redactor *redact.Redactor
}

// environmentRedactor hides the secrets of this process's environment and
// the key patterns: what a view redacts when given no session's redactor.
var environmentRedactor = sync.OnceValue(func() *redact.Redactor { return redact.New(os.Environ()) })

func newScreenText() screenText { return screenText{redactor: environmentRedactor()} }

// line is text made safe as one line.
func (s screenText) line(text string) string {
	text = s.redactor.String(text)
	if safe := termsafe.Line(text); safe != text {
		return s.redactor.String(safe)
	}
	return text
}

// withRedactor makes a view redact with r, a session's redactor (which
// knows the secrets of the plan's agent environments too), rather than
// with the environment's alone.
func withRedactor(view local.View, r *redact.Redactor) local.View {
	switch v := view.(type) {
	case *queuedView:
		withRedactor(v.inner, r)
	case *PlainView:
		v.text.redactor = r
	case *LiveView:
		v.text.redactor = r
	}
	return view
}

// PlainView writes timestamped lines: for CI logs and anything that is not
// a terminal.
type PlainView struct {
	mu      sync.Mutex
	w       *bufio.Writer
	now     func() time.Time
	atStart bool
	prefix  []byte
	stamp   time.Time
	text    screenText
	filter  termsafe.Filter
	// changed holds the start of a line of output that the filter
	// changed, until its end: the line is redacted again whole, for a
	// secret split by an escape sequence. (The step's redaction holds a
	// secret's first bytes until what follows them, the escape sequence
	// here, so they arrive in the same chunk.)
	changed   []byte
	inChanged bool
	// marks, in CI mode on GitHub Actions or GitLab CI, puts each step
	// in a group; nil elsewhere.
	marks logMarkers
}

// maxChangedLine bounds the line held in PlainView.changed.
const maxChangedLine = 64 << 10

// NewPlainView writes to w.
func NewPlainView(w io.Writer, now func() time.Time) *PlainView {
	return &PlainView{w: bufio.NewWriterSize(w, 64<<10), now: now, atStart: true, text: newScreenText()}
}

// withMarks makes the view write a CI system's markers (see logMarkers).
func (v *PlainView) withMarks(marks logMarkers) *PlainView {
	if marks != nil {
		v.marks = marks
		marks.begin(v.w)
	}
	return v
}

// endLine ends the step's output and the line it left open.
func (v *PlainView) endLine() {
	v.endOutput()
	if !v.atStart {
		v.w.WriteByte('\n')
		v.atStart = true
	}
}

// line prints text, made safe, as a line of its own.
func (v *PlainView) line(text string) {
	v.endLine()
	fmt.Fprintf(v.w, "%s %s\n", v.now().Format("15:04:05"), v.text.line(text))
}

// StepStarted prints the step's header line, in CI mode after the start
// of its group.
func (v *PlainView) StepStarted(info local.StepInfo) {
	v.mu.Lock()
	defer v.mu.Unlock()
	title := fmt.Sprintf("phase %d/%d %s · step %s · attempt %d", info.PhaseIndex+1, info.Phases, info.Phase, info.Step, info.Attempt)
	if v.marks != nil {
		v.endLine()
		v.marks.stepStarted(v.w, info, v.text.line(title))
	}
	v.line("== " + title + " · " + info.What)
	v.w.Flush()
}

// Output prefixes each line of the chunk with the time. The prefix is
// made once per chunk: the time of arrival is the chunk's.
func (v *PlainView) Output(chunk []byte) {
	v.mu.Lock()
	defer v.mu.Unlock()
	safe := v.filter.Filter(chunk)
	if !v.inChanged && termsafe.Unchanged(chunk, safe) {
		v.write(safe)
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
func (v *PlainView) writeChanged() {
	v.write([]byte(v.text.redactor.String(string(v.changed))))
	v.changed, v.inChanged = v.changed[:0], false
}

// endOutput writes what the filter and changed hold at the end of a
// step's output.
func (v *PlainView) endOutput() {
	if rest := v.filter.End(); len(rest) > 0 {
		v.changed = append(v.changed, rest...)
		v.inChanged = true
	}
	if v.inChanged {
		v.writeChanged()
	}
}

// write prints safe output, each line after the time.
func (v *PlainView) write(chunk []byte) {
	if len(chunk) == 0 {
		return
	}
	if now := v.now(); v.prefix == nil || now.Sub(v.stamp) >= time.Second || now.Before(v.stamp) {
		v.stamp = now.Truncate(time.Second)
		v.prefix = append(v.prefix[:0], now.Format("15:04:05")+" | "...)
	}
	for len(chunk) > 0 {
		if v.atStart {
			v.w.Write(v.prefix)
			v.atStart = false
		}
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			v.w.Write(chunk)
			return
		}
		v.w.Write(chunk[:i+1])
		v.atStart = true
		chunk = chunk[i+1:]
	}
}

// Progress is not shown in plain output: the lines carry the time.
func (v *PlainView) Progress(local.Progress) {
	v.mu.Lock()
	v.w.Flush()
	v.mu.Unlock()
}

// StepFinished prints how the step ended, in CI mode after the end of
// its group.
func (v *PlainView) StepFinished(info local.StepInfo, r engine.StepResult) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.marks != nil {
		v.endLine()
		v.marks.stepFinished(v.w)
	}
	v.line("== " + describeResult(info, r))
	v.w.Flush()
}

func describeResult(info local.StepInfo, r engine.StepResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "step %s ", info.Step)
	switch {
	case r.Stopped:
		b.WriteString("stopped")
	case r.TimedOut:
		b.WriteString("timed out")
	default:
		fmt.Fprintf(&b, "exited %d", r.ExitCode)
	}
	fmt.Fprintf(&b, " after %s", r.Elapsed.Round(time.Millisecond))
	if r.Tokens > 0 {
		fmt.Fprintf(&b, " · %d tokens", r.Tokens)
	}
	if r.CostUSD > 0 {
		fmt.Fprintf(&b, " · $%.4f", r.CostUSD)
	}
	return b.String()
}

// Say prints a line of the engine's own.
func (v *PlainView) Say(format string, args ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.line(fmt.Sprintf(format, args...))
	v.w.Flush()
}

// Close flushes what is buffered, after the end of any group still open.
func (v *PlainView) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.endOutput()
	if v.marks != nil {
		v.endLine()
		v.marks.end(v.w)
	}
	return v.w.Flush()
}
