package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
)

// LiveView redraws a small block on a terminal: the phase, the step, the
// time against the time limit, the tokens against the token limit, and
// the last lines of output. Lines of the engine's own scroll above it.
type LiveView struct {
	mu       sync.Mutex
	w        io.Writer
	width    int
	info     local.StepInfo
	progress local.Progress
	lines    []string
	partial  []byte
	drawn    int // lines of the block on screen
	active   bool
	text     screenText
}

// liveLines is how many lines of output the block shows.
const liveLines = 8

// NewLiveView draws on w, a terminal width columns wide.
func NewLiveView(w io.Writer, width int) *LiveView {
	if width < 20 {
		width = 80
	}
	return &LiveView{w: w, width: width, text: newScreenText()}
}

// StepStarted begins a new block.
func (v *LiveView) StepStarted(info local.StepInfo) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.info, v.progress, v.lines, v.partial, v.active = info, local.Progress{}, nil, nil, true
	v.draw()
}

// Output keeps the last lines; the block is redrawn on the next Progress.
func (v *LiveView) Output(chunk []byte) {
	v.mu.Lock()
	defer v.mu.Unlock()
	// Only the end of a large chunk can be shown.
	if len(chunk) > 64<<10 {
		chunk = chunk[len(chunk)-64<<10:]
		v.partial = nil
	}
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			v.partial = append(v.partial, chunk...)
			if len(v.partial) > 4096 {
				v.partial = v.partial[len(v.partial)-4096:]
			}
			return
		}
		v.partial = append(v.partial, chunk[:i]...)
		v.lines = append(v.lines, string(bytes.TrimSuffix(v.partial, []byte{'\r'})))
		v.partial = v.partial[:0]
		if len(v.lines) > liveLines {
			v.lines = v.lines[len(v.lines)-liveLines:]
		}
		chunk = chunk[i+1:]
	}
}

// Progress redraws the block.
func (v *LiveView) Progress(p local.Progress) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.progress = p
	v.draw()
}

// StepFinished replaces the block with a summary line.
func (v *LiveView) StepFinished(info local.StepInfo, r engine.StepResult) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.clear()
	v.active = false
	io.WriteString(v.w, v.text.line(phaseLabel(info)+" "+describeResult(info, r))+"\n")
}

// Say prints a line above the block.
func (v *LiveView) Say(format string, args ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.clear()
	io.WriteString(v.w, v.text.line(fmt.Sprintf(format, args...))+"\n")
	v.draw()
}

// Close leaves the screen as it is.
func (v *LiveView) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.clear()
	return nil
}

func phaseLabel(info local.StepInfo) string {
	return fmt.Sprintf("[%d/%d %s]", info.PhaseIndex+1, info.Phases, info.Phase)
}

func (v *LiveView) clear() {
	if v.drawn > 0 {
		fmt.Fprintf(v.w, "\x1b[%dA\x1b[J", v.drawn)
		v.drawn = 0
	}
}

func (v *LiveView) draw() {
	if !v.active {
		return
	}
	v.clear()
	var b strings.Builder
	status := fmt.Sprintf("%s step %s · attempt %d · %s", phaseLabel(v.info), v.info.Step, v.info.Attempt,
		formatElapsed(v.progress.Elapsed))
	if v.info.TimeLimit > 0 {
		status += " / " + formatElapsed(v.info.TimeLimit)
	}
	if v.progress.Tokens > 0 || v.info.TokenLimit > 0 {
		status += fmt.Sprintf(" · tokens %s", formatCount(v.progress.Tokens))
		if v.info.TokenLimit > 0 {
			status += " / " + formatCount(v.info.TokenLimit)
		}
	}
	// The block's own bold and dim go around text already made safe.
	b.WriteString("\x1b[1m" + v.fit(v.text.line(status)) + "\x1b[0m\n")
	for _, line := range v.lines {
		b.WriteString("  \x1b[2m" + v.fit(v.text.line(line)) + "\x1b[0m\n")
	}
	io.WriteString(v.w, b.String())
	v.drawn = 1 + len(v.lines)
}

// fit cuts a line, made safe, to the terminal's width so that the
// block's height is what draw counted.
func (v *LiveView) fit(s string) string {
	if utf8.RuneCountInString(s) <= v.width-3 {
		return s
	}
	return string([]rune(s)[:v.width-4]) + "…"
}

func formatElapsed(d time.Duration) string {
	d = d.Round(time.Second)
	if d >= time.Hour {
		return fmt.Sprintf("%d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
	}
	return fmt.Sprintf("%02d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

func formatCount(n int) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%dk", n/1000)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1000)
	}
	return fmt.Sprint(n)
}
