package mockapi

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// The Anthropic mock as Claude Code sees it (the adapters' tests run the
// real CLI against it; this checks the mock alone).

func post(t *testing.T, url, path, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// sse reads a streamed reply: its event names and the text of its deltas.
func sse(t *testing.T, resp *http.Response) (events []string, text string, usage map[string]any) {
	t.Helper()
	defer resp.Body.Close()
	scanner := bufio.NewScanner(resp.Body)
	for scanner.Scan() {
		line := scanner.Text()
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			events = append(events, name)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var d struct {
				Type  string `json:"type"`
				Delta struct{ Text string }
				Usage map[string]any `json:"usage"`
			}
			if err := json.Unmarshal([]byte(data), &d); err != nil {
				t.Fatalf("data %q: %v", data, err)
			}
			text += d.Delta.Text
			if d.Type == "message_delta" {
				usage = d.Usage
			}
		}
	}
	return events, text, usage
}

const turnBody = `{"model":"claude-x","stream":true,"messages":[
 {"role":"user","content":"first"},
 {"role":"assistant","content":[{"type":"text","text":"done: first"}]},
 {"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"[Feature: f]\n\nsecond %s\nmore"}]}]}`

func TestClaudeMockStreamsUsageAndLogsHistory(t *testing.T) {
	a := NewAnthropic()
	defer a.Close()
	a.SetUsage(1000, 50)
	a.SetCacheUsage(200, 100)
	events, text, usage := sse(t, post(t, a.URL, "/v1/messages?beta=true", strings.Replace(turnBody, "%s", "", 1)))
	want := "message_start content_block_start ping content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if strings.Join(events, " ") != want {
		t.Errorf("events %v", events)
	}
	if text != "done: second" {
		t.Errorf("text %q", text)
	}
	if usage["input_tokens"] != 1000.0 || usage["output_tokens"] != 50.0 || usage["cache_read_input_tokens"] != 200.0 {
		t.Errorf("usage %v", usage)
	}
	turns := a.Turns()
	if len(turns) != 1 || !turns[0].HasMessage("assistant", "done: first") || !turns[0].HasMessage("user", "first") ||
		turns[0].LastUserText() != "[Feature: f]\n\nsecond \nmore" || turns[0].Status != 200 || turns[0].Model != "claude-x" {
		t.Errorf("logged %+v", turns)
	}
	_, _, usage = sse(t, post(t, a.URL, "/v1/messages", strings.Replace(turnBody, "%s", AnthropicHugeMarker, 1)))
	if usage["input_tokens"] != float64(AnthropicHugeInput) {
		t.Errorf("huge context usage %v", usage)
	}
	a.SetReply("fixed")
	if _, text, _ = sse(t, post(t, a.URL, "/v1/messages", strings.Replace(turnBody, "%s", "", 1))); text != "fixed" {
		t.Errorf("text %q", text)
	}
}

