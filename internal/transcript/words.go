package transcript

import (
	"bytes"
	"encoding/json"
	"strings"
)

// silent are the line types that say nothing a person searches for: the
// CLI's set-up, the streamed deltas of a message that comes whole later,
// the usage, the final result that repeats the last message.
var silent = map[string]bool{
	// Claude Code
	"stream_event": true, "system": true, "rate_limit_event": true,
	// Gemini CLI
	"init": true,
	// Codex CLI
	"thread.started": true, "turn.started": true, "turn.completed": true, "item.started": true, "item.updated": true,
}

// LineWords is what search indexes of one line of an agent's transcript,
// read on its own (an index takes a file up where it left off): the text
// said, the tool called with its arguments, what the tool answered, an
// error; each once, without the JSON around it. ok is false for a line
// that is none of the agents' formats, for the caller to index as it is.
func LineWords(line []byte) (words string, ok bool) {
	typ, found := leadingType(line)
	if !found {
		var head struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(line, &head) != nil || head.Type == "" {
			return "", false
		}
		typ = head.Type
	}
	if silent[typ] {
		return "", true
	}
	if typ == "result" && !bytes.Contains(line, []byte(`"is_error":true`)) && !bytes.Contains(line, []byte(`"error"`)) {
		return "", true // the answer again, and the usage
	}
	format := detect(typ, line)
	if format == Detect {
		return "", false
	}
	r := New(format, "")
	items := r.Line(line)
	if format == Gemini {
		items = append(items, r.geminiFlush()...)
	}
	var parts []string
	for _, it := range items {
		if w := Words(it); w != "" {
			parts = append(parts, w)
		}
	}
	return strings.Join(parts, " "), true
}

// leadingType reads the type of a line that starts {"type":"…", as the
// three CLIs write every line, without decoding the rest.
func leadingType(line []byte) (string, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(`{"type":"`))
	if !ok {
		return "", false
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return "", false
	}
	return string(rest[:end]), true
}
