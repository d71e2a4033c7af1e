package search

import (
	"bytes"
	"unicode/utf8"
)

// Claude Code's assistant and user lines are most of what the placer
// decodes, and encoding/json reads them at about 25 MB/s, where indexing
// reads at a few hundred. scanClaude reads them in one pass over the
// bytes: it checks the line is JSON as strictly as encoding/json does,
// and takes the few values a place needs. Where the renderer's decoding
// could read the line otherwise than this scan (a key in other case, a
// key twice, a field of another type, an escape in a value it reads, a
// field it does not read here) it gives up (ok false), and the line is
// decoded by encoding/json as before.

// claudeBlockScan is what a place needs of a content block.
type claudeBlockScan struct {
	typ, id, name, toolUseID []byte
	// saysText and saysThinking: its text, its thinking say something.
	saysText, saysThinking bool
}

// claudeScan is what a place needs of an assistant or user line.
type claudeScan struct {
	typ      []byte // the line's type
	apiError bool
	blocks   []claudeBlockScan
}

// scanner walks one JSON line; a failure (not JSON, or not a line it
// reads as the renderer does) stops it.
type scanner struct {
	b     []byte
	i     int
	depth int
	bad   bool
}

// maxDepth is how deep a scan goes: deeper is left to encoding/json
// (which stops at 10,000).
const maxDepth = 100

// scanClaude scans a line of Claude Code's: its type, and the message
// of an assistant or user line.
func scanClaude(line []byte, into *claudeScan) (ok bool) {
	s := scanner{b: line}
	into.typ, into.apiError, into.blocks = nil, false, into.blocks[:0]
	var seenType, seenMessage, seenError bool
	s.object(func(key []byte) {
		switch string(key) {
		case "type":
			s.once(&seenType)
			into.typ = s.plainStr()
		case "message":
			s.once(&seenMessage)
			s.message(into)
		case "is_api_error_message":
			s.once(&seenError)
			into.apiError = s.boolean()
		case "subtype", "cwd", "api_message_id", "event", "attempt", "max_retries", "error_status",
			"is_error", "result", "errors", "total_cost_usd", "usage":
			s.bad = true // fields the renderer types: read by encoding/json
		default:
			s.value()
		}
	})
	s.space()
	return !s.bad && s.i == len(s.b)
}

// once fails a key seen before: encoding/json would read both.
func (s *scanner) once(seen *bool) {
	if *seen {
		s.bad = true
	}
	*seen = true
}

func (s *scanner) message(into *claudeScan) {
	if s.null() {
		return
	}
	var seenID, seenContent bool
	s.object(func(key []byte) {
		switch string(key) {
		case "id":
			s.once(&seenID)
			s.str()
		case "content":
			s.once(&seenContent)
			s.blocks(into)
		default:
			s.value()
		}
	})
}

func (s *scanner) blocks(into *claudeScan) {
	if s.null() {
		return
	}
	s.array(func() {
		var b claudeBlockScan
		var seen [9]bool
		s.object(func(key []byte) {
			switch string(key) {
			case "type":
				s.once(&seen[0])
				b.typ = s.plainStr()
			case "text":
				s.once(&seen[1])
				b.saysText = s.saysStr()
			case "thinking":
				s.once(&seen[2])
				b.saysThinking = s.saysStr()
			case "id":
				s.once(&seen[3])
				b.id = s.plainStr()
			case "name":
				s.once(&seen[4])
				b.name = s.plainStr()
			case "tool_use_id":
				s.once(&seen[5])
				b.toolUseID = s.plainStr()
			case "input":
				s.once(&seen[6])
				if !s.null() {
					s.object(func([]byte) { s.value() })
				}
			case "is_error":
				s.once(&seen[7])
				s.boolean()
			case "content":
				s.once(&seen[8])
				s.value()
			default:
				s.value()
			}
		})
		into.blocks = append(into.blocks, b)
	})
}

// object reads an object, handing each key to field, which reads its
// value. A key the renderer's decoding might match to a field of
// another spelling (any upper case, escape or byte past ASCII) fails.
func (s *scanner) object(field func(key []byte)) {
	s.space()
	if !s.take('{') {
		return
	}
	s.space()
	if s.take0('}') {
		return
	}
	for !s.bad {
		key, escaped := s.rawString()
		if escaped || !plainKey(key) {
			s.bad = true
			return
		}
		s.space()
		if !s.take(':') {
			return
		}
		s.space()
		field(key)
		s.space()
		if s.peek() == ',' {
			s.i++
			s.space()
			continue
		}
		s.take('}')
		return
	}
}

