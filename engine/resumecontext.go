package engine

import (
	"fmt"
	"slices"
	"strings"
	"text/template"
	"unicode/utf8"

	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/textdiff"
)

// ResumeInput is what the resume context is rendered from. The type is
// spec's: a resume_context template is checked against it when
// phases.yaml is loaded, and engine/spec cannot import engine.
type ResumeInput = spec.ResumeInput

// DoneItem is one finished piece of work: a completed phase, or the work
// of the current phase so far.
type DoneItem = spec.DoneItem

// DefaultResumeTemplate is the text/template used unless phases.yaml sets
// resume_context.template. Its data is a ResumeInput; besides the
// text/template built-ins a template may call:
//
//	oneline s        s with every run of white space (new lines included) made one space
//	indent n s       s with every line after the first indented by n spaces
//	join sep list    strings.Join(list, sep)
//	ints sep list    a []int joined with sep
//	fence lang s     s in a ``` code block (a longer fence when s holds backticks)
//	diffblock s      the SpecDiff in a ```diff block, or as plain text when
//	                 the budget replaced the diff by a note
//
// When the context is over its budget, the data is cut before rendering
// again, and the cuts are told in the data itself: the SpecDiff ends with
// a "… N more lines of the diff cut" line (or becomes a note naming the
// spec), the last entry of FilesChanged and NextSteps says how many more
// there are ("… and K more"), Done summaries end with "…" (or are left
// empty), and the output of a Failed step starts with "… N earlier lines
// cut". A custom template thus shows the cuts too.
const DefaultResumeTemplate = `[Resume context] You are resuming phase "{{.Phase}}" of pipeline "{{.Pipeline}}"
{{- if or .Step .Attempt}} ({{with .Step}}step {{.}}{{end}}{{if and .Step .Attempt}}, {{end}}{{with .Attempt}}attempt {{.}}{{end}}){{end}}.
{{- with .Why}}
{{.}}{{else}}{{with .Reason}}
Why: {{.}}.{{end}}{{end}}{{with .Note}} ({{if eq $.Reason "checkpoint"}}your checkpoint note{{else}}note{{end}}: {{oneline .}}){{end}}
{{- with .HumanNotes}}

## Human notes (oldest first)
{{- range .}}
- {{indent 2 .}}
{{- end}}
{{- end}}
{{- with .Failed}}

## What failed in the previous attempt (find and fix the cause; do not just do the same again)
{{- range .}}
- step {{.Step}}: {{if .TimedOut}}timed out{{else}}exit code {{.ExitCode}}{{end}}{{with .Error}}; the agent's error: {{oneline .}}{{end}}
{{- with .Output}}{{"\n"}}{{fence "text" .}}{{end}}
{{- end}}
{{- end}}
{{- with .Done}}

## Done so far
{{- range .}}
- {{.Phase}}{{if .Passed}} (passed{{else}} (this phase so far{{end}}
{{- with .Attempts}}, {{.}} attempt{{if ne . 1}}s{{end}}{{end}}
{{- range .Steps}}; step {{.Name}}: {{if lt .ExitCode 0}}stopped{{else}}exit {{.ExitCode}}{{end}}{{if .TimedOut}}, timed out{{end}}{{end}})
{{- with .Summary}}: {{indent 2 .}}{{end}}
{{- end}}
{{- end}}
{{- with .Skipped}}

## Phases skipped (their when: was false)
{{- range .}}
- {{.Phase}}: when ({{oneline .When}}){{with .Read}}, with {{.}}{{end}}
{{- end}}
{{- end}}
{{- with .FilesChanged}}

## Files changed
{{- range .}}
- {{.}}
{{- end}}
{{- end}}
{{- with .HumanChanges}}

## Changed in the work tree while the session was paused (by a human: read them before going on)
{{- range .}}
- {{.}}
{{- end}}
{{- end}}
{{- with .SpecDiff}}

## What changed in the spec since the pause{{with $.SpecPath}} ({{.}}){{end}}
{{diffblock .}}
{{- end}}
{{- with .SpecFrontmatter}}

## The spec's frontmatter now (it changed; its values apply from this step)
` + "```yaml" + `
{{.}}
` + "```" + `
{{- end}}
{{- with .PinnedFacts}}

## Pinned facts
{{- range .}}
- {{indent 2 .}}
{{- end}}
{{- end}}
{{- with .Decisions}}

## Decisions made so far (oldest first)
{{- range .}}
- {{indent 2 .}}
{{- end}}
{{- end}}
{{- with .OpenTasks}}

## Open tasks (when you finish one, print a line that starts with the DONE marker and the task)
{{- range .}}
- {{indent 2 .}}
{{- end}}
{{- end}}
{{- with .RecentOutput}}

## The end of the previous conversation
{{fence "text" .}}
{{- end}}
{{- with .NextSteps}}

## Next steps
{{- range .}}
- {{indent 2 .}}
{{- end}}
{{- end}}
`

