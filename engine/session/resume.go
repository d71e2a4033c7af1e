package session

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

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

// SpecAtStartFile keeps the spec as it was when the session started
// (redacted, as SpecAtPauseFile), and SpecAtStartHashFile the
// ContentHash of it before redaction: what pipeline replay gives a
// replay of the session.
const (
	SpecAtStartFile     = "spec-at-start.md"
	SpecAtStartHashFile = "spec-at-start.sha256"
)

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
		budget := resumeBudget(plan)
		in, warning := resumeInput(plan, x, s, a, redact)
		text, err := engine.RenderResumeContext(plan.ResumeTemplate, in, budget, tokens.Count)
		if err != nil && plan.ResumeTemplate != "" {
			warning = joinWarnings(warning, fmt.Sprintf("%s: resume_context.template failed (%v); the built-in resume context is used instead", plan.File, err))
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

// resumeBudget is the plan's resume context budget, in tokens.
func resumeBudget(plan *spec.Plan) int {
	if plan.ResumeBudget > 0 {
		return plan.ResumeBudget
	}
	return ResumeBudget
}

// joinWarnings puts two warnings on one line.
func joinWarnings(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

// resumeInput is what the resume context of a is rendered from; the
// warning says what could not be read for it.
func resumeInput(plan *spec.Plan, x *store.Session, s engine.State, a engine.StartStep, redact func(string) string) (engine.ResumeInput, string) {
	phase := plan.Phases[a.Phase]
	in := engine.ResumeInput{Pipeline: plan.Name.Value, Phase: phase.Name, Step: phase.Steps[a.Step].Name, Attempt: a.Attempt,
		SpecPath: plan.Spec}
	in.Reason, in.Why, in.Note = engine.ResumeWhy(plan, s, a)
	if a.Resuming != nil {
		in.HumanChanges = a.Resuming.Changed
		in.RecentOutput = a.Resuming.RecentOutput
	}
	in.Failed = a.Failed
	for i, rec := range s.Phases {
		switch {
		case i < a.Phase && engine.SkippedBy(rec) != nil:
			f := engine.SkippedBy(rec)
			in.Skipped = append(in.Skipped, spec.SkippedPhase{Phase: rec.Name, When: f.Expression, Read: strings.Join(engine.FlatValues(f.Values), ", ")})
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
	warning := ""
	var err error
	if in.PinnedFacts, in.Decisions, in.OpenTasks, err = workingSetInput(s.WorkingSet, x, resumeBudget(plan)); err != nil {
		warning = fmt.Sprintf("%v; the project's facts are left out of the resume context", err)
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
	return in, warning
}

// workingSetInput is what the resume context shows of the working set:
// the pinned facts (the project's, then those a human pinned in the
// session, then the agent's), the decisions and the open tasks, oldest
// first. A project memory that cannot be read is left out, and the
// error says why. The project's facts past what budget tokens could
// hold (engine.MaxBytesPerToken) are left out uncounted, and counted in
// a last entry.
func workingSetInput(w engine.WorkingSet, x *store.Session, budget int) (facts, decisions, tasks []string, err error) {
	if x != nil {
		var project ProjectMemory
		if project, err = LoadProjectMemory(x.Store()); err == nil {
			size := 0
			for i, f := range project.Pinned {
				if size += len(f.Text); budget > 0 && size > budget*engine.MaxBytesPerToken {
					facts = append(facts, fmt.Sprintf("… and %d more project facts (pipeline memory --project lists them)", len(project.Pinned)-i))
					break
				}
				facts = append(facts, f.Text+" (project)")
			}
		}
	}
	for _, human := range []bool{true, false} {
		for _, f := range w.Pinned {
			if (f.Source == engine.SourceHuman) == human {
				facts = append(facts, f.Text)
			}
		}
	}
	for _, d := range w.Decisions {
		decisions = append(decisions, d.Text)
	}
	for _, t := range w.Open {
		tasks = append(tasks, t.Text)
	}
	return facts, decisions, tasks, err
}

// ResumePreview is what pipeline resume would send now: the step it
// would start, and the resume context that would go before the prompt of
// the first agent step.
type ResumePreview struct {
	// Phase, Step and Attempt are the step resume would start.
	Phase, Step string
	Attempt     int
	// AgentPhase and AgentStep name the agent step the context goes with:
	// the step resumed, or the first agent step after it when that is a
	// run step (its context is rendered as the session stands now).
	AgentPhase, AgentStep string
	// Context is the resume context; "" when no agent step is left.
	Context string
	// Warning says the phases.yaml template failed (see
	// ResumeContextWithWarning).
	Warning string
}

// PreviewResume works out what resuming the session of ref with notes
// (and a jump to phase) would send, as Session.Resume and the first
// decision would, without a lock and without writing anything: the
// decisions are made on a copy of the state and recorded nowhere.
func PreviewResume(ref *Ref, now time.Time, notes, phase string) (ResumePreview, error) {
	plan := ref.Plan
	if phase != "" && !slices.ContainsFunc(plan.Phases, func(p spec.PhasePlan) bool { return p.Name == phase }) {
		return ResumePreview{}, refused("--phase %q is not a phase of %s (%s)%s", phase, ref.X.Meta.File, PhaseNames(plan), PhaseHint(plan, phase))
	}
	if ref.Running() {
		return ResumePreview{}, refused("session %s is running: there is nothing to resume", ref.ID())
	}
	s, crashed, err := ref.State()
	if err != nil {
		return ResumePreview{}, err
	}
	var events []engine.Event
	switch {
	case s.Status == "":
		return ResumePreview{}, refused("session %s has not started: there is nothing to resume", ref.ID())
	case s.Status == engine.StatusPaused:
		events = []engine.Event{engine.Resumed{At: now, Notes: notes, Phase: phase, Plan: plan.Digest}}
	case crashed:
		if phase != "" {
			return ResumePreview{}, refused("--phase needs a paused session; session %s was cut short while running: resume it first", ref.ID())
		}
		if notes != "" {
			events = append(events, engine.Noted{At: now, Notes: notes})
		}
		events = append(events, engine.Recovered{At: now, Plan: plan.Digest})
	default:
		return ResumePreview{}, refused("session %s is %s: there is nothing to resume (pipeline run --new starts another)", ref.ID(), s.Status)
	}
	var actions []engine.Action
	for _, ev := range events {
		s, actions = engine.Decide(plan, s, ev)
	}
	var start *engine.StartStep
	for _, a := range actions {
		switch a := a.(type) {
		case engine.StartStep:
			start = &a
		case engine.Complete:
			return ResumePreview{}, refused("resuming session %s would run nothing and complete it: its last phase, %s, is done and waits for a sign-off (auto_advance: false)",
				ref.ID(), plan.Phases[s.Phase].Name)
		}
	}
	if start == nil {
		return ResumePreview{}, refused("resuming session %s would start no step", ref.ID())
	}
	p := ResumePreview{Phase: plan.Phases[start.Phase].Name, Step: plan.Phases[start.Phase].Steps[start.Step].Name, Attempt: start.Attempt}
	a := *start
	if plan.Phases[a.Phase].Steps[a.Step].Agent == nil {
		// The context waits for the first agent step from here.
		a.ResumeContext, a.Resuming, a.Failed = true, s.Resuming, s.Failed
		found := false
		for pi := a.Phase; pi < len(plan.Phases) && !found; pi++ {
			first := 0
			if pi == a.Phase {
				first = a.Step + 1
			}
			for si := first; si < len(plan.Phases[pi].Steps); si++ {
				if plan.Phases[pi].Steps[si].Agent != nil {
					if pi != a.Phase {
						a.Attempt = 1
					}
					a.Phase, a.Step, found = pi, si, true
					break
				}
			}
		}
		if !found {
			return p, nil
		}
	}
	p.AgentPhase, p.AgentStep = plan.Phases[a.Phase].Name, plan.Phases[a.Phase].Steps[a.Step].Name
	if a.ResumeContext {
		p.Context, p.Warning = ResumeContextWithWarning(plan, ref.X, NewRedactor(plan).String)(s, a)
	}
	return p, nil
}
