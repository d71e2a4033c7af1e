package session

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

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

// SpecHashFile keeps ContentHash of the spec as it was when the session
// paused (before redaction), so that a watcher started later can tell
// that the spec changed while nothing watched it.
const SpecHashFile = "spec-at-pause.sha256"

// ContentHash is the hex SHA-256 of a file's content.
func ContentHash(content []byte) string {
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:])
}

// SpecChangedSincePause reports whether the spec of a paused session
// differs from the one it paused with. A session that kept no hash (it
// paused before hashes were kept, or has no spec) is compared by its
// redacted copy; one that kept neither counts as unchanged.
func SpecChangedSincePause(plan *spec.Plan, x *store.Session) (bool, error) {
	if plan.Spec == "" {
		return false, nil
	}
	now, err := os.ReadFile(plan.Spec)
	if err != nil {
		return false, err
	}
	if kept, _ := x.ReadFile(SpecHashFile); kept != nil {
		return strings.TrimSpace(string(kept)) != ContentHash(now), nil
	}
	if copy, _ := x.ReadFile(SpecAtPauseFile); copy != nil {
		return string(copy) != NewRedactor(plan).String(string(now)), nil
	}
	return false, nil
}

// ResumeContextFor returns the Runner.ResumeContext of a session: the
// resume context rendered from the state, the human notes, git and the
// spec's changes since the pause, within ResumeBudget tokens. A
// resume_context.template that fails to render gives way to the built-in
// one (see ResumeContextWithWarning, which says so).
func ResumeContextFor(plan *spec.Plan, x *store.Session, redact func(string) string) func(engine.State, engine.StartStep) string {
	render := ResumeContextWithWarning(plan, x, redact)
	return func(s engine.State, a engine.StartStep) string {
		text, _ := render(s, a)
		return text
	}
}

// ResumeContextWithWarning is ResumeContextFor that also returns a warning
// for the person running the pipeline when phases.yaml's
// resume_context.template failed to render. Loading checks every field a
// template reads, but some failures show only with the data (index past
// the end of a list, say); the agent then gets the built-in resume
// context, human notes included, rather than none.
func ResumeContextWithWarning(plan *spec.Plan, x *store.Session, redact func(string) string) func(engine.State, engine.StartStep) (text, warning string) {
	return func(s engine.State, a engine.StartStep) (string, string) {
		budget := plan.ResumeBudget
		if budget <= 0 {
			budget = ResumeBudget
		}
		in := resumeInput(plan, x, s, a, redact)
		text, err := engine.RenderResumeContext(plan.ResumeTemplate, in, budget, tokens.Count)
		warning := ""
		if err != nil && plan.ResumeTemplate != "" {
			warning = fmt.Sprintf("%s: resume_context.template failed (%v); the built-in resume context is used instead", plan.File, err)
			text, err = engine.RenderResumeContext("", in, budget, tokens.Count)
		}
		if err != nil {
			// The built-in template renders any input; this is a bug.
			text, warning = "", fmt.Sprintf("the resume context could not be rendered: %v", err)
		}
		if redact != nil {
			text, warning = redact(text), redact(warning)
		}
		return text, warning
	}
}

func resumeInput(plan *spec.Plan, x *store.Session, s engine.State, a engine.StartStep, redact func(string) string) engine.ResumeInput {
	phase := plan.Phases[a.Phase]
	in := engine.ResumeInput{Pipeline: plan.Name.Value, Phase: phase.Name, Step: phase.Steps[a.Step].Name, Attempt: a.Attempt,
		SpecPath: plan.Spec}
	in.Reason, in.Why, in.Note = engine.ResumeWhy(plan, s, a)
	for i, rec := range s.Phases {
		switch {
		case i < a.Phase && rec.Status == engine.StatusCompleted:
			in.Done = append(in.Done, engine.DoneItem{Phase: rec.Name, Summary: rec.Summary, Passed: true,
				Attempts: rec.Attempts, ExitCodes: rec.ExitCodes})
		case i == a.Phase:
			item := engine.DoneItem{Phase: rec.Name, Summary: rec.Summary, Attempts: rec.Attempts, ExitCodes: rec.ExitCodes}
			for _, st := range phase.Steps {
				if v, ok := s.Steps[st.Name]; ok && v.Ran {
					item.Steps = append(item.Steps, spec.StepExit{Name: st.Name, ExitCode: v.ExitCode, TimedOut: v.TimedOut})
				}
			}
			if len(item.Steps) > 0 {
				in.Done = append(in.Done, item)
			}
			in.FilesChanged = rec.Files
		}
		in.HumanNotes = append(in.HumanNotes, rec.Notes...)
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
			if now := spec.FrontmatterBlock(after); now != nil && !bytes.Equal(now, spec.FrontmatterBlock(before)) {
				in.SpecFrontmatter = strings.TrimRight(string(now), "\n")
			}
		}
	}
	return in
}
