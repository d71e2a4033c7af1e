// Package transcriptgen writes realistic agent transcripts for the search
// benchmarks: stream-json lines as Claude Code writes them (assistant
// text, tool calls, tool results, usage), with English-like text drawn
// from a fixed vocabulary with Zipf-like word frequencies, and a plain
// [stderr] line now and then. The same seed writes the same bytes.
package transcriptgen

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
)

// common are the most frequent words, in order: the head of the Zipf
// curve is real English; the tail is made-up words (Words).
var common = strings.Fields(`the of and to a in is that it for on with as this be are by
at from or an not was we will file test can if have all but has function
error go code return package when which run so new one data value
change need use should step phase build then check type output now
first also each make line failed passed session agent config add update fix
read write call handler server request response time string int struct
module import path list map value key index query store cache lock event state`)

// Generator writes transcripts. It is not safe for concurrent use.
type Generator struct {
	rng   *rand.Rand
	zipf  *rand.Zipf
	words []string
	buf   []byte
}

// VocabularySize is the number of distinct words.
const VocabularySize = 20000

// New makes a generator seeded with seed.
func New(seed uint64) *Generator {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	g := &Generator{rng: rng, words: Vocabulary()}
	// s = 1.1: the shape of word frequencies in English text.
	g.zipf = rand.NewZipf(rng, 1.1, 1, uint64(len(g.words)-1))
	return g
}

// Vocabulary is the generators' words, most frequent first: the same
// list for every seed, so that a benchmark can pick queries by rank.
func Vocabulary() []string {
	rng := rand.New(rand.NewPCG(1, 2))
	syllables := strings.Fields("ka lo mi ne ru ta vo si pe da gu re no li sa te mo fa zi bu ko ra ve ti")
	seen := map[string]bool{}
	words := make([]string, 0, VocabularySize)
	for _, w := range common {
		if !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	for len(words) < VocabularySize {
		n := 2 + rng.IntN(3)
		var b strings.Builder
		for range n {
			b.WriteString(syllables[rng.IntN(len(syllables))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	return words
}

// Word draws one word.
func (g *Generator) Word() string { return g.words[g.zipf.Uint64()] }

// sentence appends n words, capitalised, with a full stop.
func (g *Generator) sentence(b *strings.Builder, n int) {
	for i := range n {
		w := g.Word()
		if i == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	b.WriteString(". ")
}

func (g *Generator) text(sentences int) string {
	var b strings.Builder
	for range sentences {
		g.sentence(&b, 6+g.rng.IntN(14))
	}
	return strings.TrimSpace(b.String())
}

func (g *Generator) id(prefix string) string {
	return fmt.Sprintf("%s%016x%08x", prefix, g.rng.Uint64(), g.rng.Uint32())
}

// Line appends one transcript line, with its line break, to dst.
func (g *Generator) Line(dst []byte, session string) []byte {
	var v any
	switch r := g.rng.IntN(100); {
	case r < 40:
		v = map[string]any{"type": "assistant", "session_id": session, "message": map[string]any{
			"id": g.id("msg_"), "type": "message", "role": "assistant", "model": "claude-sonnet-4",
			"content": []any{map[string]any{"type": "text", "text": g.text(1 + g.rng.IntN(6))}},
			"usage":   map[string]any{"input_tokens": g.rng.IntN(200000), "output_tokens": g.rng.IntN(4000)},
		}}
	case r < 60:
		v = map[string]any{"type": "assistant", "session_id": session, "message": map[string]any{
			"id": g.id("msg_"), "role": "assistant",
			"content": []any{map[string]any{"type": "tool_use", "id": g.id("toolu_"), "name": "Bash",
				"input": map[string]any{"command": "go test ./" + g.Word() + "/... -run " + g.Word(), "description": g.text(1)}}},
		}}
	case r < 95:
		var out strings.Builder
		for i := range 1 + g.rng.IntN(12) {
			fmt.Fprintf(&out, "%s_test.go:%d: %s\n", g.Word(), 10+i*7, g.text(1))
		}
		v = map[string]any{"type": "user", "session_id": session, "message": map[string]any{
			"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": g.id("toolu_"), "content": out.String()}},
		}}
	case r < 98:
		return append(append(dst, "[stderr] "+g.text(1)...), '\n')
	default:
		v = map[string]any{"type": "result", "subtype": "success", "session_id": session, "result": g.text(2),
			"total_cost_usd": g.rng.Float64(), "usage": map[string]any{"input_tokens": g.rng.IntN(300000), "output_tokens": g.rng.IntN(9000)}}
	}
	line, _ := json.Marshal(v)
	return append(append(dst, line...), '\n')
}

// Write writes about n bytes of whole lines of one transcript to w.
func (g *Generator) Write(w io.Writer, n int64, session string) (int64, error) {
	var written int64
	for written < n {
		g.buf = g.buf[:0]
		for len(g.buf) < 256<<10 && written+int64(len(g.buf)) < n {
			g.buf = g.Line(g.buf, session)
		}
		k, err := w.Write(g.buf)
		written += int64(k)
		if err != nil {
			return written, err
		}
	}
	return written, nil
}
