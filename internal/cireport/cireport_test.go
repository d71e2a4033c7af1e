package cireport

import (
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/internal/redact"
	"github.com/pipeline-dev/pipeline/internal/termview"
)

// CI mode is CI=true, 1 or yes in any case, or --ci; --ci=false turns it
// off. The platform is read in CI mode only.
func TestCIMode(t *testing.T) {
	yes, no := true, false
	for _, c := range []struct {
		flag     *bool
		env      map[string]string
		enabled  bool
		platform Platform
	}{
		{nil, nil, false, Other},
		{nil, map[string]string{"CI": "true"}, true, Other},
		{nil, map[string]string{"CI": "TRUE"}, true, Other},
		{nil, map[string]string{"CI": "1"}, true, Other},
		{nil, map[string]string{"CI": "Yes"}, true, Other},
		{nil, map[string]string{"CI": " yes "}, true, Other},
		{nil, map[string]string{"CI": "false"}, false, Other},
		{nil, map[string]string{"CI": "0"}, false, Other},
		{nil, map[string]string{"CI": "no"}, false, Other},
		{nil, map[string]string{"CI": "y"}, false, Other},
		{nil, map[string]string{"GITHUB_ACTIONS": "true"}, false, Other},
		{&yes, nil, true, Other},
		{&no, map[string]string{"CI": "true", "GITHUB_ACTIONS": "true"}, false, Other},
		{nil, map[string]string{"CI": "true", "GITHUB_ACTIONS": "true"}, true, GitHub},
		{&yes, map[string]string{"GITHUB_ACTIONS": "true"}, true, GitHub},
		{nil, map[string]string{"CI": "true", "GITLAB_CI": "true"}, true, GitLab},
		{nil, map[string]string{"CI": "true", "GITLAB_CI": "false"}, true, Other},
	} {
		got := Mode(c.flag, func(name string) string { return c.env[name] })
		if got.Enabled != c.enabled || got.Platform != c.platform {
			t.Errorf("flag %v, env %v: %+v, want enabled %v, platform %v", c.flag, c.env, got, c.enabled, c.platform)
		}
	}
}

// Step outputs: a value from outside is written in the delimiter form,
// line breaks and all, and read back as it was.
func TestGitHubOutputsRoundTrip(t *testing.T) {
	r := engine.StatusReport{ID: "20261125-093000123-a1b2c3", Status: "paused", Phase: "review",
		PauseReason: "review", PauseNote: "line one\nline two\nghadelimiter_x\n"}
	content := GitHubOutputs(r, termview.ScreenText{Redactor: redact.New(nil)})
	got := parseOutputs(t, string(content))
	want := map[string]string{"session_id": r.ID, "status": "paused", "phase": "review", "pause_reason": "review",
		"pause_note": "line one\nline two\nghadelimiter_x\n"}
	for name, value := range want {
		if got[name] != value {
			t.Errorf("%s=%q, want %q:\n%s", name, got[name], value, content)
		}
	}
}

// A cell of the summary is text, whatever a name or a note holds.
func TestMarkdownTextIsInert(t *testing.T) {
	for in, want := range map[string]string{
		"plain phase":                          "plain phase",
		"a | b":                                `a \| b`,
		"<img src=x onerror=alert(1)>":         "&lt;img src=x onerror=alert(1)&gt;",
		"[link](http://x) ![i](y)":             `\[link\](http://x) !\[i\](y)`,
		"*bold* _it_ `code` ~~s~~ \\":          "\\*bold\\* \\_it\\_ \\`code\\` \\~\\~s\\~\\~ \\\\",
		"two\nlines":                           "two lines",
		strings.Repeat("x", 250):               strings.Repeat("x", 200) + "…",
		"&amp; stays text":                     "&amp;amp; stays text",
		"##[error]and ::error:: are only text": "##\\[error\\]and ::error:: are only text",
	} {
		if got := markdownText(in, 200); got != want {
			t.Errorf("markdownText(%q) = %q, want %q", in, got, want)
		}
	}
}

// What XML cannot hold, even escaped, is replaced.
func TestXMLText(t *testing.T) {
	if got := xmlText("ok\ttab\nline\r\x00\x1b\ufffe\xff end"); got != "ok\ttab\nline\r\ufffd\ufffd\ufffd\ufffd end" {
		t.Errorf("xmlText: %q", got)
	}
}

// parseOutputs reads a $GITHUB_OUTPUT file as the runner does: name=value
// lines, and name<<DELIMITER … DELIMITER blocks.
func parseOutputs(t *testing.T, content string) map[string]string {
	t.Helper()
	out := map[string]string{}
	lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	for len(lines) > 0 {
		line := lines[0]
		lines = lines[1:]
		name, delimiter, heredoc := strings.Cut(line, "<<")
		if !heredoc || strings.Contains(name, "=") {
			name, value, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("neither name=value nor name<<DELIMITER: %q", line)
			}
			out[name] = value
			continue
		}
		end := 0
		for end < len(lines) && lines[end] != delimiter {
			end++
		}
		if end == len(lines) {
			t.Fatalf("%s has no closing %s:\n%s", name, delimiter, content)
		}
		out[name] = strings.Join(lines[:end], "\n")
		lines = lines[end+1:]
	}
	return out
}