// RenderResumeContext renders tmpl (DefaultResumeTemplate when "") with in
// and keeps the result within budget tokens as counted by count (the
// caller passes tokens.Count; a nil count is taken as one token per
// four bytes). A budget of 0 or less means no limit.
//
// Over budget, the input is cut in this order until the text fits (what
// the agent can find again elsewhere goes first, what only the working
// set knows goes last):
//
//  1. the spec diff (its first lines are kept, then it is replaced by a
//     note naming the spec);
//  2. the recent output of a compacted conversation (its last lines are
//     kept);
//  3. the list of changed files (its first entries are kept);
//  4. the Done summaries (shortened, then left out);
//  5. the output of the steps that failed (their last lines are kept);
//  6. the next steps (the first ones are kept);
//  7. the decisions (the newest are kept);
//  8. the pinned facts (the first are kept: the project's, then those a
//     human pinned, then the agent's);
//  9. the open tasks (the oldest are kept).
//
// Each cut is a binary search over its size, so a call renders the
// template a few dozen times at most. The header and the human notes are
// never cut by those; should the text still be over budget, it is
// truncated to the budget and ends with a marker.
//
// A template that fails to parse or to execute is an error.
func RenderResumeContext(tmpl string, in ResumeInput, budget int, count func(string) int) (string, error) {
	if tmpl == "" {
		tmpl = DefaultResumeTemplate
	}
	if count == nil {
		count = func(s string) int { return (len(s) + 3) / 4 }
	}
	r := &rctxRender{in: in}
	r.diffLines = rctxDiffLines(in.SpecDiff)
	spec := in.SpecPath
	if spec == "" {
		spec = "the spec file"
	}
	r.diffNote = fmt.Sprintf("The spec changed since the pause (its diff, %d lines, was cut to fit): read %s.", len(r.diffLines), spec)
	r.diffMore = "… %d more lines of the diff cut: read " + spec + " for the whole text"
	t, err := template.New("resume_context").Funcs(r.funcs()).Parse(tmpl)
	if err != nil {
		return "", fmt.Errorf("resume_context template: %w", err)
	}
	r.tmpl = t

	// The levels of each cut, from the full input (no cut) down to 0.
	r.outputLines = rctxDiffLines(in.RecentOutput)
	failedMax := 0
	for _, f := range in.Failed {
		lines := rctxDiffLines(f.Output)
		r.failedLines = append(r.failedLines, lines)
		failedMax = max(failedMax, len(lines))
	}
	r.full = rctxLevels{
		failed:    failedMax,
		diff:      len(r.diffLines),
		output:    len(r.outputLines),
		files:     max(len(in.FilesChanged), len(in.HumanChanges)),
		summary:   0,
		next:      len(in.NextSteps),
		decisions: len(in.Decisions),
		facts:     len(in.PinnedFacts),
		tasks:     len(in.OpenTasks),
	}
	for _, d := range in.Done {
		r.full.summary = max(r.full.summary, utf8.RuneCountInString(d.Summary))
	}
	lv := r.full
	text, err := r.render(lv)
	if err != nil || budget <= 0 || count(text) <= budget {
		return text, err
	}

	// Each cut in turn: when cutting it entirely fits, binary-search the
	// largest level that fits and stop; otherwise cut it entirely and go
	// on with the next.
	cuts := []*int{&lv.diff, &lv.output, &lv.files, &lv.summary, &lv.failed, &lv.next, &lv.decisions, &lv.facts, &lv.tasks}
	maxima := []int{r.full.diff, r.full.output, r.full.files, r.full.summary, r.full.failed, r.full.next, r.full.decisions, r.full.facts, r.full.tasks}
	for i, level := range cuts {
		if maxima[i] == 0 {
			continue
		}
		*level = 0
		text, err = r.render(lv)
		if err != nil {
			return "", err
		}
		if count(text) > budget {
			continue
		}
		// text (level 0) fits: find the largest level that fits too.
		lo, hi := 0, maxima[i] // fits(lo) is known; fits(maxima) is not
		best := text
		for lo < hi {
			mid := lo + (hi-lo+1)/2
			*level = mid
			t, err := r.render(lv)
			if err != nil {
				return "", err
			}
			if count(t) <= budget {
				lo, best = mid, t
			} else {
				hi = mid - 1
			}
		}
		return best, nil
	}
	return rctxTruncate(text, budget, count), nil
}

