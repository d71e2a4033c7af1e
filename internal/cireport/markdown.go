package cireport

import (
	"fmt"
	"strings"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/internal/lazy"
)

// Markdown is a session as a markdown table of its phases: what
// pipeline status --output markdown prints, and what a run appends to
// GitHub's job summary ($GITHUB_STEP_SUMMARY). safe makes a value from
// outside safe to show (redacted, one line, no control characters); it is
// then escaped for markdown, so that a name or a note cannot end a cell,
// start a link or write HTML.
func Markdown(r engine.StatusReport, safe func(string) string) []byte {
	cell := func(s string) string { return markdownText(safe(s), 200) }
	var b strings.Builder
	fmt.Fprintf(&b, "### pipeline %s: %s\n\n", cell(r.Pipeline), cell(r.Status))
	fmt.Fprintf(&b, "Session `%s` · phase %s · %d tokens · $%.4f · %s\n\n", strings.ReplaceAll(safe(r.ID), "`", ""),
		cell(r.Phase), r.Tokens, r.CostUSD, cell(r.Elapsed))
	switch {
	case r.PauseReason != "":
		fmt.Fprintf(&b, "**Paused:** %s\n\n", cell(pauseText(r)))
	case r.FailReason != "":
		fmt.Fprintf(&b, "**Failed:** %s\n\n", markdownText(safe(r.FailReason), 1000))
	}
	b.WriteString("| Phase | Status | Attempts | Duration | Tokens | Cost | Triggers fired | Pause reason |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | --- | --- |\n")
	for _, p := range r.Phases {
		reason := ""
		if r.PauseReason != "" && p.Name == r.Phase {
			reason = pauseText(r)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %d | $%.4f | %s | %s |\n", cell(p.Name), cell(p.Status), p.Attempts,
			cell(p.Duration), p.Tokens, p.CostUSD, cell(firedList(p.Fired)), cell(reason))
	}
	b.WriteString("\n")
	return []byte(b.String())
}

// pauseText is a paused session's reason and note.
func pauseText(r engine.StatusReport) string {
	if r.PauseNote == "" {
		return r.PauseReason
	}
	return r.PauseReason + ": " + r.PauseNote
}

// firedList names the triggers that fired in a phase, each once, with how
// many times when more than once: "tokens ×2, checkpoint".
func firedList(fired []engine.Firing) string {
	var names []string
	count := map[string]int{}
	for _, f := range fired {
		if count[f.Reason] == 0 {
			names = append(names, f.Reason)
		}
		count[f.Reason]++
	}
	for i, name := range names {
		if n := count[name]; n > 1 {
			names[i] = fmt.Sprintf("%s ×%d", name, n)
		}
	}
	return strings.Join(names, ", ")
}

// markdownEscapes escapes what markdown (GitHub's) would read as more than
// text in a table cell: a cell's end, emphasis, code, links and images,
// strike-through, HTML and entities.
var markdownEscapes = lazy.Value[*strings.Replacer]{New: func() *strings.Replacer {
	return strings.NewReplacer(
		`\`, `\\`, "|", `\|`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "~", `\~`,
		"<", "&lt;", ">", "&gt;", "&", "&amp;",
	)
}}

// markdownText is one line of text made inert for markdown, cut to at
// most limit characters.
func markdownText(s string, limit int) string {
	s = strings.NewReplacer("\n", " ", "\r", " ").Replace(s)
	if runes := []rune(s); len(runes) > limit {
		s = string(runes[:limit]) + "…"
	}
	return markdownEscapes.Get().Replace(s)
}
