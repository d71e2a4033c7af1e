//go:build agentclis

package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/internal/mockapi"
)

// A real MCP client end to end: the real Claude Code, given --mcp-config
// naming the built pipeline mcp (run in the project's folder), against
// the Anthropic mock. The mock answers the first turn with a tool_use of
// the pipeline status tool; Claude Code calls it through pipeline mcp,
// and its next request carries the tool's result: the session's real
// status.
func TestMCPClaudeCodeCallsTheStatusTool(t *testing.T) {
	r := newClaudeRun(t, mcpPhases)
	write(t, r.dir, "agent.sh", mcpAgent)
	// A paused session to ask about, made by the CLI.
	r.run(t, 3)
	paused := r.status(t)
	if paused.Status != "paused" || paused.PauseReason != "checkpoint" {
		t.Fatalf("status %+v", paused)
	}
	id := paused.ID

	config, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"pipeline": map[string]any{"command": binary, "args": []string{"mcp"}}}})
	write(t, r.dir, "mcp.json", string(config))
	r.mock.SetReplyFunc(func(prompt string) string {
		switch {
		case strings.Contains(prompt, "What is the status of session"):
			return mockapi.AnthropicToolUse("mcp__pipeline__status", map[string]string{"session": id})
		case strings.Contains(prompt, id):
			return "The session is paused at a checkpoint."
		}
		return ""
	})

	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	claude := exec.CommandContext(ctx, filepath.Join(strings.SplitN(envValue(r.env, "PATH"), ":", 2)[0], "claude"),
		"-p", "What is the status of session "+id+"?", "--model", "sonnet",
		"--mcp-config", filepath.Join(r.dir, "mcp.json"), "--strict-mcp-config",
		"--allowedTools", "mcp__pipeline__status", "--output-format", "json")
	claude.Dir, claude.Env = r.dir, r.env
	out, err := claude.CombinedOutput()
	if err != nil {
		t.Fatalf("claude: %v\n%s", err, out)
	}

	// The turn after the tool call carries its result.
	var answered *mockapi.AnthropicRequest
	turns := r.mock.Turns()
	for i := range turns {
		if len(turns[i].ToolResults) > 0 {
			answered = &turns[i]
			break
		}
	}
	if answered == nil {
		for i, turn := range turns {
			t.Logf("turn %d: %d messages, last user %q", i, len(turn.Messages), turn.LastUserText())
		}
		t.Fatalf("no request carried a tool_result; claude said:\n%s", out)
	}
	if len(answered.ToolUses) != 1 || answered.ToolUses[0].Name != "mcp__pipeline__status" {
		t.Fatalf("tool uses %+v", answered.ToolUses)
	}
	result := answered.ToolResults[0]
	if result.ToolUseID != answered.ToolUses[0].ID || result.IsError {
		t.Fatalf("tool result %+v for tool use %+v", result, answered.ToolUses[0])
	}
	for _, want := range []string{`"id":"` + id + `"`, `"status":"paused"`, `"pause_reason":"checkpoint"`, "design drafted; review it"} {
		if !strings.Contains(strings.ReplaceAll(result.Content, `": "`, `":"`), want) {
			t.Errorf("the tool's result lacks %s:\n%s", want, result.Content)
		}
	}
	if !strings.Contains(string(out), "The session is paused at a checkpoint.") {
		t.Errorf("claude's answer:\n%s", out)
	}
}

// envValue is the value of name in env.
func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}
