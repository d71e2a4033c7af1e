package cireport

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/internal/termsafe"
	"github.com/pipeline-dev/pipeline/internal/termview"
)

// AppendEnvFile appends content to the file an environment variable
// names, when it is set, in one write: GitHub gives each step such files
// ($GITHUB_STEP_SUMMARY, $GITHUB_OUTPUT) and other steps may have written
// to them. One that cannot be written is a warning: the run itself went
// as its exit status says.
func AppendEnvFile(stderr io.Writer, variable string, content []byte) {
	path := os.Getenv(variable)
	if path == "" || len(content) == 0 {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		_, err = f.Write(content)
		if closeErr := f.Close(); err == nil {
			err = closeErr
		}
	}
	if err != nil {
		// Redacted and filtered as every line pipeline writes of its own.
		fmt.Fprintln(stderr, termview.NewScreenText().Line(fmt.Sprintf("pipeline: warning: $%s: %v", variable, err)))
	}
}

// GitHubOutputs are the step outputs a run leaves in $GITHUB_OUTPUT:
// session_id, status, phase, pause_reason and pause_note (empty unless
// paused). A value from outside (a name, a reason, a note) is written in
// the delimiter form, name<<DELIMITER, whose delimiter is random and not
// in the value; it may hold line breaks.
func GitHubOutputs(r engine.StatusReport, text termview.ScreenText) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "session_id=%s\nstatus=%s\n", r.ID, r.Status)
	for _, kv := range [][2]string{{"phase", r.Phase}, {"pause_reason", r.PauseReason}, {"pause_note", r.PauseNote}} {
		value := termsafe.Text(text.Redactor.String(kv[1]))
		delimiter := "ghadelimiter_" + randomToken()
		for strings.Contains(value, delimiter) {
			delimiter = "ghadelimiter_" + randomToken()
		}
		fmt.Fprintf(&b, "%s<<%s\n%s\n%s\n", kv[0], delimiter, value, delimiter)
	}
	return []byte(b.String())
}
