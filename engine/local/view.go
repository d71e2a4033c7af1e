package local

import (
	"strconv"
	"strings"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
)

// View shows a run as it goes. Output is the hot path: it gets every chunk
// of every step's output.
type View interface {
	StepStarted(info StepInfo)
	Output(chunk []byte)
	// Progress is called about ten times a second while a step runs.
	Progress(p Progress)
	StepFinished(info StepInfo, r engine.StepResult)
	// Say prints a line of the engine's own: a retry, a pause, the end.
	Say(format string, args ...any)
	Close() error
}

// Discard is a View that shows nothing of a run.
var Discard View = discard{}

type discard struct{}

func (discard) StepStarted(StepInfo)                     {}
func (discard) Output([]byte)                            {}
func (discard) Progress(Progress)                        {}
func (discard) StepFinished(StepInfo, engine.StepResult) {}
func (discard) Say(string, ...any)                       {}
func (discard) Close() error                             { return nil }

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

// Limits finds the simplest token and time limits of a phase, for display:
// pause_when triggers of the shape tokens > N and elapsed > duration("D"),
// and the step's timeout. The shapes are read by hand, not by regular
// expressions: compiling those cost every run 334 allocations (27 KB) and
// 27 µs warm (BenchmarkLimitShapes), more in a process just started.
func Limits(phase *spec.PhasePlan, step *spec.StepPlan) (time.Duration, int) {
	timeLimit := time.Duration(step.Timeout.Value)
	tokenLimit := 0
	for _, t := range phase.PauseWhen {
		if digits, ok := tokenLimitOf(t.Expr.Source); ok {
			if n, err := strconv.Atoi(strings.ReplaceAll(digits, "_", "")); err == nil && (tokenLimit == 0 || n < tokenLimit) {
				tokenLimit = n
			}
		}
		if text, ok := timeLimitOf(t.Expr.Source); ok {
			if d, err := spec.ParseDuration(text); err == nil && (timeLimit == 0 || time.Duration(d) < timeLimit) {
				timeLimit = time.Duration(d)
			}
		}
	}
	return timeLimit, tokenLimit
}

// tokenLimitOf reads `tokens > N` (or >=; N of digits and underscores),
// spaces allowed around each part, and returns N.
func tokenLimitOf(source string) (string, bool) {
	rest, ok := comparedAbove(source, "tokens")
	if !ok {
		return "", false
	}
	rest = skipSpace(rest)
	end := 0
	for end < len(rest) && (rest[end] >= '0' && rest[end] <= '9' || rest[end] == '_') {
		end++
	}
	if end == 0 || skipSpace(rest[end:]) != "" {
		return "", false
	}
	return rest[:end], true
}

// timeLimitOf reads `elapsed > duration("D")` (or >=), spaces allowed
// around each part but inside `duration(`, and returns D.
func timeLimitOf(source string) (string, bool) {
	rest, ok := comparedAbove(source, "elapsed")
	if !ok {
		return "", false
	}
	rest, ok = strings.CutPrefix(skipSpace(rest), "duration(")
	if !ok {
		return "", false
	}
	rest, ok = strings.CutPrefix(skipSpace(rest), `"`)
	if !ok {
		return "", false
	}
	text, rest, ok := strings.Cut(rest, `"`)
	if !ok || text == "" {
		return "", false
	}
	rest, ok = strings.CutPrefix(skipSpace(rest), ")")
	if !ok || skipSpace(rest) != "" {
		return "", false
	}
	return text, true
}

// comparedAbove reads `name >` or `name >=` at the start of source
// (spaces before and after name), and returns what follows.
func comparedAbove(source, name string) (string, bool) {
	rest, ok := strings.CutPrefix(skipSpace(source), name)
	if !ok {
		return "", false
	}
	rest, ok = strings.CutPrefix(skipSpace(rest), ">")
	if !ok {
		return "", false
	}
	rest, _ = strings.CutPrefix(rest, "=")
	return rest, true
}

// skipSpace skips the spaces of a regular expression's \s (space, tab,
// newline, carriage return, form feed) at the start of s: each reader
// skips what comes before its next part.
func skipSpace(s string) string {
	return strings.TrimLeft(s, " \t\n\r\f")
}

// WaitView is what a view may show besides a View's lines: a back-off
// counting down to the next attempt, and a step given its grace period to
// exit. The driver calls it when its View has it.
type WaitView interface {
	// Backoff: the next attempt starts once d has passed.
	Backoff(d time.Duration, attempt int)
	// Stopping: the running step was asked to stop (interrupt, then its
	// grace period, then kill); a second interrupt kills it at once.
	Stopping()
}
