package engine

import (
	"fmt"
	"strings"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

// CheckPlan refuses a plan whose phases are not the session's: the state
// indexes phases, and a renamed or reordered list would be misread; nor
// may the phase the session is in have lost the step it is at. It is
// here, with the pure engine, because the Temporal workflow checks the
// plan a resume brings, and workflow code may not link the session store.
func CheckPlan(plan *spec.Plan, s State, id string) error {
	if len(s.Phases) == 0 {
		return nil
	}
	if err := checkPhases(plan, s, id); err != nil {
		return err
	}
	if s.Phase < len(plan.Phases) && s.Step >= len(plan.Phases[s.Phase].Steps) {
		phase := plan.Phases[s.Phase]
		return fmt.Errorf("session %s is at step %d of phase %s, which now has %d step(s): resume it with --phase %s to run the phase again, or run with --new",
			id, s.Step+1, phase.Name, len(phase.Steps), phase.Name)
	}
	return nil
}

func checkPhases(plan *spec.Plan, s State, id string) error {
	same := len(s.Phases) == len(plan.Phases)
	for i := 0; same && i < len(s.Phases); i++ {
		same = s.Phases[i].Name == plan.Phases[i].Name
	}
	if same {
		return nil
	}
	var had, has []string
	for _, p := range s.Phases {
		had = append(had, p.Name)
	}
	for _, p := range plan.Phases {
		has = append(has, p.Name)
	}
	return fmt.Errorf("session %s ran the phases %s; the pipeline now has %s. Prompts and policies may change between runs, the list of phases may not: run with --new to start a session with the new phases",
		id, strings.Join(had, " → "), strings.Join(has, " → "))
}
