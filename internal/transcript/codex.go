package transcript

import (
	"encoding/json"
	"fmt"
	"strings"
)

type codexLine struct {
	Item  *codexItem `json:"item"`
	Usage *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
	Message string `json:"message"`
	Error   *struct {
		Message string `json:"message"`
	} `json:"error"`
}

type codexItem struct {
	ID               string         `json:"id"`
	Type             string         `json:"type"`
	Text             string         `json:"text"`
	Command          string         `json:"command"`
	AggregatedOutput string         `json:"aggregated_output"`
	ExitCode         *int           `json:"exit_code"`
	Status           string         `json:"status"`
	Server           string         `json:"server"`
	Tool             string         `json:"tool"`
	Arguments        map[string]any `json:"arguments"`
	Result           *struct {
		Content json.RawMessage `json:"content"`
	} `json:"result"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
	Query   string `json:"query"`
	Changes []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"changes"`
	Items []struct {
		Text      string `json:"text"`
		Completed bool   `json:"completed"`
	} `json:"items"`
	Message string `json:"message"`
}

// codexLine renders Codex CLI's exec --json events: a tool call shows when
// its item starts, its result when it completes; text and reasoning when
// they complete.
func (r *Renderer) codexLine(typ string, line []byte) []Item {
	var l codexLine
	if json.Unmarshal(line, &l) != nil {
		return []Item{{Kind: Output, Text: string(line)}}
	}
	switch typ {
	case "item.started":
		if l.Item != nil && codexIsCall(l.Item.Type) && (l.Item.Type != "command_execution" || l.Item.Command != "") {
			return []Item{r.codexCall(l.Item)}
		}
	case "item.completed":
		if l.Item != nil {
			return r.codexCompleted(l.Item)
		}
	case "turn.completed":
		r.inTurn = false
		if l.Usage != nil {
			return []Item{{Kind: Usage, Turn: r.turn, InputTokens: l.Usage.InputTokens, OutputTokens: l.Usage.OutputTokens}}
		}
	case "turn.failed":
		if l.Error != nil {
			return []Item{{Kind: Error, Turn: r.turn, Text: l.Error.Message}}
		}
	case "error":
		return []Item{{Kind: Error, Turn: r.turn, Text: l.Message}}
	}
	return nil
}

func codexIsCall(typ string) bool {
	switch typ {
	case "command_execution", "mcp_tool_call", "web_search", "file_change":
		return true
	}
	return false
}

func (r *Renderer) codexCall(it *codexItem) Item {
	switch it.Type {
	case "command_execution":
		if it.Command == "" {
			return r.call(it.ID, "shell", nil)
		}
		return r.call(it.ID, "shell", map[string]any{"command": unwrapShell(it.Command)})
	case "mcp_tool_call":
		return r.call(it.ID, it.Server+"."+it.Tool, it.Arguments)
	case "web_search":
		return r.call(it.ID, "web_search", map[string]any{"query": it.Query})
	}
	var paths []string
	for _, c := range it.Changes {
		paths = append(paths, c.Path)
	}
	call := r.call(it.ID, "edit", nil)
	call.Args = shorten(relative(strings.Join(paths, ", "), r.dir))
	return call
}

func (r *Renderer) codexCompleted(it *codexItem) []Item {
	switch it.Type {
	case "agent_message":
		return r.text(Text, it.Text)
	case "reasoning":
		return r.text(Thinking, it.Text)
	case "error":
		return []Item{{Kind: Error, Turn: r.turn, Text: it.Message}}
	case "todo_list":
		done := 0
		for _, t := range it.Items {
			if t.Completed {
				done++
			}
		}
		call := r.call(it.ID, "todo_list", nil)
		call.Args = fmt.Sprintf("%d items, %d done", len(it.Items), done)
		return []Item{call}
	}
	if !codexIsCall(it.Type) {
		return nil
	}
	var items []Item
	if _, seen := r.callOf[it.ID]; !seen {
		items = append(items, r.codexCall(it))
	}
	failed := it.Status == "failed" || it.Status == "declined"
	var text string
	switch it.Type {
	case "command_execution":
		text = it.AggregatedOutput
		if it.ExitCode != nil && *it.ExitCode != 0 {
			failed = true
			text = strings.TrimRight(text, "\n") + fmt.Sprintf("\n(exit %d)", *it.ExitCode)
		}
	case "mcp_tool_call":
		if it.Result != nil {
			text = contentText(it.Result.Content)
		}
		if it.Error != nil && it.Error.Message != "" {
			text, failed = it.Error.Message, true
		}
	case "file_change", "web_search":
		if !failed {
			r.inTurn = false
			return items
		}
		text = it.Status
	}
	return append(items, r.result(it.ID, strings.TrimLeft(text, "\n"), failed))
}

// unwrapShell shows the command Codex ran inside its shell wrapper
// (bash -lc '…'), as the user would have typed it.
func unwrapShell(command string) string {
	for _, prefix := range []string{"bash -lc ", "/bin/bash -lc ", "sh -c ", "/bin/sh -c ", "zsh -lc "} {
		rest, ok := strings.CutPrefix(command, prefix)
		if !ok {
			continue
		}
		if len(rest) >= 2 && (rest[0] == '\'' || rest[0] == '"') && rest[len(rest)-1] == rest[0] {
			return rest[1 : len(rest)-1]
		}
		return rest
	}
	return command
}
