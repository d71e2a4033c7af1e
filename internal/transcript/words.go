package transcript

import "bytes"

// silent tells the line types that say nothing a person searches for: the
// CLI's set-up, the streamed deltas of a message that comes whole later,
// the usage, the final result that repeats the last message.
func silent(typ string) bool {
	switch typ {
	case "stream_event", "system", "rate_limit_event": // Claude Code
		return true
	case "init": // Gemini CLI
		return true
	case "thread.started", "turn.started", "turn.completed", "item.started", "item.updated": // Codex CLI
		return true
	}
	return false
}

// Silent tells whether a line of an agent's transcript says nothing a
// person searches for: the CLI's set-up, the streamed deltas of a message
// that comes whole later, the usage, the final result that repeats the
// last message (unless it is an error). It looks at the line's leading
// type alone, as the three CLIs write it first: search indexes at
// hundreds of MB/s, and decoding every line would cost ten times that.
func Silent(line []byte) bool {
	typ, ok := leadingType(line)
	if !ok {
		return false
	}
	if typ == "result" {
		return !bytes.Contains(line, []byte(`"is_error":true`)) && !bytes.Contains(line, []byte(`"error"`))
	}
	return silent(typ)
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
