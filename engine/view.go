package engine

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

// View shows a run as it goes. Output is the hot path: it gets every chunk
// of every step's output.
type View interface {
	StepStarted(info StepInfo)
	Output(chunk []byte)
	// Progress is called about ten times a second while a step runs.
	Progress(p Progress)
	StepFinished(info StepInfo, r StepResult)
	// Say prints a line of the engine's own: a retry, a pause, the end.
	Say(format string, args ...any)
	Close() error
}

// StepInfo names the running step.
type StepInfo struct {
	Phase      string
	PhaseIndex int
	Phases     int
	Step       string
	Attempt    int
	What       string // the command line, or the agent
	TimeLimit  time.Duration
	TokenLimit int
}

// Progress is the live state of the running step.
type Progress struct {
	Elapsed time.Duration
	Tokens  int
}

var (
	tokenLimitPattern = regexp.MustCompile(`^\s*tokens\s*>=?\s*([0-9_]+)\s*$`)
	timeLimitPattern  = regexp.MustCompile(`^\s*elapsed\s*>=?\s*duration\(\s*"([^"]+)"\s*\)\s*$`)
)

// limits finds the simplest token and time limits of a phase, for display:
// pause_when triggers of the shape tokens > N and elapsed > duration("D"),
// and the step's timeout.
func limits(phase *spec.PhasePlan, step *spec.StepPlan) (time.Duration, int) {
	timeLimit := time.Duration(step.Timeout.Value)
	tokenLimit := 0
	for _, t := range phase.PauseWhen {
		if m := tokenLimitPattern.FindStringSubmatch(t.Expr.Source); m != nil {
			if n, err := strconv.Atoi(strings.ReplaceAll(m[1], "_", "")); err == nil && (tokenLimit == 0 || n < tokenLimit) {
				tokenLimit = n
			}
		}
		if m := timeLimitPattern.FindStringSubmatch(t.Expr.Source); m != nil {
			if d, err := spec.ParseDuration(m[1]); err == nil && (timeLimit == 0 || time.Duration(d) < timeLimit) {
				timeLimit = time.Duration(d)
			}
		}
	}
	return timeLimit, tokenLimit
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
func (v *PlainView) StepStarted(info StepInfo) {
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
func (v *PlainView) Progress(Progress) {
	v.mu.Lock()
	v.w.Flush()
	v.mu.Unlock()
}

// StepFinished prints how the step ended.
func (v *PlainView) StepFinished(info StepInfo, r StepResult) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.line("== " + describeResult(info, r))
	v.w.Flush()
}

func describeResult(info StepInfo, r StepResult) string {
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
