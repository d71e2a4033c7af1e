package render

import (
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/engine/spec"
)

// Outcome is the line that says how a run ended, as the views say it.
func Outcome(plan *spec.Plan, s engine.State) string {
	switch {
	case s.Status == engine.StatusPaused && s.Pause != nil:
		return "paused: " + local.DescribeFiring(*s.Pause)
	case s.Status == engine.StatusCompleted:
		return engine.CompletedLine(s)
	case s.Status == engine.StatusFailed:
		return "failed: " + s.FailReason
	}
	return string(s.Status)
}
