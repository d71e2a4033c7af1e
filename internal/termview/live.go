package termview

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

// Live redraws a small block on a terminal: the phase, the step, the
// time against the time limit, the tokens against the token limit, and
// the last lines of output. Lines of the engine's own scroll above it; so
// do the last lines of a step that failed, and the block of a back-off
// counts down to the next attempt.
type Live struct {
	mu       sync.Mutex
	w        io.Writer
	width    int
	colour   bool
	now      func() time.Time
	info     local.StepInfo
	progress local.Progress
	lines    []string
	partial  []byte
	// drawn holds the width, in columns, of each line of the block on
	// screen: how many rows it takes after a resize.
	drawn    []int
	active   bool
	stopping bool
	// waitUntil, while a back-off sleeps, is when the next attempt
	// starts; tick redraws the countdown until then.
	waitUntil   time.Time
	waitAttempt int
	tick        chan struct{}
	text        ScreenText
	// StopResize, when set, is called by Close: it stops following the
	// terminal's size (on SIGWINCH, see Resize).
	StopResize func()
}

// liveLines is how many lines of output the block shows; keptLines, how
// many stay on screen after a step failed.
const (
	liveLines = 8
	keptLines = 10
)

// NewLive draws on w, a terminal width columns wide; colour: with
// bold and dim (not under NO_COLOR).
func NewLive(w io.Writer, width int, colour bool) *Live {
	if width < 20 {
		width = 80
	}
	return &Live{w: w, width: width, colour: colour, now: time.Now, text: NewScreenText()}
}

// StepStarted begins a new block.
func (v *Live) StepStarted(info local.StepInfo) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.endWait()
	v.info, v.progress, v.lines, v.partial, v.active, v.stopping = info, local.Progress{}, nil, nil, true, false
	v.draw()
}

// Output keeps the last lines; the block is redrawn on the next Progress.
func (v *Live) Output(chunk []byte) {
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
		if len(v.lines) > keptLines {
			v.lines = v.lines[len(v.lines)-keptLines:]
		}
		chunk = chunk[i+1:]
	}
}

// Progress redraws the block.
func (v *Live) Progress(p local.Progress) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.progress = p
	v.draw()
}

// StepFinished replaces the block with a summary line, after the last
// lines of output of a step that failed: what to look at stays on screen.
func (v *Live) StepFinished(info local.StepInfo, r engine.StepResult) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.clear()
	v.active, v.stopping = false, false
	var b strings.Builder
	if failed := !r.Stopped && (r.ExitCode != 0 || r.TimedOut); failed {
		lines := v.lines
		if len(v.partial) > 0 {
			lines = append(lines, string(v.partial))
		}
		for _, line := range lines[max(0, len(lines)-keptLines):] {
			b.WriteString("  " + v.dim(v.fit(v.text.Line(line))) + "\n")
		}
	}
	b.WriteString(v.text.Line(phaseLabel(info)+" "+describeResult(info, r)) + "\n")
	io.WriteString(v.w, b.String())
}

// Say prints a line above the block.
func (v *Live) Say(format string, args ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.clear()
	io.WriteString(v.w, v.text.Line(fmt.Sprintf(format, args...))+"\n")
	v.draw()
}

// Backoff shows a countdown to the next attempt until it starts.
func (v *Live) Backoff(d time.Duration, attempt int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.endWait()
	v.waitUntil, v.waitAttempt = v.now().Add(d), attempt
	tick := make(chan struct{})
	v.tick = tick
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-tick:
				return
			case <-t.C:
				v.mu.Lock()
				v.draw()
				v.mu.Unlock()
			}
		}
	}()
	v.draw()
}

// Stopping shows the step's grace period on the block.
func (v *Live) Stopping() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.stopping = true
	v.draw()
}

// Resize fits the block to a terminal now width columns wide.
func (v *Live) Resize(width int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if width < 20 {
		return
	}
	v.clear()
	v.width = width
	v.draw()
}

// Close leaves the screen as it is, the block gone.
func (v *Live) Close() error {
	if v.StopResize != nil {
		v.StopResize()
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.endWait()
	v.clear()
	return nil
}

// endWait stops the countdown.
func (v *Live) endWait() {
	if v.tick != nil {
		close(v.tick)
		v.tick = nil
	}
	v.waitUntil = time.Time{}
}

func phaseLabel(info local.StepInfo) string {
	return fmt.Sprintf("[%d/%d %s]", info.PhaseIndex+1, info.Phases, info.Phase)
}

// clear removes the block: from the start of the line (where a Ctrl+C
// echoed "^C" moved the cursor), up over the rows the block takes at the
// terminal's width now (a narrower terminal wraps its lines), then
// everything below.
func (v *Live) clear() {
	if len(v.drawn) == 0 {
		return
	}
	rows := 0
	for _, n := range v.drawn {
		rows += max(1, (n+v.width-1)/v.width)
	}
	fmt.Fprintf(v.w, "\r\x1b[%dA\x1b[J", rows)
	v.drawn = v.drawn[:0]
}

func (v *Live) draw() {
	if !v.active && v.waitUntil.IsZero() {
		return
	}
	v.clear()
	var b strings.Builder
	line := func(text string, style func(string) string, indent string) {
		text = v.fit(indent + v.text.Line(text))
		b.WriteString(style(text) + "\n")
		v.drawn = append(v.drawn, utf8.RuneCountInString(text))
	}
	if !v.active {
		left := max(0, v.waitUntil.Sub(v.now()))
		line(fmt.Sprintf("%s retrying: attempt %d starts in %s", phaseLabel(v.info), v.waitAttempt,
			left.Round(time.Second)), v.bold, "")
		io.WriteString(v.w, b.String())
		return
	}
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
	if v.stopping {
		status += " · stopping (Ctrl+C again to kill)"
	}
	// The block's own bold and dim go around text already made safe.
	line(status, v.bold, "")
	for _, text := range v.lines[max(0, len(v.lines)-liveLines):] {
		line(text, v.dim, "  ")
	}
	io.WriteString(v.w, b.String())
}

func (v *Live) bold(s string) string {
	if !v.colour {
		return s
	}
	return "\x1b[1m" + s + "\x1b[0m"
}

func (v *Live) dim(s string) string {
	if !v.colour {
		return s
	}
	return "\x1b[2m" + s + "\x1b[0m"
}

// fit cuts a line, made safe, to the terminal's width so that the
// block's height is what draw counted.
func (v *Live) fit(s string) string {
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