// SpecDiff returns a unified diff (3 lines of context, headers "a/<name>"
// and "b/<name>") of a spec from before to after, or "" when they are
// equal. A last line without a "\n" gets diff(1)'s "\ No newline at end
// of file" marker, so that texts differing only there still differ.
func SpecDiff(name, before, after string) string {
	if before == after {
		return ""
	}
	return textdiff.Unified("a/"+name, "b/"+name, before, after)
}

// rctxLevels is how much of each cuttable part is kept: the number of
// diff lines, of recent output lines, of files, of next steps, of
// decisions, facts and tasks, of the last output lines of each failed
// step, and the length of Done summaries in runes.
type rctxLevels struct {
	diff, output, files, summary, failed, next, decisions, facts, tasks int
}

type rctxRender struct {
	in        ResumeInput
	tmpl      *template.Template
	full      rctxLevels
	diffLines []string
	// outputLines are the RecentOutput's lines; failedLines those of
	// each Failed step's output.
	outputLines []string
	failedLines [][]string
	diffNote    string // the SpecDiff when cut entirely
	diffMore    string // the format of the last line of a cut SpecDiff
}

func (r *rctxRender) render(lv rctxLevels) (string, error) {
	in := r.in
	if lv.diff < r.full.diff {
		if lv.diff == 0 {
			in.SpecDiff = r.diffNote
		} else {
			kept := append(r.diffLines[:lv.diff:lv.diff], fmt.Sprintf(r.diffMore, len(r.diffLines)-lv.diff))
			in.SpecDiff = strings.Join(kept, "\n")
		}
	}
	if lv.files < len(in.FilesChanged) {
		in.FilesChanged = rctxKeep(in.FilesChanged, lv.files, "files")
	}
	if lv.files < len(in.HumanChanges) {
		in.HumanChanges = rctxKeep(in.HumanChanges, lv.files, "files")
	}
	if lv.next < r.full.next {
		in.NextSteps = rctxKeep(in.NextSteps, lv.next, "steps")
	}
	if lv.output < r.full.output {
		in.RecentOutput = ""
		if lv.output > 0 {
			kept := r.outputLines[len(r.outputLines)-lv.output:]
			in.RecentOutput = fmt.Sprintf("… %d earlier lines cut\n", len(r.outputLines)-lv.output) + strings.Join(kept, "\n")
		}
	}
	if lv.failed < r.full.failed {
		failed := make([]StepFailure, len(in.Failed))
		for i, f := range in.Failed {
			if lines := r.failedLines[i]; len(lines) > lv.failed {
				f.Output = ""
				if lv.failed > 0 {
					f.Output = fmt.Sprintf("… %d earlier lines cut\n", len(lines)-lv.failed) + strings.Join(lines[len(lines)-lv.failed:], "\n")
				}
			}
			failed[i] = f
		}
		in.Failed = failed
	}
	if lv.decisions < r.full.decisions {
		in.Decisions = rctxKeepLast(in.Decisions, lv.decisions, "decisions", "pipeline memory")
	}
	if lv.facts < r.full.facts {
		in.PinnedFacts = rctxKeep(in.PinnedFacts, lv.facts, "facts")
	}
	if lv.tasks < r.full.tasks {
		in.OpenTasks = rctxKeep(in.OpenTasks, lv.tasks, "tasks")
	}
	if lv.summary < r.full.summary {
		done := make([]DoneItem, len(in.Done))
		for i, d := range in.Done {
			d.Summary = rctxShorten(d.Summary, lv.summary)
			done[i] = d
		}
		in.Done = done
	}
	var b strings.Builder
	if err := r.tmpl.Execute(&b, in); err != nil {
		return "", fmt.Errorf("resume_context template: %w", err)
	}
	return strings.TrimSpace(b.String()), nil
}

