// Package transcript turns what an agent CLI wrote (Claude Code's
// stream-json, Gemini CLI's stream-json, Codex CLI's exec --json) into a
// conversation a person can read: the assistant's text, each tool call
// with its name and short arguments, the first lines of each result, and
// each turn's tokens and cost. The same items feed logs, search and the
// web UI, so that each says the same thing once: no JSON keys, no
// streamed deltas next to the message they add up to.
package transcript

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Kind is what an item is.
type Kind string

// The kinds of item.
const (
	// Text is what the assistant said.
	Text Kind = "text"
	// Thinking is the model's reasoning, when the CLI writes it.
	Thinking Kind = "thinking"
	// ToolCall is a tool the assistant called: Tool and Args.
	ToolCall Kind = "tool_call"
	// ToolResult is what the tool answered (Failed when it failed).
	ToolResult Kind = "tool_result"
	// Usage is a turn's tokens and cost.
	Usage Kind = "usage"
	// Error is an error the CLI reported (an API error, a failed turn).
	Error Kind = "error"
	// Output is a line that is not the agent's format: a command step's
	// output, the CLI's standard error, pipeline's own notes.
	Output Kind = "output"
)

// Item is one piece of a rendered transcript.
type Item struct {
	Kind Kind `json:"kind"`
	// Turn counts the model's answers in the step, from 1: a turn starts
	// at the first text, thinking or tool call after a tool's result.
	Turn int `json:"turn,omitempty"`
	// Call counts the tool calls in the step, from 1; a result carries
	// the number of its call.
	Call   int    `json:"call,omitempty"`
	Tool   string `json:"tool,omitempty"`
	Args   string `json:"args,omitempty"`
	Text   string `json:"text,omitempty"`
	Failed bool   `json:"failed,omitempty"`
	// Stderr marks an Output line from standard error.
	Stderr       bool    `json:"stderr,omitempty"`
	InputTokens  int     `json:"input_tokens,omitempty"`
	OutputTokens int     `json:"output_tokens,omitempty"`
	CostUSD      float64 `json:"cost_usd,omitempty"`
}

// Format is the output format of an agent CLI.
type Format string

// The formats known.
const (
	// Detect reads the format from the first line that tells it.
	Detect Format = ""
	Claude Format = "claude"
	Gemini Format = "gemini"
	Codex  Format = "codex"
	// Plain is any other step's output: every line an Output item.
	Plain Format = "plain"
)

// StderrPrefix starts each transcript line that came from a parsed
// agent's standard error (steps.StderrPrefix: the executor writes it).
const StderrPrefix = "[stderr] "

// Renderer renders one step's transcript, a line at a time, as it is
// written or read back.
type Renderer struct {
	format Format
	// dir shortens the paths of tool arguments: the step's folder, or
	// the one the CLI says it runs in.
	dir  string
	turn int
	// inTurn is set while the model's answer goes on; a tool's result
	// ends it.
	inTurn bool
	calls  int
	// callOf numbers the tool calls by the CLI's own id.
	callOf map[string]int
	nameOf map[string]string
	claude claudeState
	gemini geminiText
}

// New returns a renderer of a transcript in format f; dir is the folder
// the step ran in, so that tool arguments under it show relative ("" to
// keep them as written).
func New(f Format, dir string) *Renderer {
	return &Renderer{format: f, dir: dir, callOf: map[string]int{}, nameOf: map[string]string{},
		claude: claudeState{pending: map[string]*strings.Builder{}, complete: map[string]bool{}}}
}

// FormatOf is the format of an agent step's kind (claude, gemini, codex);
// Plain for any other step.
func FormatOf(kind string) Format {
	switch Format(kind) {
	case Claude, Gemini, Codex:
		return Format(kind)
	}
	return Plain
}

// Line renders one line of the transcript, without its line ending.
func (r *Renderer) Line(line []byte) []Item {
	line = bytes.TrimRight(line, "\r\n")
	if rest, ok := bytes.CutPrefix(line, []byte(StderrPrefix)); ok {
		return []Item{{Kind: Output, Text: string(rest), Stderr: true}}
	}
	trimmed := bytes.TrimSpace(line)
	if r.format == Plain || len(trimmed) == 0 || trimmed[0] != '{' {
		if len(trimmed) == 0 && r.format != Plain {
			return nil
		}
		return []Item{{Kind: Output, Text: string(line)}}
	}
	var head struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(trimmed, &head) != nil || head.Type == "" {
		return []Item{{Kind: Output, Text: string(line)}}
	}
	if r.format == Detect {
		r.format = detect(head.Type, trimmed)
	}
	switch r.format {
	case Claude:
		return r.claudeLine(head.Type, trimmed)
	case Gemini:
		return r.geminiLine(head.Type, trimmed)
	case Codex:
		return r.codexLine(head.Type, trimmed)
	}
	return []Item{{Kind: Output, Text: string(line)}}
}

// Flush returns what the transcript left unfinished: the text of a
// message that was streaming when the step stopped.
func (r *Renderer) Flush() []Item {
	if r.format == Claude {
		return r.claudeFlush()
	}
	return nil
}

// Lines renders each line of data; a last line without its line ending
// too.
func (r *Renderer) Lines(data []byte) []Item {
	var items []Item
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		items = append(items, r.Line(line)...)
		data = rest
	}
	return items
}

// Render renders a whole transcript.
func Render(data []byte, f Format, dir string) []Item {
	r := New(f, dir)
	return append(r.Lines(data), r.Flush()...)
}

// detect tells the format from the first JSON line with a type.
func detect(typ string, line []byte) Format {
	switch {
	case strings.HasPrefix(typ, "thread.") || strings.HasPrefix(typ, "turn.") || strings.HasPrefix(typ, "item."):
		return Codex
	case typ == "stream_event" || typ == "system" || typ == "assistant" || typ == "user":
		return Claude
	case typ == "init" || typ == "message" || typ == "tool_use" || typ == "tool_result":
		return Gemini
	case typ == "result" && bytes.Contains(line, []byte(`"stats"`)):
		return Gemini
	case typ == "result":
		return Claude
	}
	return Detect
}

// said starts or continues the model's turn and returns its number.
func (r *Renderer) said() int {
	if !r.inTurn {
		r.turn++
		r.inTurn = true
	}
	return r.turn
}

// call numbers a tool call with the CLI's id and returns its item.
func (r *Renderer) call(id, tool string, input map[string]any) Item {
	turn := r.said()
	r.calls++
	if id != "" {
		r.callOf[id], r.nameOf[id] = r.calls, tool
	}
	return Item{Kind: ToolCall, Turn: turn, Call: r.calls, Tool: tool, Args: ShortArgs(tool, input, r.dir)}
}

// result is the answer to the call with the CLI's id; it ends the turn.
func (r *Renderer) result(id, text string, failed bool) Item {
	r.inTurn = false
	return Item{Kind: ToolResult, Turn: r.turn, Call: r.callOf[id], Tool: r.nameOf[id], Text: text, Failed: failed}
}

func (r *Renderer) text(kind Kind, text string) []Item {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	return []Item{{Kind: kind, Turn: r.said(), Text: text}}
}
