package local

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"

	"github.com/pipeline-dev/pipeline/internal/lazy"
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

var (
	tokenLimitPattern = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`^\s*tokens\s*>=?\s*([0-9_]+)\s*$`) }}
	timeLimitPattern  = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp {
		return regexp.MustCompile(`^\s*elapsed\s*>=?\s*duration\(\s*"([^"]+)"\s*\)\s*$`)
	}}
)

// Limits finds the simplest token and time limits of a phase, for display:
// pause_when triggers of the shape tokens > N and elapsed > duration("D"),
// and the step's timeout.
func Limits(phase *spec.PhasePlan, step *spec.StepPlan) (time.Duration, int) {
	timeLimit := time.Duration(step.Timeout.Value)
	tokenLimit := 0
	for _, t := range phase.PauseWhen {
		if m := tokenLimitPattern.Get().FindStringSubmatch(t.Expr.Source); m != nil {
			if n, err := strconv.Atoi(strings.ReplaceAll(m[1], "_", "")); err == nil && (tokenLimit == 0 || n < tokenLimit) {
				tokenLimit = n
			}
		}
		if m := timeLimitPattern.Get().FindStringSubmatch(t.Expr.Source); m != nil {
			if d, err := spec.ParseDuration(m[1]); err == nil && (timeLimit == 0 || time.Duration(d) < timeLimit) {
				timeLimit = time.Duration(d)
			}
		}
	}
	return timeLimit, tokenLimit
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