// funcs are spec.ResumeTemplateFuncs, the ones a template is checked
// with, with a diffblock that shows the note replacing a cut diff as text.
func (r *rctxRender) funcs() template.FuncMap {
	funcs := spec.ResumeTemplateFuncs()
	funcs["diffblock"] = func(s string) string {
		if s == r.diffNote {
			return s
		}
		return spec.Fence("diff", s)
	}
	return funcs
}

// rctxDiffLines is the lines of a diff, without a final empty one.
func rctxDiffLines(diff string) []string {
	diff = strings.TrimRight(diff, "\n")
	if diff == "" {
		return nil
	}
	return strings.Split(diff, "\n")
}

// rctxKeep keeps the first n entries of list and says how many were cut.
func rctxKeep(list []string, n int, what string) []string {
	cut := len(list) - n
	if cut == 1 {
		what = strings.TrimSuffix(what, "s")
	}
	if n == 0 {
		return []string{fmt.Sprintf("… %d %s (the list was cut to fit)", cut, what)}
	}
	return append(list[:n:n], fmt.Sprintf("… and %d more", cut))
}

// rctxKeepLast keeps the last n entries of list and says how many
// earlier ones were cut, and where to read them.
func rctxKeepLast(list []string, n int, what, where string) []string {
	cut := len(list) - n
	if cut == 1 {
		what = strings.TrimSuffix(what, "s")
	}
	note := fmt.Sprintf("… %d earlier %s cut to fit (%s lists them all)", cut, what, where)
	return append([]string{note}, list[cut:]...)
}

// rctxShorten keeps the first n runes of s, ending with "…" when it cut.
func rctxShorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n == 0 {
		return ""
	}
	i := 0
	for range n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return strings.TrimRight(s[:i], " \t\r\n") + "…"
}

// rctxTruncate cuts text to at most budget tokens, ending with a marker
// when the marker fits. It binary-searches the length of the prefix, and
// returns only texts it has counted within the budget (or "").
func rctxTruncate(text string, budget int, count func(string) int) string {
	marker := fmt.Sprintf("\n… [resume context truncated to %d tokens]", budget)
	if count(marker) > budget {
		marker = ""
	}
	runes := []rune(text)
	fits := func(n int) (string, bool) {
		s := string(runes[:n]) + marker
		return s, count(s) <= budget
	}
	best, ok := fits(0)
	if !ok {
		return "" // no text at all is the least any counter reports
	}
	lo, hi := 0, len(runes)
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if s, ok := fits(mid); ok {
			lo, best = mid, s
		} else {
			hi = mid - 1
		}
	}
	// End at a line break when one is near.
	for n := lo - 1; n > 0 && n >= lo-120; n-- {
		if runes[n] == '\n' {
			if s, ok := fits(n); ok {
				best = s
			}
			break
		}
	}
	return best
}

