package mcpserver

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pipeline-dev/pipeline/engine"
)

// The prompts' names.
const (
	promptResume  = "resume-with-notes"
	promptExplain = "explain-pause"
)

func (s *Server) addPrompts() {
	session := &mcp.PromptArgument{Name: "session", Title: "Session id", Description: "the session (the sessions tool lists them)", Required: true}
	s.mcp.AddPrompt(&mcp.Prompt{Name: promptResume, Title: "Resume this session with my notes",
		Description: "Resume a paused session with your notes for the agent: the message carries where it stands and why it paused, and asks for the resume tool call.",
		Arguments: []*mcp.PromptArgument{session,
			{Name: "notes", Title: "Notes", Description: "what the agent should know or do differently", Required: true}}}, s.resumePrompt)
	s.mcp.AddPrompt(&mcp.Prompt{Name: promptExplain, Title: "Explain why this session paused",
		Description: "Explain why a session paused: the trigger, its expression and the values it read, the notes, and how to go on.",
		Arguments:   []*mcp.PromptArgument{session}}, s.explainPrompt)
}

func (s *Server) resumePrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	id, notes := req.Params.Arguments["session"], req.Params.Arguments["notes"]
	if strings.TrimSpace(notes) == "" {
		return nil, fmt.Errorf("the notes argument is empty: give the notes the agent should get when the session resumes")
	}
	r, err := s.statusOf(ctx, Target{Session: id})
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Resume pipeline session %s with my notes.\n\n", r.ID)
	describeStatus(&b, r)
	fmt.Fprintf(&b, "\nMy notes for the agent:\n%s\n\n", notes)
	switch engine.Status(r.Status) {
	case engine.StatusPaused, engine.StatusFailed:
		fmt.Fprintf(&b, "Call the pipeline resume tool with {\"session\": %q, \"notes\": <my notes>} (the command line is: pipeline resume %s --notes %s), then call status until it pauses or completes, and tell me how it ended.\n",
			r.ID, r.ID, shellQuote(notes))
	case engine.StatusRunning:
		fmt.Fprintf(&b, "It is running: call the pipeline pause tool with {\"session\": %q, \"notes\": <my notes>} to stop it with these notes, then resume it.\n", r.ID)
	default:
		fmt.Fprintf(&b, "It is %s: there is nothing to resume. Tell me so, and whether to start a new session (the run tool with new: true).\n", r.Status)
	}
	return &mcp.GetPromptResult{Description: "Resume session " + r.ID + " with notes",
		Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: b.String()}}}}, nil
}

func (s *Server) explainPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	r, err := s.statusOf(ctx, Target{Session: req.Params.Arguments["session"]})
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Explain why pipeline session %s paused, in a few sentences, and what I should decide before it goes on.\n\n", r.ID)
	describeStatus(&b, r)
	if engine.Status(r.Status) != engine.StatusPaused {
		fmt.Fprintf(&b, "\nNote: the session is %s, not paused; say so.\n", r.Status)
	} else {
		fmt.Fprintf(&b, "\nTo go on: pipeline resume %s --notes \"...\" (the resume tool with {\"session\": %q, \"notes\": ...}); to look at the work: the logs tool.\n", r.ID, r.ID)
	}
	return &mcp.GetPromptResult{Description: "Why session " + r.ID + " paused",
		Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: b.String()}}}}, nil
}

// describeStatus writes what the status says of the session: where it
// stands, the cause of its pause (the trigger, its expression, the values
// it read, the note), the phase's summary, and the notes left so far.
func describeStatus(b *strings.Builder, r StatusOutput) {
	fmt.Fprintf(b, "Pipeline: %s (%s)\nStatus: %s\nPhase: %s, step %s, attempt %d\n", r.Pipeline, r.File, r.Status, r.Phase, r.Step, r.Attempt)
	if r.PauseReason != "" {
		fmt.Fprintf(b, "Pause reason: %s\n", r.PauseReason)
	}
	if p := r.Pause; p != nil {
		if p.Expression != "" {
			fmt.Fprintf(b, "Trigger expression: %s\n", p.Expression)
		}
		if len(p.Values) > 0 {
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(p.Values)) {
				if k == "output" || k == "steps" || k == "spec" {
					continue
				}
				parts = append(parts, fmt.Sprintf("%s=%v", k, p.Values[k]))
			}
			if len(parts) > 0 {
				fmt.Fprintf(b, "Values it read: %s\n", strings.Join(parts, ", "))
			}
		}
		if p.Note != "" {
			fmt.Fprintf(b, "Note: %s\n", p.Note)
		}
	}
	if r.FailReason != "" {
		fmt.Fprintf(b, "Failed: %s\n", r.FailReason)
	}
	fmt.Fprintf(b, "Usage: %d tokens, $%.4f, %s\n", r.Tokens, r.CostUSD, r.Elapsed)
	for _, p := range r.Phases {
		if p.Name == r.Phase && p.Summary != "" {
			fmt.Fprintf(b, "Phase summary: %s\n", p.Summary)
		}
		for _, n := range p.Notes {
			fmt.Fprintf(b, "Human note (%s): %s\n", p.Name, n)
		}
	}
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
