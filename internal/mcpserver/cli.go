package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/pipeline-dev/pipeline/app"
)

// runnerFailed is the error of a runner that ended without a session:
// the JSON error it printed, or the end of its output.
func runnerFailed(code int, jsonPath, logPath string) error {
	content, _ := os.ReadFile(jsonPath)
	var e app.ErrorReport
	if json.Unmarshal(content, &e) == nil && e.Error != "" {
		return errors.New(describeReport(e, ""))
	}
	text, _ := os.ReadFile(logPath)
	return fmt.Errorf("the runner ended with exit code %d (%s) before it held a session: %s", code, exitMeaning(code), lastLines(string(text), 20))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
