package cireport

import (
	"fmt"
	"io"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/atomicfile"
	"github.com/pipeline-dev/pipeline/internal/termview"
)

// Run is a run that ended, as a CI job reads it.
type Run struct {
	Plan   *spec.Plan
	State  engine.State
	Report engine.StatusReport
	// Transcripts is the session's transcripts folder; Text makes what
	// is shown safe (redacted, escapes removed).
	Transcripts string
	Text        termview.ScreenText
	// ResumeLine is the command that resumes the session; FailOnPause, a
	// pause exits 1; JUnit, where the JUnit report goes ("": none).
	ResumeLine  string
	FailOnPause bool
	JUnit       string
	// Warn writes a warning made safe for a terminal.
	Warn func(w io.Writer, text string)
}

// Leave leaves what a CI job reads of a run that ended (paused, failed or
// completed): in CI mode the annotation that says why it stopped (on
// out, after the view's last line); the job summary and the step outputs
// when $GITHUB_STEP_SUMMARY and $GITHUB_OUTPUT are set; the JUnit report
// with r.JUnit. A file that cannot be written is a warning on stderr:
// the exit status is the run's.
func Leave(out, stderr io.Writer, ci Settings, r Run) {
	switch r.State.Status {
	case engine.StatusPaused, engine.StatusFailed, engine.StatusCompleted:
	default:
		return
	}
	if ci.Enabled {
		Annotation(out, ci, r.Plan, r.State, r.ResumeLine, r.FailOnPause, r.Text)
	}
	summary := append(Markdown(r.Report, r.Text.Line), FailureTail(r.Plan, r.State, r.Transcripts, r.Text.Line)...)
	AppendEnvFile(stderr, "GITHUB_STEP_SUMMARY", summary)
	AppendEnvFile(stderr, "GITHUB_OUTPUT", GitHubOutputs(r.Report, r.Text))
	if r.JUnit == "" {
		return
	}
	report, err := JUnit(r.Plan, r.State, r.Report, r.Transcripts, r.Text)
	if err == nil {
		err = atomicfile.Write(r.JUnit, 0o644, func(w io.Writer) error {
			_, err := w.Write(report)
			return err
		})
	}
	if err != nil {
		r.Warn(stderr, fmt.Sprintf("pipeline: warning: --junit %s: %v\n", r.JUnit, err))
	}
}
