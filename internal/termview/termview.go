// Package termview shows a run as it goes, on a terminal or in a log: the
// views that engine/local's driver talks to (local.View, and
// local.WaitView for the back-off countdown and the grace period). Plain
// writes timestamped lines, for CI logs, pipes and files, with a CI
// system's groups (LogMarkers); Live redraws a small block on a terminal;
// Queued runs either on a goroutine of its own. ScreenText makes what
// they show, and what the commands print, safe to show: secrets
// redacted, escape sequences removed (package termsafe).
//
// It is a package of its own so that every surface that shows a run
// draws it the same way: pipeline run and resume, watch, and attach from
// another terminal.
package termview

import (
	"fmt"
	"strings"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/internal/redact"
	"github.com/pipeline-dev/pipeline/internal/termsafe"
)

// The views the driver talks to.
var (
	_ local.View     = (*Plain)(nil)
	_ local.View     = (*Live)(nil)
	_ local.WaitView = (*Live)(nil)
	_ local.View     = (*Queued)(nil)
	_ local.WaitView = (*Queued)(nil)
)

// ScreenText makes what a view shows safe to show: secrets redacted (a
// step's output arrives redacted; a step's command line, a note or an
// error message may not be), then escape sequences removed and control
// characters shown (see package termsafe). Text that the filter changed is
// redacted again: a secret split by an escape sequence is whole once the
// sequence is gone.
type ScreenText struct {
	Redactor *redact.Redactor
}

// environmentRedactor: see redact.Environment.
var environmentRedactor = func() *redact.Redactor { return redact.Environment() }

// NewScreenText redacts with the secrets of this process's environment
// and the key patterns.
func NewScreenText() ScreenText { return ScreenText{Redactor: environmentRedactor()} }

// Line is text made safe as one line.
func (s ScreenText) Line(text string) string {
	text = s.Redactor.String(text)
	if safe := termsafe.Line(text); safe != text {
		return s.Redactor.String(safe)
	}
	return text
}

// Text is text made safe for a terminal, its line breaks kept: a block
// such as a spec error's caret lines.
func (s ScreenText) Text(text string) string {
	text = s.Redactor.String(text)
	if safe := termsafe.Text(text); safe != text {
		return s.Redactor.String(safe)
	}
	return text
}

// WithRedactor makes a view of this package redact with r, a session's
// redactor (which knows the secrets of the plan's agent environments
// too), rather than with the environment's alone. Other views are
// returned as they are.
func WithRedactor(view local.View, r *redact.Redactor) local.View {
	switch v := view.(type) {
	case *Queued:
		WithRedactor(v.inner, r)
	case *Plain:
		v.text.Redactor = r
	case *Live:
		v.text.Redactor = r
	case *TableRow:
		v.table.mu.Lock()
		v.text.Redactor = r
		v.table.mu.Unlock()
	}
	return view
}

// describeResult says how a step ended: "step test exited 1 after 2s ·
// 1200 tokens · $0.0100".
func describeResult(info local.StepInfo, r engine.StepResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "step %s ", info.Step)
	switch {
	case r.Stopped:
		b.WriteString("stopped")
	case r.TimedOut:
		b.WriteString("timed out")
	default:
		fmt.Fprintf(&b, "exited %d", r.ExitCode)
	}
	fmt.Fprintf(&b, " after %s", r.Elapsed.Round(time.Millisecond))
	if r.Tokens > 0 {
		fmt.Fprintf(&b, " · %d tokens", r.Tokens)
	}
	if r.CostUSD > 0 {
		fmt.Fprintf(&b, " · $%.4f", r.CostUSD)
	}
	return b.String()
}
