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

	// search finds what the assistant said once, in its words, and names
	// the tool call a result is in.
	var hits struct {
		Hits []struct {
			Kind    string `json:"kind"`
			Section string `json:"section"`
			File    string `json:"file"`
			Snippet string `json:"snippet"`
			Turn    int    `json:"turn"`
			Call    int    `json:"call"`
			Tool    string `json:"tool"`
		} `json:"hits"`
	}
	said := r.pipeline(t, "search", "greeting reads", "-o", "json")
	if err := json.Unmarshal([]byte(said.stdout), &hits); err != nil {
		t.Fatalf("search: %v\n%s%s", err, said.stdout, said.stderr)
	}
	if len(hits.Hits) != 1 || hits.Hits[0].Snippet != "The review is drafted: the greeting reads well." || hits.Hits[0].Turn != 2 {
		t.Errorf("search for what the assistant said: %+v, want one hit, its text alone, in turn 2", hits.Hits)
	}
	tool := r.pipeline(t, "search", "hello-from-tool", "-o", "json")
	if err := json.Unmarshal([]byte(tool.stdout), &hits); err != nil {
		t.Fatalf("search: %v\n%s%s", err, tool.stdout, tool.stderr)
	}
	if len(hits.Hits) == 0 {
		t.Fatalf("search finds neither the Bash call nor its result:\n%s", tool.stdout)
	}
	for _, h := range hits.Hits {
		if h.Call != 1 || h.Tool != "Bash" || strings.Contains(h.Snippet, "{") {
			t.Errorf("hit %+v, want it in call 1 (Bash), without JSON", h)
		}
	}
}
