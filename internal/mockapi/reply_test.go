package mockapi

import (
	"bufio"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// ssePieces reads a streamed reply's data lines and returns the text
// pieces piece picks out of each, in order.
func ssePieces(t *testing.T, resp *http.Response, piece func(data []byte) (string, bool)) []string {
	t.Helper()
	defer resp.Body.Close()
	var pieces []string
	scanner := bufio.NewScanner(resp.Body)
	for scanner.Scan() {
		if data, ok := strings.CutPrefix(strings.TrimRight(scanner.Text(), "\r"), "data: "); ok {
			if p, ok := piece([]byte(data)); ok {
				pieces = append(pieces, p)
			}
		}
	}
	return pieces
}

// replyByPrompt answers a compaction prompt with JSON and anything else
// with markers, one of them broken across two pieces.
func replyByPrompt(prompt string) string {
	if strings.Contains(prompt, "working set") {
		return `{"summary":"s"}`
	}
	if strings.Contains(prompt, "echo") {
		return ""
	}
	return "[DECI" + DeltaBreak + "SION] a\n[TODO] b\n"
}

func TestReplyFuncAndDeltaBreaks(t *testing.T) {
	want := []string{"[DECI", "SION] a\n[TODO] b\n"}
	t.Run("anthropic", func(t *testing.T) {
		a := NewAnthropic()
		defer a.Close()
		a.SetReply("fixed")
		a.SetReplyFunc(replyByPrompt)
		turn := func(prompt string) []string {
			body, _ := json.Marshal(map[string]any{"model": "m", "stream": true,
				"messages": []any{map[string]any{"role": "user", "content": prompt}}})
			return ssePieces(t, post(t, a.URL, "/v1/messages", string(body)), func(data []byte) (string, bool) {
				var d struct {
					Type  string
					Delta struct{ Text string }
				}
				json.Unmarshal(data, &d)
				return d.Delta.Text, d.Type == "content_block_delta"
			})
		}
		if got := turn("do it"); !slices.Equal(got, want) {
			t.Errorf("deltas %q, want %q", got, want)
		}
		if got := strings.Join(turn("write your working set"), ""); got != `{"summary":"s"}` {
			t.Errorf("compaction answer %q", got)
		}
		if got := strings.Join(turn("echo"), ""); got != "fixed" {
			t.Errorf("with \"\" from the func: %q, want SetReply's", got)
		}
	})
	t.Run("gemini", func(t *testing.T) {
		g := NewGemini()
		defer g.Close()
		g.SetReplyFunc(replyByPrompt)
		turn := func(prompt string) []string {
			body, _ := json.Marshal(map[string]any{"contents": []any{map[string]any{"role": "user",
				"parts": []any{map[string]any{"text": prompt}}}}})
			return ssePieces(t, post(t, g.URL, "/v1beta/models/gemini-x:streamGenerateContent?alt=sse", string(body)),
				func(data []byte) (string, bool) {
					var d struct {
						Candidates []struct {
							Content struct{ Parts []struct{ Text string } }
						}
					}
					json.Unmarshal(data, &d)
					return d.Candidates[0].Content.Parts[0].Text, true
				})
		}
		if got := turn("do it"); !slices.Equal(got, want) {
			t.Errorf("chunks %q, want %q", got, want)
		}
		if got := strings.Join(turn("echo this"), ""); got != "done: echo this" {
			t.Errorf("with \"\" from the func: %q, want the echo", got)
		}
	})
	t.Run("openai", func(t *testing.T) {
		o := NewOpenAI()
		defer o.Close()
		o.SetReplyFunc(replyByPrompt)
		var whole string
		body, _ := json.Marshal(map[string]any{"stream": true, "input": []any{map[string]any{"role": "user", "content": "do it"}}})
		got := ssePieces(t, post(t, o.URL, "/v1/responses", string(body)), func(data []byte) (string, bool) {
			var d struct {
				Type  string
				Delta string
				Item  struct{ Content []struct{ Text string } }
			}
			json.Unmarshal(data, &d)
			if d.Type == "response.output_item.done" {
				whole = d.Item.Content[0].Text
			}
			return d.Delta, d.Type == "response.output_text.delta"
		})
		if !slices.Equal(got, want) || whole != "[DECISION] a\n[TODO] b\n" {
			t.Errorf("deltas %q, want %q; item %q", got, want, whole)
		}
		if r := o.Turns(); len(r) != 1 || r[0].Reply != whole {
			t.Errorf("logged reply %q", r[0].Reply)
		}
	})
}
