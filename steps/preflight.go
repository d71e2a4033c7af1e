package steps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pipeline-dev/pipeline/internal/lazy"
)

// CLI is what pipeline doctor knows of an agent CLI: its program, the
// oldest version the adapter works with, where it is installed from, and
// how it finds its credentials.
type CLI struct {
	Kind    string `json:"kind"`
	Program string `json:"program"`
	// Minimum is the oldest version the adapter is known to work with: the
	// one its output parsing and resume handling were written and tested
	// against (scripts/install-agent-clis.sh pins it).
	Minimum string `json:"minimum"`
	Package string `json:"package"`
	// KeyVars are environment variables that hold its credentials;
	// LoginFiles, relative to HOME (or to the folder the first variable
	// of ConfigVars names), files its own login leaves.
	KeyVars    []string `json:"-"`
	ConfigVars []string `json:"-"`
	LoginFiles []string `json:"-"`
}

// CLIFor returns the CLI of an agent kind; false for kind command, which
// runs any program.
func CLIFor(kind string) (CLI, bool) {
	switch kind {
	case "claude":
		// 2.1.332: model_usage_since_last_result (the cost of a resumed
		// turn) and the "No conversation found" of a lost session.
		return CLI{Kind: kind, Program: "claude", Minimum: "2.1.332", Package: "@anthropic-ai/claude-code",
			KeyVars: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"}, ConfigVars: []string{"CLAUDE_CONFIG_DIR"},
			LoginFiles: []string{".claude/.credentials.json"}}, true
	case "gemini":
		// 0.61.0: --skip-trust, and stream-json's result stats.
		return CLI{Kind: kind, Program: "gemini", Minimum: "0.61.0", Package: "@google/gemini-cli",
			KeyVars:    []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS"},
			LoginFiles: []string{".gemini/oauth_creds.json"}}, true
	case "codex":
		// 0.169.0: exec --json's events and exec resume.
		return CLI{Kind: kind, Program: "codex", Minimum: "0.169.0", Package: "@openai/codex",
			KeyVars: []string{"OPENAI_API_KEY", "CODEX_API_KEY"}, ConfigVars: []string{"CODEX_HOME"},
			LoginFiles: []string{".codex/auth.json"}}, true
	}
	return CLI{}, false
}

// CLICheck is what pipeline doctor found of one agent CLI. It never holds
// a secret: credentials are named, not shown.
type CLICheck struct {
	CLI
	// Path is where the program was found; "" when it was not.
	Path    string `json:"path,omitempty"`
	Version string `json:"version,omitempty"`
	// Status: ok, missing, too-old, unknown-version (it ran, but said no
	// version pipeline could read) or broken (--version failed).
	Status string `json:"status"`
	// Credentials names the variables set and login files found.
	Credentials []string `json:"credentials"`
	Problem     string   `json:"problem,omitempty"`
	Hint        string   `json:"hint,omitempty"`
}

// Check statuses.
const (
	CheckOK             = "ok"
	CheckMissing        = "missing"
	CheckTooOld         = "too-old"
	CheckUnknownVersion = "unknown-version"
	CheckBroken         = "broken"
)

// OK reports whether the CLI can run a step.
func (c CLICheck) OK() bool { return c.Status == CheckOK || c.Status == CheckUnknownVersion }

var versionPattern = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`\d+\.\d+\.\d+`) }}

// CheckCLI looks for cli on PATH, asks it its version (--version, at most
// 10s), compares it with the minimum, and looks for its credentials in
// env (this process's environment and the agent's env:) and its login
// files.
func CheckCLI(ctx context.Context, cli CLI, env map[string]string) CLICheck {
	c := CLICheck{CLI: cli, Credentials: []string{}}
	path, err := exec.LookPath(cli.Program)
	if err != nil {
		c.Status = CheckMissing
		c.Problem = fmt.Sprintf("%q was not found on PATH (PATH=%s)", cli.Program, os.Getenv("PATH"))
		c.Hint = fmt.Sprintf("install it: npm install -g %s@%s (or newer), or put its folder on PATH", cli.Package, cli.Minimum)
		return c
	}
	c.Path = path
	c.Credentials = credentials(cli, env)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && len(exit.Stderr) > 0 {
			err = fmt.Errorf("%v: %s", err, firstLine(string(exit.Stderr)))
		}
		c.Status, c.Problem = CheckBroken, fmt.Sprintf("%s --version failed: %v", path, err)
		c.Hint = fmt.Sprintf("reinstall it: npm install -g %s@%s (or newer)", cli.Package, cli.Minimum)
		return c
	}
	c.Version = versionPattern.Get().FindString(string(out))
	switch {
	case c.Version == "":
		c.Status = CheckUnknownVersion
		c.Problem = fmt.Sprintf("%s --version said %q: no version to compare with %s", path, firstLine(string(out)), cli.Minimum)
	case compareVersions(c.Version, cli.Minimum) < 0:
		c.Status = CheckTooOld
		c.Problem = fmt.Sprintf("%s is version %s; the %s adapter needs %s or newer", path, c.Version, cli.Kind, cli.Minimum)
		c.Hint = fmt.Sprintf("upgrade it: npm install -g %s@%s (or newer)", cli.Package, cli.Minimum)
	default:
		c.Status = CheckOK
	}
	return c
}

// credentials names the key variables set (in env, then this process's
// environment) and the login files present.
func credentials(cli CLI, env map[string]string) []string {
	found := []string{}
	for _, name := range cli.KeyVars {
		if env[name] != "" || os.Getenv(name) != "" {
			found = append(found, name)
		}
	}
	home, _ := os.UserHomeDir()
	for _, file := range cli.LoginFiles {
		dir := home
		if len(cli.ConfigVars) > 0 {
			if config := os.Getenv(cli.ConfigVars[0]); config != "" {
				// CLAUDE_CONFIG_DIR and CODEX_HOME stand for the folder
				// the file is in.
				dir, file = config, filepath.Base(file)
			}
		}
		if dir == "" {
			continue
		}
		path := filepath.Join(dir, file)
		if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
			found = append(found, path)
		}
	}
	return found
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// compareVersions compares dotted versions number by number.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(as), len(bs)) {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return map[bool]int{true: -1, false: 1}[x < y]
		}
	}
	return 0
}
