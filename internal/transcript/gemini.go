package transcript

import (
	"encoding/json"
	"strings"
)

type geminiLine struct {
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	Delta      bool           `json:"delta"`
	ToolName   string         `json:"tool_name"`
	ToolID     string         `json:"tool_id"`
	Parameters map[string]any `json:"parameters"`
	Status     string         `json:"status"`
	Output     string         `json:"output"`
	Message    string         `json:"message"`
	Error      *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	Stats *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"stats"`
}

// geminiLine renders Gemini CLI's stream-json: the assistant's text comes
// in chunks (delta), which add up to one text item, ended by whatever
// comes next.
func (r *Renderer) geminiLine(typ string, line []byte) []Item {
	var l geminiLine
	if json.Unmarshal(line, &l) != nil {
		return []Item{{Kind: Output, Text: string(line)}}
	}
	if typ == "message" && l.Role == "assistant" {
		r.gemini.WriteString(l.Content)
		if !l.Delta {
			return r.geminiFlush()
		}
		return nil
	}
	items := r.geminiFlush()
	switch typ {
	case "tool_use":
		items = append(items, r.call(l.ToolID, l.ToolName, l.Parameters))
	case "tool_result":
		text := l.Output
		if l.Error != nil && l.Error.Message != "" {
			text = l.Error.Message
		}
		items = append(items, r.result(l.ToolID, text, l.Status == "error"))
	case "error":
		items = append(items, Item{Kind: Error, Turn: r.turn, Text: l.Message})
	case "result":
		if l.Status != "" && l.Status != "success" {
			text := l.Status
			if l.Error != nil && l.Error.Message != "" {
				text = l.Error.Message
			}
			items = append(items, Item{Kind: Error, Turn: r.turn, Text: text})
		}
		if l.Stats != nil && (l.Stats.InputTokens != 0 || l.Stats.OutputTokens != 0) {
			items = append(items, Item{Kind: Usage, Turn: r.turn, InputTokens: l.Stats.InputTokens, OutputTokens: l.Stats.OutputTokens})
		}
		r.inTurn = false
	}
	return items
}

func (r *Renderer) geminiFlush() []Item {
	text := r.gemini.String()
	r.gemini.Reset()
	return r.text(Text, text)
}

// geminiText is the assistant's text streamed and not shown yet.
type geminiText = strings.Builder
