package search

import (
	"unicode/utf16"
	"unicode/utf8"

	"github.com/pipeline-dev/pipeline/internal/transcript"
)

// The agents' transcripts are JSON lines (Claude's, Gemini's and Codex's
// stream-json): what a person searches for is what was said (the text,
// the tool called and its arguments, what it answered), once: not the
// lines that say nothing (transcript.Silent: the set-up, the deltas that
// add up to a message, the result that repeats it), not the keys, the
// values that are the format's own (a type, a role, a model: skippedKeys),
// the punctuation or the opaque ids (see identifier). A JSON object or
// array is indexed as its other string values, joined by spaces; any
// other line as it is. Either way a
// line of the file is one line of the indexed text, so that a match's
// line in the text is its line in the file.

// extractor turns lines into the text to index; its scratch buffer is
// reused from line to line.
type extractor struct{ scratch []byte }

// appendLineText appends the text to index of one line (without its
// line break) to dst.
func (x *extractor) appendLineText(dst, line []byte) []byte {
	if transcript.Silent(line) {
		return dst
	}
	if out, ok := x.appendJSONStrings(dst, line); ok {
		return out
	}
	return appendPlain(dst, line)
}

// appendPlain appends line with its control characters (a tab, a
// carriage return, an escape) as spaces: the indexed text keeps one line
// per line, and the highlight markers (\x01, \x02) stay ours. Bytes that
// are not UTF-8 become U+FFFD, as a JSON decoder reads them.
func appendPlain(dst, line []byte) []byte {
	if !utf8.Valid(line) {
		line = perByteValid(line)
	}
	for _, c := range line {
		if c < 0x20 || c == 0x7f {
			c = ' '
		}
		dst = append(dst, c)
	}
	return dst
}

// perByteValid is line with each byte that is not UTF-8 made U+FFFD, as
// encoding/json decodes them (bytes.ToValidUTF8 makes a run one).
func perByteValid(line []byte) []byte {
	out := make([]byte, 0, len(line)+8)
	for len(line) > 0 {
		r, size := utf8.DecodeRune(line)
		if r == utf8.RuneError && size == 1 {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, line[:size]...)
		}
		line = line[size:]
	}
	return out
}

// appendJSONStrings appends the string values of line, a JSON object or
// array, separated by spaces. ok is false for a line that is not one
// (then dst is returned as it was): it is then indexed as plain text. The
// scan checks the structure enough to tell JSON from text that starts
// with a brace; it does not validate numbers.
func (x *extractor) appendJSONStrings(dst, line []byte) (out []byte, ok bool) {
	start := len(dst)
	i := skipSpace(line, 0)
	if i == len(line) || line[i] != '{' && line[i] != '[' {
		return dst, false
	}
	// stack holds the open containers; '{' expects keys. skip: the value
	// coming is a skippedKeys one.
	var stack [64]byte
	depth := 0
	expectKey, skip := false, false
	for i < len(line) {
		c := line[i]
		switch {
		case c == '{' || c == '[':
			if depth == len(stack) {
				return dst[:start], false
			}
			stack[depth] = c
			depth++
			expectKey, skip = c == '{', false
			i++
		case c == '}' || c == ']':
			if depth == 0 || (c == '}') != (stack[depth-1] == '{') {
				return dst[:start], false
			}
			depth--
			expectKey = false
			i++
			if depth == 0 {
				if skipSpace(line, i) != len(line) {
					return dst[:start], false
				}
				return dst, true
			}
		case c == '"':
			end, text, good := scanString(line, i+1, x.scratch)
			x.scratch = text[:0]
			if !good {
				return dst[:start], false
			}
			if expectKey {
				i = skipSpace(line, end)
				if i == len(line) || line[i] != ':' {
					return dst[:start], false
				}
				expectKey, skip = false, skippedKeys[string(text)]
				i++
				continue
			}
			if len(text) > 0 && !skip && !identifier(text) {
				if len(dst) > start {
					dst = append(dst, ' ')
				}
				dst = appendPlain(dst, text)
			}
			i = end
		case c == ',':
			expectKey, skip = depth > 0 && stack[depth-1] == '{', false
			i++
		case c == ':' || c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
		default:
			// A number, true, false or null: skipped.
			if depth == 0 {
				return dst[:start], false
			}
			i++
		}
	}
	return dst[:start], false // not closed: not a JSON line
}

