package cireport

import (
	"fmt"
	"io"
	"os"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/termview"
)

// stopPlace says where a run stopped: the phase, and the place in the
// files of the trigger or policy that stopped it (the phase's own place
// when that was a built-in default, or no trigger at all).
type stopPlace struct {
	phase int
	at    spec.Position
	what  string // "trigger review", "retry.escalate_when", …
}

// whereStopped finds the trigger that paused s, or the step that failed.
func whereStopped(plan *spec.Plan, s engine.State) stopPlace {
	p := stopPlace{phase: min(s.Phase, len(plan.Phases)-1)}
	if s.Status == engine.StatusPaused && s.Pause != nil && s.Pause.Reason == engine.ReasonPhaseComplete && p.phase > 0 &&
		s.Phase < len(s.Phases) && s.Phases[s.Phase].Status == "" {
		// The gate is the phase that completed; the state is at the next.
		p.phase--
	}
	if p.phase < 0 {
		return p
	}
	phase := &plan.Phases[p.phase]
	place := func(what string, from spec.Origin, at spec.Position) {
		if at.Line == 0 {
			at = from.Position
		}
		if from.Layer == spec.LayerDefault || from.Layer == spec.LayerFlag || at.Line == 0 {
			p.what, p.at = what+" (built-in), in phase "+phase.Name, phase.From.Position
			return
		}
		p.what, p.at = what, at
	}
	switch {
	case s.Status == engine.StatusFailed:
		if s.Step < len(phase.Steps) {
			place("step "+phase.Steps[s.Step].Name, phase.Steps[s.Step].From, spec.Position{})
		}
	case s.Pause == nil:
	case s.Pause.Reason == engine.ReasonNeedsHuman:
		when := phase.Retry.EscalateWhen
		var at spec.Position
		if when.Value != nil {
			at = when.Value.At
		}
		place("retry.escalate_when", when.From, at)
	case s.Pause.Reason == engine.ReasonPhaseComplete:
		place("auto_advance", phase.AutoAdvance.From, spec.Position{})
	default:
		for _, t := range phase.PauseWhen {
			if t.Name == s.Pause.Reason && t.Expr != nil && t.Expr.Source == s.Pause.Expression {
				place("pause_when."+t.Name, t.From, t.Expr.At)
				return p
			}
		}
	}
	if p.at.Line == 0 {
		p.at = phase.From.Position
	}
	return p
}

// Annotation says why a run stopped, for the CI's log: a GitHub workflow
// command (an error, warning or notice on the run's page, at the place in
// phases.yaml), or elsewhere a marked line. Nothing for a completed run.
// Annotation: resume is the command that continues the session.
func Annotation(w io.Writer, ci Settings, plan *spec.Plan, s engine.State, resume string, failOnPause bool, text termview.ScreenText) {
	if s.Status != engine.StatusPaused && s.Status != engine.StatusFailed {
		return
	}
	place := whereStopped(plan, s)
	phaseName := ""
	if place.phase >= 0 {
		phaseName = plan.Phases[place.phase].Name
	}
	level := "error"
	var title, message string
	if s.Status == engine.StatusFailed {
		title = fmt.Sprintf("phase %s failed", phaseName)
		message = s.FailReason
	} else {
		title = fmt.Sprintf("paused in phase %s", phaseName)
		message = local.DescribeFiring(*s.Pause) + "; continue with: " + resume
		switch {
		case failOnPause:
			message += " (--fail-on-pause)"
		case s.Pause.Reason == engine.ReasonPhaseComplete || s.Pause.Reason == "checkpoint":
			level = "notice"
		default:
			level = "warning"
		}
	}
	if place.what != "" {
		message += " [" + place.what + "]"
	}
	message = text.Line(message)
	if runes := []rune(message); len(runes) > 4000 {
		message = string(runes[:4000]) + "…"
	}
	file := ciPath(place.at.File)
	if ci.Platform == GitHub {
		props := "file=" + githubProperty(file)
		if place.at.Line > 0 {
			props += fmt.Sprintf(",line=%d,col=%d", place.at.Line, place.at.Column)
		}
		fmt.Fprintf(w, "::%s %s,title=%s::%s\n", level, props, githubProperty(text.Line("pipeline: "+title)), githubData(message))
		return
	}
	where := file
	if place.at.Line > 0 {
		where = fmt.Sprintf("%s:%d:%d", file, place.at.Line, place.at.Column)
	}
	// GitLab has no annotations: a line that stands out in the job log.
	label := fmt.Sprintf("[pipeline %s]", level)
	if ci.Platform == GitLab && os.Getenv("NO_COLOR") == "" {
		colour := map[string]string{"error": "31", "warning": "33", "notice": "36"}[level]
		label = "\x1b[1;" + colour + "m" + label + "\x1b[0m"
	}
	fmt.Fprintf(w, "%s %s: %s: %s\n", label, text.Line(where), text.Line(title), message)
}