// ResumeWhy says why the agent step a starts with a resume context, in
// the words of what happened: the reason as status names it ("checkpoint",
// "phase-complete", "runner-died", "restart: context"), a sentence for the
// agent, and the note that came with it (a checkpoint note, a pause's
// note).
func ResumeWhy(plan *spec.Plan, s State, a StartStep) (reason, why, note string) {
	if r := a.Resuming; r != nil {
		reason, why, note = pauseWhy(r.Firing)
		if r.JumpedTo != "" && r.JumpedTo != r.Phase {
			why += fmt.Sprintf(" It was resumed with --phase %s: the session stood at phase %q and goes on at phase %q; the phases between were not run.", r.JumpedTo, r.Phase, r.JumpedTo)
		}
		return reason, why, note
	}
	// Otherwise a restart policy, a lost native session or a new agent
	// owes the context: the latest firing says which (a restart after a
	// phase's last step is recorded in that phase).
	for i := min(a.Phase, len(s.Phases)-1); i >= 0; i-- {
		fired := s.Phases[i].Fired
		if len(fired) == 0 {
			continue
		}
		last := fired[len(fired)-1]
		switch {
		case last.Reason == ReasonSessionLost:
			return "restart: " + last.Reason, "The agent's native session could not be resumed (the CLI no longer has it): this is a fresh session.", ""
		case last.Reason == ReasonAgentChanged:
			return "restart: " + last.Reason, "The phase's agent changed since its native session was made: this is a fresh session.", last.Note
		case last.Reason == ReasonWhen && s.Phases[i].Status == StatusSkipped:
			return "skipped: " + s.Phases[i].Name, fmt.Sprintf("Phase %q was skipped: its when (%s) was false. Go on with this phase.", s.Phases[i].Name, last.Expression), ""
		case i < len(plan.Phases) && slices.ContainsFunc(plan.Phases[i].RestartWhen, func(t spec.TriggerPlan) bool { return t.Name == last.Reason }):
			return "restart: " + last.Reason, fmt.Sprintf("The restart policy %q (%s) dropped the agent's native session: this is a fresh session.", last.Reason, last.Expression), last.Note
		}
		break
	}
	return "continued", "The session was continued after it stopped.", ""
}

// pauseWhy words the pause (or the runner's death) a session was resumed
// from.
func pauseWhy(f Firing) (reason, why, note string) {
	reason, note = f.Reason, f.Note
	switch f.Reason {
	case "":
		return "paused", "The session was paused, and a human resumed it.", note
	case ReasonRunnerDied:
		return reason, "The runner stopped without pausing (killed or crashed) while this step ran; the step runs again.", note
	case ResumedFromFailure:
		return reason, "The session failed, and a human resumed it: the step that failed runs again, as a new attempt.", note
	case ReasonPhaseComplete:
		return reason, "The previous phase was done and the session paused for a review before this one (auto_advance: false); a human resumed it.", note
	case ReasonNeedsHuman:
		what := "The session paused for a human"
		if f.Expression != "" {
			what += fmt.Sprintf(" (%s was true)", f.Expression)
		}
		return reason, what + ", who has looked and resumed it.", note
	case ReasonHuman:
		return reason, "A human paused the session (pipeline pause) and resumed it.", note
	case ReasonInterrupted:
		return reason, "The run was interrupted (Ctrl+C, a signal, or its output was closed) and paused; it was resumed.", note
	case ReasonRateLimit:
		return reason, "The agent's vendor refused requests for a while (a rate limit); the session paused and was resumed.", note
	case ReasonExpressionError:
		return reason, "An expression of the pipeline failed to evaluate and the session paused; it was resumed.", note
	case ReasonCompaction:
		what := "Your conversation was compacted"
		if f.Expression != "" {
			what += fmt.Sprintf(" (compact_when %s was true)", f.Expression)
		}
		return reason, what + ": this is a fresh session. The working set below (pinned facts, decisions, open tasks) and the end of the previous conversation are what it left you.", note
	case ReasonStoreError:
		return reason, "The session could not be recorded (a full disk, an I/O error) and paused; it was resumed.", note
	case ReasonRewound:
		return reason, "A human rewound the work tree to the checkpoint before this phase (pipeline rewind): the files are as they were when the phase started, what this phase and those after it did is undone, and the phase runs again.", note
	case ReasonConflicts:
		return reason, "The work tree had conflict markers when the session was resumed, and it waited for a human to resolve them; they were, and the session was resumed.", note
	case ReasonOutOfScope:
		return reason, "The step changed files outside the phase's writes globs, and the session paused for a human, who has looked and resumed it: change only the files this phase may write.", note
	case ReasonRetry:
		what := "Your previous attempt at this step failed, and the retry policy"
		if f.Expression != "" {
			what += fmt.Sprintf(" (retry.when %s)", f.Expression)
		}
		// The note is the first line of what failed, said in full below.
		return reason, what + " runs it again as a new attempt: what failed is below.", ""
	case ReasonNotDone:
		return reason, fmt.Sprintf("The phase's done_when (%s) was false after its steps, so the phase runs again as a new attempt (a step that failed is said below).", f.Expression), ""
	}
	if f.Values["checkpoint"] == true || f.Reason == "checkpoint" {
		return reason, fmt.Sprintf("You printed the checkpoint marker, and the session paused there (pause_when %q); it was resumed.", f.Reason), note
	}
	what := fmt.Sprintf("The session paused when pause_when %q fired", f.Reason)
	if f.Expression != "" && f.Expression != f.Reason {
		what += fmt.Sprintf(" (%s)", f.Expression)
	}
	return reason, what + "; it was resumed.", note
}

