package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
)

// PlainView writes timestamped lines: for CI logs and anything that is not
// a terminal.
type PlainView struct {
	mu      sync.Mutex
	w       *bufio.Writer
	now     func() time.Time
	atStart bool
	prefix  []byte
	stamp   time.Time
}

// NewPlainView writes to w.
func NewPlainView(w io.Writer, now func() time.Time) *PlainView {
	return &PlainView{w: bufio.NewWriterSize(w, 64<<10), now: now, atStart: true}
}

func (v *PlainView) line(text string) {
	if !v.atStart {
		v.w.WriteByte('\n')
		v.atStart = true
	}
	fmt.Fprintf(v.w, "%s %s\n", v.now().Format("15:04:05"), text)
}

// StepStarted prints the step's header line.
func (v *PlainView) StepStarted(info local.StepInfo) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.line(fmt.Sprintf("== phase %d/%d %s · step %s · attempt %d · %s", info.PhaseIndex+1, info.Phases, info.Phase, info.Step, info.Attempt, info.What))
	v.w.Flush()
}

// Output prefixes each line of the chunk with the time. The prefix is
// made once per chunk: the time of arrival is the chunk's.
func (v *PlainView) Output(chunk []byte) {
	v.mu.Lock()
	defer v.mu.Unlock()
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

// StepFinished prints how the step ended.
func (v *PlainView) StepFinished(info local.StepInfo, r engine.StepResult) {
	v.mu.Lock()
	defer v.mu.Unlock()
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

// Close flushes what is buffered.
func (v *PlainView) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.w.Flush()
}
