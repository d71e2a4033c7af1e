package mockapi

import "strings"

// DeltaBreak in a reply cuts it where it stands into the pieces the mock
// streams: the deltas of the Anthropic and OpenAI mocks, the chunks of
// the Gemini mock. "[DECI" + DeltaBreak + "SION] x" streams "[DECI", then
// "SION] x", so that a test sees how the client puts a line together. The
// breaks themselves are never sent. A reply without one streams as each
// mock cuts it by default.
const DeltaBreak = "\x1f"

// ReplyFunc answers a turn from its prompt, the text of the last user
// message; "" leaves the turn to the reply set with SetReply, or the
// default echo.
type ReplyFunc func(prompt string) string

// replyPieces cuts a reply at its breaks; ok is false when it has none.
// Empty pieces are left out.
func replyPieces(reply string) (pieces []string, ok bool) {
	if !strings.Contains(reply, DeltaBreak) {
		return nil, false
	}
	for _, p := range strings.Split(reply, DeltaBreak) {
		if p != "" {
			pieces = append(pieces, p)
		}
	}
	return pieces, true
}

// withoutBreaks is a reply as a whole message carries it.
func withoutBreaks(reply string) string { return strings.ReplaceAll(reply, DeltaBreak, "") }