// skippedKeys are the keys of the agents' formats whose values are the
// format's own words, not what was said: a line's type ("text_delta"), a
// role, a model, a status, ids; and the model's thinking, which logs hides
// unless asked.
var skippedKeys = map[string]bool{
	"type": true, "subtype": true, "role": true, "model": true, "status": true, "stop_reason": true,
	"stop_sequence": true, "id": true, "uuid": true, "session_id": true, "tool_use_id": true,
	"parent_tool_use_id": true, "api_message_id": true, "tool_id": true, "thread_id": true,
	"timestamp": true, "signature": true, "thinking": true, "cwd": true, "service_tier": true,
}

// scanString reads the string whose content starts at i (after the
// opening quote), unescaped into scratch. end is past the closing quote.
func scanString(line []byte, i int, scratch []byte) (end int, text []byte, ok bool) {
	text = scratch[:0]
	for i < len(line) {
		// The common case: a run of plain bytes.
		j := i
		for j < len(line) && line[j] != '"' && line[j] != '\\' {
			j++
		}
		text = append(text, line[i:j]...)
		if j == len(line) {
			return 0, nil, false
		}
		if line[j] == '"' {
			return j + 1, text, true
		}
		// An escape.
		if j+1 >= len(line) {
			return 0, nil, false
		}
		switch e := line[j+1]; e {
		case '"', '\\', '/':
			text = append(text, e)
			i = j + 2
		case 'n', 'r', 't', 'b', 'f':
			text = append(text, ' ')
			i = j + 2
		case 'u':
			r, next, good := unicodeEscape(line, j)
			if !good {
				return 0, nil, false
			}
			text = utf8.AppendRune(text, r)
			i = next
		default:
			return 0, nil, false
		}
	}
	return 0, nil, false
}

// unicodeEscape reads \uXXXX at i, and its low surrogate when it is the
// high one of a pair.
func unicodeEscape(line []byte, i int) (r rune, next int, ok bool) {
	r, ok = hex4(line, i+2)
	if !ok {
		return 0, 0, false
	}
	next = i + 6
	if utf16.IsSurrogate(r) {
		if next+6 <= len(line) && line[next] == '\\' && line[next+1] == 'u' {
			if low, good := hex4(line, next+2); good {
				if pair := utf16.DecodeRune(r, low); pair != utf8.RuneError {
					return pair, next + 6, true
				}
			}
		}
		return utf8.RuneError, next, true
	}
	return r, next, true
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// identifier tells an opaque id (a message's, a tool call's, a session's:
// msg_01XFDUDYJgAACzvnptvVoYEL, a UUID, a commit's hash) from words: a
// value of letters, digits, '_' and '-' alone with a run of 12 or more
// letters and digits, at least two of each, between its separators. Ids
// are unique tokens that would fill the index's dictionary, and nobody
// searches a transcript for them (status shows the native session ids).
func identifier(s []byte) bool {
	if len(s) < 12 {
		return false
	}
	found := false
	run, letters, digits := 0, 0, 0
	for i := 0; i <= len(s); i++ {
		var c byte = '-'
		if i < len(s) {
			c = s[i]
		}
		switch {
		case c >= '0' && c <= '9':
			run++
			digits++
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			run++
			letters++
		case c == '_' || c == '-':
			if run >= 12 && letters >= 2 && digits >= 2 {
				found = true
			}
			run, letters, digits = 0, 0, 0
		default:
			return false
		}
	}
	return found
}