func plainKey(key []byte) bool {
	for _, c := range key {
		if c >= 0x80 || c >= 'A' && c <= 'Z' {
			return false
		}
	}
	return true
}

// array reads an array, each element by elem, which must read one
// object (a block).
func (s *scanner) array(elem func()) {
	s.space()
	if !s.take('[') {
		return
	}
	s.space()
	if s.take0(']') {
		return
	}
	for !s.bad {
		s.space()
		if s.peek() != '{' {
			s.bad = true // a null or other element: encoding/json's to read
			return
		}
		elem()
		s.space()
		if s.peek() == ',' {
			s.i++
			continue
		}
		s.take(']')
		return
	}
}

// value reads any JSON value, checking it.
func (s *scanner) value() {
	s.depth++
	defer func() { s.depth-- }()
	if s.depth > maxDepth {
		s.bad = true
		return
	}
	s.space()
	switch c := s.peek(); {
	case c == '{':
		s.object(func([]byte) { s.value() })
	case c == '[':
		s.i++
		s.space()
		if s.take0(']') {
			return
		}
		for !s.bad {
			s.value()
			s.space()
			if s.peek() == ',' {
				s.i++
				continue
			}
			s.take(']')
			return
		}
	case c == '"':
		s.rawString()
	case c == 't':
		s.literal("true")
	case c == 'f':
		s.literal("false")
	case c == 'n':
		s.literal("null")
	default:
		s.number()
	}
}

// str reads a string or null, its value unused.
func (s *scanner) str() {
	if !s.null() {
		if s.peek() != '"' {
			s.bad = true
			return
		}
		s.rawString()
	}
}

// plainStr reads a string (or null: empty) that has no escape and is
// UTF-8, as encoding/json would decode it: its bytes.
func (s *scanner) plainStr() []byte {
	if s.null() {
		return nil
	}
	if s.peek() != '"' {
		s.bad = true
		return nil
	}
	raw, escaped := s.rawString()
	if escaped || !utf8.Valid(raw) {
		s.bad = true
	}
	return raw
}

// saysStr reads a string (or null) without escapes, and tells whether
// it holds more than spaces.
func (s *scanner) saysStr() bool {
	if s.null() {
		return false
	}
	if s.peek() != '"' {
		s.bad = true
		return false
	}
	raw, escaped := s.rawString()
	if escaped {
		// "\n", "\u00a0": a space or not, decoded: encoding/json's.
		s.bad = true
	}
	return len(bytes.TrimSpace(raw)) > 0
}

func (s *scanner) boolean() bool {
	switch {
	case s.null():
		return false
	case s.peek() == 't':
		s.literal("true")
		return true
	case s.peek() == 'f':
		s.literal("false")
		return false
	}
	s.bad = true
	return false
}

// null reads a null if one is next.
func (s *scanner) null() bool {
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.literal("null")
		return true
	}
	return false
}

func (s *scanner) literal(word string) {
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		s.bad = true
		return
	}
	s.i += len(word)
	if c := s.peek(); c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
		s.bad = true
	}
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() {
	s.take0('-')
	switch c := s.peek(); {
	case c == '0':
		s.i++
	case c >= '1' && c <= '9':
		s.digits()
	default:
		s.bad = true
		return
	}
	if s.take0('.') && !s.digits() {
		s.bad = true
		return
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.i++
		if !s.take0('+') {
			s.take0('-')
		}
		if !s.digits() {
			s.bad = true
		}
	}
}

func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// rawString reads a string at s.i (its opening quote): its raw bytes
// between the quotes, and whether it has an escape. A control character
// or a bad escape fails, as in encoding/json.
func (s *scanner) rawString() (raw []byte, escaped bool) {
	if !s.take('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			raw = s.b[start:s.i]
			s.i++
			return raw, escaped
		case c < 0x20:
			s.bad = true
			return nil, false
		case c == '\\':
			escaped = true
			s.i++
			switch s.peek() {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				if _, ok := hex4(s.b, s.i+1); !ok {
					s.bad = true
					return nil, false
				}
				s.i += 5
			default:
				s.bad = true
				return nil, false
			}
		default:
			s.i++
		}
	}
	s.bad = true
	return nil, false
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	if s.bad || s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// take reads c, which must be next.
func (s *scanner) take(c byte) bool {
	if s.peek() != c {
		s.bad = true
		return false
	}
	s.i++
	return true
}

// take0 reads c if it is next.
func (s *scanner) take0(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}
