package session

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/tokens"
)

// ResumeBudget is the default size of the resume context, in tokens.
const ResumeBudget = 3000

// SpecAtPauseFile keeps the spec as it was when the session paused, so
// that the resume context can say what changed since.
const SpecAtPauseFile = "spec-at-pause.md"

// ResumeContextFor returns the Runner.ResumeContext of a session: the
// resume context rendered from the state, the human notes, git and the
// spec's changes since the pause, within ResumeBudget tokens.
func ResumeContextFor(plan *spec.Plan, x *store.Session, redact func(string) string) func(engine.State, engine.StartStep) string {
	return func(s engine.State, a engine.StartStep) string {
		budget := plan.ResumeBudget
		if budget <= 0 {
			budget = ResumeBudget
		}
		text, err := engine.RenderResumeContext(plan.ResumeTemplate, resumeInput(plan, x, s, a, redact), budget, tokens.Count)
		if err != nil {
			return ""
		}
		if redact != nil {
			text = redact(text)
		}
		return text
	}
}

func resumeInput(plan *spec.Plan, x *store.Session, s engine.State, a engine.StartStep, redact func(string) string) engine.ResumeInput {
	phase := plan.Phases[a.Phase]
	in := engine.ResumeInput{Pipeline: plan.Name.Value, Phase: phase.Name, Step: phase.Steps[a.Step].Name, Attempt: a.Attempt,
		SpecPath: plan.Spec}
	if s.Pause != nil {
		in.Reason, in.Note = s.Pause.Reason, s.Pause.Note
	} else if n := len(s.Phases[a.Phase].Fired); n > 0 {
		last := s.Phases[a.Phase].Fired[n-1]
		in.Reason, in.Note = "restart: "+last.Reason, last.Note
	} else {
		in.Reason = "the runner stopped (killed or crashed)"
	}
	for i, rec := range s.Phases {
		if i < a.Phase || (i == a.Phase && len(rec.ExitCodes) > 0) {
			in.Done = append(in.Done, engine.DoneItem{Phase: rec.Name, Summary: rec.Summary, Attempts: rec.Attempts, ExitCodes: rec.ExitCodes})
		}
		in.HumanNotes = append(in.HumanNotes, rec.Notes...)
		if i == a.Phase {
			in.FilesChanged = rec.Files
		}
	}
	for j := a.Step; j < len(phase.Steps); j++ {
		in.NextSteps = append(in.NextSteps, fmt.Sprintf("%s: step %s", phase.Name, phase.Steps[j].Name))
	}
	for _, p := range plan.Phases[a.Phase+1:] {
		in.NextSteps = append(in.NextSteps, fmt.Sprintf("phase %s: %s", p.Name, p.Prompt.Value))
	}
	if plan.Spec != "" && x != nil {
		// The saved copy was redacted; so is the spec it is compared with.
		before, _ := x.ReadFile(SpecAtPauseFile)
		after, err := os.ReadFile(plan.Spec)
		if redact != nil {
			after = []byte(redact(string(after)))
		}
		if before != nil && err == nil {
			in.SpecDiff = engine.SpecDiff(filepath.Base(plan.Spec), string(before), string(after))
		}
	}
	return in
}