func TestClaudeMockFailsOnDemand(t *testing.T) {
	a := NewAnthropic()
	defer a.Close()
	a.FailAfter(1, 2, 529)
	var statuses []int
	for range 4 {
		resp := post(t, a.URL, "/v1/messages", strings.Replace(turnBody, "%s", "", 1))
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		statuses = append(statuses, resp.StatusCode)
		if resp.StatusCode == 529 && !strings.Contains(string(body), `"overloaded_error"`) {
			t.Errorf("error body %s", body)
		}
	}
	if want := []int{200, 529, 529, 200}; !slices.Equal(statuses, want) {
		t.Errorf("statuses %v, want %v", statuses, want)
	}
	resp := post(t, a.URL, "/v1/messages", strings.Replace(turnBody, "%s", AnthropicFailMarker, 1))
	resp.Body.Close()
	if resp.StatusCode != 500 {
		t.Errorf("marker: status %d", resp.StatusCode)
	}
	a.FailNext(1, 429)
	resp = post(t, a.URL, "/v1/messages", strings.Replace(turnBody, "%s", "", 1))
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("429: status %d, retry-after %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

func TestClaudeMockOtherCalls(t *testing.T) {
	a := NewAnthropic()
	defer a.Close()
	req, _ := http.NewRequest(http.MethodHead, a.URL+"/api/hello", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("HEAD: %v %v", resp, err)
	}
	resp := post(t, a.URL, "/v1/messages/count_tokens?beta=true", `{"model":"m","messages":[{"role":"user","content":"hello"}]}`)
	var count struct {
		InputTokens int `json:"input_tokens"`
	}
	json.NewDecoder(resp.Body).Decode(&count)
	resp.Body.Close()
	if count.InputTokens <= 0 {
		t.Errorf("count_tokens %+v", count)
	}
	// A non-streamed call (a title, a summary) gets a whole message, and
	// a failure counter is kept for the turns.
	a.FailNext(1, 500)
	resp = post(t, a.URL, "/v1/messages", `{"model":"m","messages":[{"role":"user","content":"title this"}]}`)
	var msg struct {
		Content []struct{ Text string }
		Usage   map[string]any
	}
	json.NewDecoder(resp.Body).Decode(&msg)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(msg.Content) != 1 || msg.Content[0].Text != "done: title this" || msg.Usage["input_tokens"] != 100.0 {
		t.Errorf("non-streamed: %d %+v", resp.StatusCode, msg)
	}
	if n := len(a.Requests()); n != 3 || len(a.Turns()) != 0 {
		t.Errorf("%d requests, %d turns logged", n, len(a.Turns()))
	}
}

// The slow reply streams its checkpoint, then goes on until the client
// leaves.
func TestClaudeMockSlowCheckpoint(t *testing.T) {
	a := NewAnthropic()
	defer a.Close()
	a.SetSlow(30*time.Second, 10*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, a.URL+"/v1/messages",
		strings.NewReader(strings.Replace(turnBody, "%s", AnthropicSlowMarker, 1)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	reader := bufio.NewReader(resp.Body)
	for {
		line, err := reader.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, `[CHECKPOINT] mid-turn note\n`) {
			break
		}
	}
	if len(a.Turns()) != 1 || a.Turns()[0].Status != 0 {
		t.Errorf("the streaming turn is not logged as in progress: %+v", a.Turns())
	}
	cancel()
	resp.Body.Close()
	if !a.AwaitDisconnected(1, 5*time.Second) || a.Disconnected() != 1 {
		t.Error("the slow reply did not notice the client leave")
	}
}

// A reply made with AnthropicToolUse is a tool_use block, streamed as the
// API streams one; the next request's tool_result is logged with the id.
func TestMCPClaudeMockToolUse(t *testing.T) {
	a := NewAnthropic()
	defer a.Close()
	a.SetReplyFunc(func(prompt string) string {
		if strings.Contains(prompt, "call it") {
			return AnthropicToolUse("mcp__pipeline__status", map[string]string{"session": "s1"})
		}
		return ""
	})
	resp := post(t, a.URL, "/v1/messages", `{"model":"m","stream":true,"messages":[{"role":"user","content":"call it"}]}`)
	defer resp.Body.Close()
	var events []string
	var start struct {
		ContentBlock struct{ Type, ID, Name string } `json:"content_block"`
	}
	var input, stop string
	scanner := bufio.NewScanner(resp.Body)
	for scanner.Scan() {
		line := scanner.Text()
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			events = append(events, name)
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var d struct {
			Type  string `json:"type"`
			Delta struct {
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
		}
		json.Unmarshal([]byte(data), &d)
		switch d.Type {
		case "content_block_start":
			json.Unmarshal([]byte(data), &start)
		case "content_block_delta":
			input += d.Delta.PartialJSON
		case "message_delta":
			stop = d.Delta.StopReason
		}
	}
	if start.ContentBlock.Type != "tool_use" || start.ContentBlock.Name != "mcp__pipeline__status" || !strings.HasPrefix(start.ContentBlock.ID, "toolu_mock") ||
		input != `{"session":"s1"}` || stop != "tool_use" || events[len(events)-1] != "message_stop" {
		t.Fatalf("events %v, block %+v, input %q, stop %q", events, start, input, stop)
	}
	id := start.ContentBlock.ID
	resp = post(t, a.URL, "/v1/messages", `{"model":"m","stream":true,"messages":[{"role":"user","content":"call it"},
 {"role":"assistant","content":[{"type":"tool_use","id":"`+id+`","name":"mcp__pipeline__status","input":{"session":"s1"}}]},
 {"role":"user","content":[{"type":"tool_result","tool_use_id":"`+id+`","content":[{"type":"text","text":"s1 is paused"}]}]}]}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	turns := a.Turns()
	last := turns[len(turns)-1]
	if len(last.ToolUses) != 1 || last.ToolUses[0].ID != id || len(last.ToolResults) != 1 || last.ToolResults[0].ToolUseID != id ||
		last.ToolResults[0].Content != "s1 is paused" {
		t.Fatalf("logged %+v %+v", last.ToolUses, last.ToolResults)
	}
}
