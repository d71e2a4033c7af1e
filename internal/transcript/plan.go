package transcript

import (
	"path/filepath"
	"strings"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

// FormatIn is the format of the transcript phase/attempt-step.log of a
// session of plan: its step's agent's; Plain for a run: step or a command
// agent; Detect (found out from what it holds) when the plan no longer
// has the step.
func FormatIn(plan *spec.Plan, file string) Format {
	phase, base := filepath.Split(filepath.ToSlash(file))
	phase = strings.TrimSuffix(phase, "/")
	_, step, _ := strings.Cut(strings.TrimSuffix(base, ".log"), "-")
	for _, p := range plan.Phases {
		if p.Name != phase {
			continue
		}
		for _, s := range p.Steps {
			switch {
			case s.Name != step:
			case s.Run != "":
				return Plain
			case s.Agent != nil:
				return FormatOf(s.Agent.Value.Kind)
			}
		}
	}
	return Detect
}