// ProjectFactsHeader starts the project's facts in the first prompt of a
// fresh conversation (see RenderProjectFacts).
const ProjectFactsHeader = "## Project facts (pinned for every session of this project)"

// MaxBytesPerToken bounds what a text can be worth in tokens before it
// is counted: no tokenizer we count with averages more bytes per token
// over a text. A text over budget×MaxBytesPerToken bytes is over budget
// whatever it says, so it is cut before counting, which costs time in
// its length (a 60 MB project memory took 18 s).
const MaxBytesPerToken = 32

// RenderProjectFacts renders the project's pinned facts as the first
// prompt of a fresh conversation gets them (one line each, after
// ProjectFactsHeader), within budget tokens as count counts them: the
// resume context's budget and cut order (the first facts are kept; the
// last line says how many more there are, and where to read them). A
// budget of 0 or less means no limit; a nil count is one token per four
// bytes. It returns "" for no facts, or when not even the header fits.
func RenderProjectFacts(facts []string, budget int, count func(string) int) string {
	if len(facts) == 0 {
		return ""
	}
	if count == nil {
		count = func(s string) int { return (len(s) + 3) / 4 }
	}
	lines := make([]string, len(facts))
	for i, f := range facts {
		lines[i] = "\n- " + clipText(strings.Join(strings.Fields(f), " "))
	}
	render := func(n int) string {
		var b strings.Builder
		b.WriteString(ProjectFactsHeader)
		for _, l := range lines[:n] {
			b.WriteString(l)
		}
		if more := len(lines) - n; more > 0 {
			fmt.Fprintf(&b, "\n- … and %d more (pipeline memory --project lists them)", more)
		}
		return b.String()
	}
	if budget <= 0 {
		return render(len(lines))
	}
	// The facts past what the budget could hold are cut uncounted.
	n, size := 0, len(ProjectFactsHeader)
	for n < len(lines) && size+len(lines[n]) <= budget*MaxBytesPerToken {
		size += len(lines[n])
		n++
	}
	if text := render(n); count(text) <= budget {
		return text
	}
	if count(render(0)) > budget {
		return ""
	}
	lo, hi := 0, n // render(lo) fits; render(hi) does not
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if count(render(mid)) <= budget {
			lo = mid
		} else {
			hi = mid
		}
	}
	return render(lo)
}
