package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// claudeState follows Claude Code's stream-json: with
// --include-partial-messages the text comes twice, as deltas
// (stream_event) and then as the message's block (assistant). The block
// is what is shown; the deltas are kept only until it comes, for a step
// stopped before its message ended.
type claudeState struct {
	// current is the API message streaming now.
	current string
	// pending holds the streamed text of each message not yet complete,
	// order the ids in the order they began.
	pending map[string]*strings.Builder
	order   []string
	// complete marks the messages whose blocks came.
	complete map[string]bool
}

type claudeLine struct {
	Subtype      string          `json:"subtype"`
	Cwd          string          `json:"cwd"`
	APIMessageID string          `json:"api_message_id"`
	Event        json.RawMessage `json:"event"`
	Message      json.RawMessage `json:"message"`

	IsAPIErrorMessage bool `json:"is_api_error_message"`

	Attempt     int `json:"attempt"`
	MaxRetries  int `json:"max_retries"`
	ErrorStatus int `json:"error_status"`

	IsError      bool     `json:"is_error"`
	Result       string   `json:"result"`
	Errors       []string `json:"errors"`
	TotalCostUSD float64  `json:"total_cost_usd"`
	Usage        *struct {
		InputTokens              int `json:"input_tokens"`
		OutputTokens             int `json:"output_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     map[string]any  `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

type claudeMessage struct {
	ID      string          `json:"id"`
	Content json.RawMessage `json:"content"`
}

func (r *Renderer) claudeLine(typ string, line []byte) []Item {
	if typ == "stream_event" {
		// Most of the output: only a message's start and its text deltas
		// matter (for a message cut short), decoded alone.
		if bytes.Contains(line, []byte(`"text_delta"`)) || bytes.Contains(line, []byte(`"message_start"`)) {
			r.claudeDelta(line)
		}
		return nil
	}
	var l claudeLine
	if json.Unmarshal(line, &l) != nil {
		return []Item{{Kind: Output, Text: string(line)}}
	}
	switch typ {
	case "system":
		return r.claudeSystem(l)
	case "assistant":
		return r.claudeAssistant(l)
	case "user":
		return r.claudeUser(l)
	case "result":
		return r.claudeResult(l)
	}
	return nil
}

func (r *Renderer) claudeSystem(l claudeLine) []Item {
	switch l.Subtype {
	case "init":
		// Where the CLI says it ran is where its paths are relative to.
		if l.Cwd != "" {
			r.dir = l.Cwd
		}
	case "api_retry":
		text := fmt.Sprintf("the API call failed (%d); Claude Code retries (attempt %d of %d)", l.ErrorStatus, l.Attempt, l.MaxRetries)
		return []Item{{Kind: Error, Turn: r.turn, Text: text}}
	}
	return nil
}

// claudeDelta keeps the streamed text of the message it belongs to.
func (r *Renderer) claudeDelta(line []byte) {
	var l struct {
		APIMessageID string `json:"api_message_id"`
		Event        struct {
			Type    string `json:"type"`
			Message struct {
				ID string `json:"id"`
			} `json:"message"`
			Delta struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"delta"`
		} `json:"event"`
	}
	if json.Unmarshal(line, &l) != nil {
		return
	}
	ev := l.Event
	c := &r.claude
	if ev.Type == "message_start" && ev.Message.ID != "" {
		c.current = ev.Message.ID
	}
	id := l.APIMessageID
	if id == "" {
		id = c.current
	}
	if ev.Type != "content_block_delta" || ev.Delta.Type != "text_delta" || c.complete[id] {
		return
	}
	b := c.pending[id]
	if b == nil {
		b = &strings.Builder{}
		c.pending[id] = b
		c.order = append(c.order, id)
	}
	b.WriteString(ev.Delta.Text)
}

func (r *Renderer) claudeAssistant(l claudeLine) []Item {
	var m claudeMessage
	var blocks []claudeBlock
	if json.Unmarshal(l.Message, &m) != nil || json.Unmarshal(m.Content, &blocks) != nil {
		return nil
	}
	r.claudeDone(m.ID)
	var items []Item
	for _, b := range blocks {
		switch {
		case l.IsAPIErrorMessage && b.Type == "text":
			items = append(items, Item{Kind: Error, Turn: r.turn, Text: b.Text})
		case b.Type == "text":
			items = append(items, r.text(Text, b.Text)...)
		case b.Type == "thinking":
			items = append(items, r.text(Thinking, b.Thinking)...)
		case b.Type == "tool_use":
			items = append(items, r.call(b.ID, b.Name, b.Input))
		}
	}
	return items
}

// claudeDone drops the deltas of a message whose blocks came.
func (r *Renderer) claudeDone(id string) {
	c := &r.claude
	if id == "" {
		return
	}
	c.complete[id] = true
	delete(c.pending, id)
}

func (r *Renderer) claudeUser(l claudeLine) []Item {
	var m claudeMessage
	if json.Unmarshal(l.Message, &m) != nil {
		return nil
	}
	var blocks []claudeBlock
	if json.Unmarshal(m.Content, &blocks) != nil {
		var text string
		if json.Unmarshal(m.Content, &text) == nil && strings.TrimSpace(text) != "" {
			return []Item{{Kind: Output, Text: text}}
		}
		return nil
	}
	var items []Item
	for _, b := range blocks {
		switch b.Type {
		case "tool_result":
			items = append(items, r.result(b.ToolUseID, contentText(b.Content), b.IsError))
		case "text":
			if strings.TrimSpace(b.Text) != "" {
				items = append(items, Item{Kind: Output, Text: b.Text})
			}
		}
	}
	return items
}

func (r *Renderer) claudeResult(l claudeLine) []Item {
	items := r.claudeFlush()
	if l.IsError || (l.Subtype != "" && l.Subtype != "success") {
		text := strings.Join(l.Errors, "; ")
		if text == "" {
			text = l.Result
		}
		if text == "" {
			text = l.Subtype
		}
		items = append(items, Item{Kind: Error, Turn: r.turn, Text: text})
	}
	u := Item{Kind: Usage, Turn: r.turn, CostUSD: l.TotalCostUSD}
	if l.Usage != nil {
		u.InputTokens = l.Usage.InputTokens + l.Usage.CacheCreationInputTokens + l.Usage.CacheReadInputTokens
		u.OutputTokens = l.Usage.OutputTokens
	}
	if u.InputTokens != 0 || u.OutputTokens != 0 || u.CostUSD != 0 {
		items = append(items, u)
	}
	r.inTurn = false
	return items
}

// claudeFlush shows the text streamed of messages that never completed.
func (r *Renderer) claudeFlush() []Item {
	c := &r.claude
	var items []Item
	for _, id := range c.order {
		if b := c.pending[id]; b != nil {
			items = append(items, r.text(Text, b.String())...)
			delete(c.pending, id)
		}
	}
	c.order = c.order[:0]
	return items
}

// contentText is the text of a tool result's content: a string, or text
// blocks (an image or other block is named, not shown).
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		} else if b.Type != "" {
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, "\n")
}
