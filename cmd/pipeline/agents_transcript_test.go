//go:build agentclis

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/internal/mockapi"
)

// logs of a real Claude Code step reads as a conversation: the mock
// answers the prompt with a Bash tool call, Claude Code runs it, and the
// mock answers its result with text. logs shows the call, the first line
// of its result and the text, each on a line of its own, and none of the
// stream-json; --raw shows the stream-json; -o json the items.
func TestLogsRendersAClaudeCodeTurn(t *testing.T) {
	r := newClaudeRun(t, `version: 1
agent: {kind: claude, model: sonnet, args: [--allowedTools, Bash]}
phases:
  - name: review
    prompt: Review the greeting.
`)
	r.mock.SetReplyFunc(func(prompt string) string {
		switch {
		case strings.Contains(prompt, "hello-from-tool"):
			return "The review is drafted: the greeting reads well."
		case strings.Contains(prompt, "Review the greeting."):
			return mockapi.AnthropicToolUse("Bash", map[string]string{"command": "echo hello-from-tool", "description": "say hello"})
		}
		return ""
	})
	r.run(t, 0)

	out := r.pipeline(t, "logs")
	if out.code != 0 {
		t.Fatalf("logs: exit %d\n%s", out.code, out.stderr)
	}
	t.Logf("logs:\n%s", out.stdout)
	lines := strings.Split(out.stdout, "\n")
	for _, want := range []string{"▸ Bash echo hello-from-tool", "  │ hello-from-tool", "The review is drafted: the greeting reads well."} {
		n := 0
		for _, l := range lines {
			if l == want {
				n++
			}
		}
		if n != 1 {
			t.Errorf("logs shows the line %q %d times, want once:\n%s", want, n, out.stdout)
		}
	}
	for _, noise := range []string{"stream_event", "content_block_delta", "session_id", `{"type"`} {
		if strings.Contains(out.stdout, noise) {
			t.Errorf("logs shows %q:\n%s", noise, out.stdout)
		}
	}

	raw := r.pipeline(t, "logs", "--raw")
	if !strings.Contains(raw.stdout, `"type":"stream_event"`) || !strings.Contains(raw.stdout, "content_block_delta") {
		t.Errorf("logs --raw does not show the stream-json:\n%s", raw.stdout)
	}

	asJSON := r.pipeline(t, "logs", "-o", "json")
	var piece struct {
		Transcript string `json:"transcript"`
		Items      []struct {
			Kind string `json:"kind"`
			Tool string `json:"tool"`
			Args string `json:"args"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(asJSON.stdout, "\n", 2)[0]), &piece); err != nil {
		t.Fatalf("logs -o json: %v\n%s", err, asJSON.stdout)
	}
	found := false
	for _, it := range piece.Items {
		found = found || (it.Kind == "tool_call" && it.Tool == "Bash" && it.Args == "echo hello-from-tool")
	}
	if piece.Transcript != "review/1-agent.log" || !found {
		t.Errorf("logs -o json: %+v, want the Bash call among the items of review/1-agent.log", piece)
	}
}
