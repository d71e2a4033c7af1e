package steps

import "github.com/pipeline-dev/pipeline/internal/transcript"

// toolCalls shows the tool calls of an agent's line as they happen, in
// the words logs renders them with (internal/transcript).
type toolCalls struct{ r *transcript.Renderer }

// events are the tool calls line starts, each a line of its own; after
// text that did not end its line, the first starts a new one.
func (c *toolCalls) events(f transcript.Format, line []byte, midLine bool) []Event {
	if c.r == nil {
		c.r = transcript.New(f, "")
	}
	var events []Event
	for _, it := range c.r.Line(line) {
		if it.Kind != transcript.ToolCall {
			continue
		}
		text := transcript.Line(it, transcript.Options{})
		if midLine {
			text, midLine = "\n"+text, false
		}
		events = append(events, Event{Kind: EventTool, Text: text})
	}
	return events
}
