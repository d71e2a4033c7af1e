package main

import (
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/pipeline-dev/pipeline/internal/cireport"
)

// runsAndEndsHere tells, from the command line as written and before
// cobra reads it, whether it is pipeline run or resume of one session
// that this process runs and ends with: then main catches the run's
// signals from its first instant (local.CatchSignalsAhead), while cobra
// parses and the plan loads. It only has to be cheap and never wrong the
// other way for a form that leaves the process at once (a hand-off to
// pipeline-temporal): what the parsed flags show otherwise (--watch, the
// prompt, many specs, a fleet from phases.yaml, an error) gives the
// signals back (local.LetSignalsAheadGo). A form it does not know gets no
// head start.
func runsAndEndsHere(args []string) bool {
	if len(args) == 0 || (args[0] != "run" && args[0] != "resume") {
		return false
	}
	if os.Getenv("PIPELINE_BACKEND") != "" || os.Getenv("PIPELINE_TEMPORAL") != "" {
		return false
	}
	// On a terminal, outside CI, a pause is most likely answered where
	// it happens (launch.asks): giving the signals back for the prompt
	// would put a round trip for each on the way to the run.
	if term.IsTerminal(int(os.Stdin.Fd())) && !cireport.Mode(nil, os.Getenv).Enabled {
		return false
	}
	for _, a := range args[1:] {
		if a == "--" {
			break
		}
		name, _, _ := strings.Cut(a, "=")
		switch name {
		case "--backend", "--temporal", "--watch", "--dry-run", "--help", "-h":
			return false
		}
	}
	return true
}
