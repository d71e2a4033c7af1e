package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

// maxOutput bounds what the server reads of one command's output.
const maxOutput = 8 << 20

// cliError is what a command prints under -o json when it fails (main.go's
// errorReport).
type cliError struct {
	Error    string         `json:"error"`
	Code     int            `json:"code"`
	Position *spec.Position `json:"position,omitempty"`
	Problems []spec.Problem `json:"problems,omitempty"`
	Hint     string         `json:"hint,omitempty"`
}

// result is one command's run: its standard output (JSON), the last of
// its standard error, and its exit code.
type result struct {
	stdout []byte
	stderr string
	code   int
}

// capped keeps the first n bytes written to it.
type capped struct {
	b bytes.Buffer
	n int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.n - c.b.Len(); room > 0 {
		c.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// cli runs this binary in dir with args and -o json.
func (s *Server) cli(ctx context.Context, dir string, args ...string) (result, error) {
	// -o json before a "--" that ends the flags.
	at := slices.Index(args, "--")
	if at < 0 {
		at = len(args)
	}
	args = slices.Concat(args[:at], []string{"-o", "json"}, args[at:])
	cmd := exec.CommandContext(ctx, s.binary, args...)
	cmd.Dir = dir
	cmd.Env = s.env
	stdout, stderr := &capped{n: maxOutput}, &capped{n: 64 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	r := result{stdout: stdout.b.Bytes(), stderr: stderr.b.String()}
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		r.code = exitErr.ExitCode()
	case err != nil:
		return r, fmt.Errorf("running %s %s: %w", s.binary, strings.Join(args, " "), err)
	}
	return r, nil
}

// failure is the tool error of a command that failed with a JSON error:
// its message, its hint, and each problem at its place.
func (r result) failure(then string) error {
	var e cliError
	if json.Unmarshal(r.stdout, &e) != nil || e.Error == "" {
		text := strings.TrimSpace(r.stderr)
		if text == "" {
			text = strings.TrimSpace(string(r.stdout))
		}
		return fmt.Errorf("pipeline exited %d: %s%s", r.code, lastLines(text, 20), then)
	}
	var b strings.Builder
	b.WriteString(e.Error)
	for _, p := range e.Problems {
		fmt.Fprintf(&b, "\n%s: %s", p.Position, p.Message)
		if p.Hint != "" {
			b.WriteString(" (" + p.Hint + ")")
		}
	}
	if e.Hint != "" {
		b.WriteString("\nhint: " + e.Hint)
	}
	fmt.Fprintf(&b, "\n(exit code %d: %s)", r.code, exitMeaning(r.code))
	b.WriteString(then)
	return errors.New(b.String())
}

// decode reads the command's JSON into v; a command that failed is the
// tool's error.
func (r result) decode(v any, then string) error {
	if r.code != 0 && r.code != 3 && r.code != 1 {
		return r.failure(then)
	}
	if err := json.Unmarshal(r.stdout, v); err != nil {
		if r.code != 0 {
			return r.failure(then)
		}
		return fmt.Errorf("reading pipeline's JSON: %v: %s", err, lastLines(string(r.stdout), 5))
	}
	return nil
}

// exitMeaning says what an exit code of pipeline means (README, "Exit
// codes").
func exitMeaning(code int) string {
	switch code {
	case 0:
		return "completed"
	case 1:
		return "failed"
	case 2:
		return "usage, spec or environment error; nothing ran"
	case 3:
		return "paused"
	}
	return "unexpected"
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
