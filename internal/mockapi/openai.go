package mockapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Markers in the last user message of a request change how the OpenAI
// mock answers it.
const (
	// OpenAIFailMarker answers the request with HTTP 500 and an error
	// JSON.
	OpenAIFailMarker = "[FAIL]"
	// OpenAISlowCheckpointMarker streams a few deltas, then
	// OpenAICheckpointLine, then keeps streaming (a dot every half
	// second) for 30 s (see SetSlowFor) unless the client goes away.
	OpenAISlowCheckpointMarker = "[SLOW-CHECKPOINT]"
	// OpenAIHugeContextMarker reports OpenAIHugeInputTokens input tokens
	// for the request, so that a context_tokens trigger fires.
	OpenAIHugeContextMarker = "[HUGE-CONTEXT]"
)

// OpenAIHugeInputTokens is the input a OpenAIHugeContextMarker request
// reports.
const OpenAIHugeInputTokens = 400000

// OpenAICheckpointLine is what the slow reply streams in its middle.
const OpenAICheckpointLine = "[CHECKPOINT] mid-turn note\n"

// OpenAIUsage is the token usage the OpenAI mock reports for one
// response, in the Responses API's terms: input (cached included) and
// output (reasoning included).
type OpenAIUsage struct {
	InputTokens, CachedTokens, OutputTokens, ReasoningTokens int
}

// OpenAIDefaultUsage is what the OpenAI mock reports unless told
// otherwise.
var OpenAIDefaultUsage = OpenAIUsage{InputTokens: 1200, CachedTokens: 200, OutputTokens: 30, ReasoningTokens: 5}

// OpenAIRequest is one request the OpenAI mock received, and what it
// answered.
type OpenAIRequest struct {
	Method, Path string
	Header       http.Header
	Body         []byte
	// Status is the HTTP status the mock answered; Reply and Usage are
	// what a successful response streams (a slow reply's Reply is
	// complete once it ended).
	Status int
	Reply  string
	Usage  OpenAIUsage
}

// IsTurn reports whether the request is a POST /v1/responses, the kind
// that carries a turn.
func (r OpenAIRequest) IsTurn() bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/responses")
}

// LastUserText is the text of the last user message of the request's
// input: the prompt of the turn.
func (r OpenAIRequest) LastUserText() string {
	items := r.Input()
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].Role == "user" {
			return items[i].Text
		}
	}
	return ""
}

// OpenAIItem is one message of a request's input, its text parts joined
// (other kinds of item have a Type and no Role).
type OpenAIItem struct {
	Type, Role, Text string
}

// Input is the request's input: the conversation Codex sends, its
// history included.
func (r OpenAIRequest) Input() []OpenAIItem {
	var req struct {
		Input []struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"input"`
	}
	if json.Unmarshal(r.Body, &req) != nil {
		return nil
	}
	items := make([]OpenAIItem, 0, len(req.Input))
	for _, in := range req.Input {
		item := OpenAIItem{Type: in.Type, Role: in.Role}
		var parts []struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(in.Content, &item.Text) != nil && json.Unmarshal(in.Content, &parts) == nil {
			var b strings.Builder
			for _, p := range parts {
				b.WriteString(p.Text)
			}
			item.Text = b.String()
		}
		items = append(items, item)
	}
	return items
}

// HasMessage reports whether a message of role in the request's input
// contains text.
func (r OpenAIRequest) HasMessage(role, text string) bool {
	for _, item := range r.Input() {
		if item.Role == role && strings.Contains(item.Text, text) {
			return true
		}
	}
	return false
}

// OpenAI is a mock of the OpenAI Responses API as Codex uses it: POST
// /v1/responses with stream: true, answered with server-sent events
// (response.created, response.output_item.added, response.output_text.delta,
// response.output_item.done, response.completed with usage). Every
// request is logged.
//
// The reply is the configured text, or by default "done: " and the first
// line of the last user message. A request fails with HTTP 500 when asked
// (FailNext, FailNextWith, or OpenAIFailMarker in its prompt).
type OpenAI struct {
	// URL is the server's base, http://127.0.0.1:PORT; Codex's base_url
	// is URL + "/v1".
	URL string
	srv *httptest.Server

	mu         sync.Mutex
	requests   []OpenAIRequest
	reply      string
	replyFunc  ReplyFunc
	usage      OpenAIUsage
	failNext   int
	failMatch  string
	failStatus int
	failBody   string
	failHeader http.Header
	slowFor    time.Duration
	counter    int
}

// NewOpenAI starts the mock on 127.0.0.1.
func NewOpenAI() *OpenAI {
	o := &OpenAI{usage: OpenAIDefaultUsage, slowFor: 30 * time.Second}
	o.srv = httptest.NewServer(http.HandlerFunc(o.serve))
	o.URL = o.srv.URL
	return o
}

// Close stops the server; a slow reply in progress ends.
func (o *OpenAI) Close() {
	o.srv.CloseClientConnections()
	o.srv.Close()
}

// Requests returns every request received so far, in order.
func (o *OpenAI) Requests() []OpenAIRequest {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]OpenAIRequest(nil), o.requests...)
}

// Turns returns the POST /v1/responses requests received so far.
func (o *OpenAI) Turns() []OpenAIRequest {
	var turns []OpenAIRequest
	for _, r := range o.Requests() {
		if r.IsTurn() {
			turns = append(turns, r)
		}
	}
	return turns
}

// SetReply makes the later responses stream text; "" restores the
// default. The text may hold DeltaBreak.
func (o *OpenAI) SetReply(text string) {
	o.mu.Lock()
	o.reply = text
	o.mu.Unlock()
}

// SetReplyFunc makes each response stream what f returns for its prompt
// (the last user message); when f returns "", SetReply's text or the
// default. nil removes it. f is called outside the mock's lock.
func (o *OpenAI) SetReplyFunc(f ReplyFunc) {
	o.mu.Lock()
	o.replyFunc = f
	o.mu.Unlock()
}

// SetUsage makes the later responses report u.
func (o *OpenAI) SetUsage(u OpenAIUsage) {
	o.mu.Lock()
	o.usage = u
	o.mu.Unlock()
}

// FailNext makes the next n responses requests fail with HTTP 500.
func (o *OpenAI) FailNext(n int) { o.FailNextWith("", n) }

// FailNextWith makes the next n responses requests whose prompt (the last
// user message) contains text fail with HTTP 500; the others are
// answered.
func (o *OpenAI) FailNextWith(text string, n int) {
	o.mu.Lock()
	o.failNext, o.failMatch = n, text
	o.mu.Unlock()
}

// SetFailure sets how a failing request is answered: its HTTP status,
// its body ("" for an error JSON saying "mock: failing on demand") and
// extra headers (Retry-After, x-ratelimit-*). The default is 500.
func (o *OpenAI) SetFailure(status int, body string, header http.Header) {
	o.mu.Lock()
	o.failStatus, o.failBody, o.failHeader = status, body, header
	o.mu.Unlock()
}

// SetSlowFor sets how long a slow reply keeps streaming after its
// checkpoint line.
func (o *OpenAI) SetSlowFor(d time.Duration) {
	o.mu.Lock()
	o.slowFor = d
	o.mu.Unlock()
}

func (o *OpenAI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := OpenAIRequest{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	if !rec.IsTurn() {
		rec.Status = http.StatusNotFound
		o.log(rec)
		openaiError(w, http.StatusNotFound, "invalid_request_error", "mock: no such endpoint "+r.URL.Path)
		return
	}
	prompt := rec.LastUserText()
	o.mu.Lock()
	o.counter++
	n := o.counter
	failNext := o.failNext > 0 && strings.Contains(prompt, o.failMatch)
	if failNext {
		o.failNext--
	}
	fail := failNext || strings.Contains(prompt, OpenAIFailMarker)
	text, usage, slowFor, replyFunc := o.reply, o.usage, o.slowFor, o.replyFunc
	status, failBody, failHeader := o.failStatus, o.failBody, o.failHeader
	o.mu.Unlock()
	if fail {
		if status == 0 {
			status = http.StatusInternalServerError
		}
		rec.Status = status
		o.log(rec)
		for k, v := range failHeader {
			w.Header()[k] = v
		}
		if failBody != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			io.WriteString(w, failBody)
			return
		}
		openaiError(w, status, "server_error", "mock: failing on demand")
		return
	}
	if replyFunc != nil {
		if r := replyFunc(prompt); r != "" {
			text = r
		}
	}
	if text == "" {
		first, _, _ := strings.Cut(prompt, "\n")
		text = "done: " + first
	}
	pieces, broken := replyPieces(text)
	if !broken {
		pieces = openaiDeltas(text)
	}
	text = withoutBreaks(text)
	slow := strings.Contains(prompt, OpenAISlowCheckpointMarker)
	if slow {
		text = "Working on it.\n" + OpenAICheckpointLine + "Still working"
	}
	if strings.Contains(prompt, OpenAIHugeContextMarker) {
		usage.InputTokens = OpenAIHugeInputTokens
	}

	rec.Status, rec.Reply, rec.Usage = http.StatusOK, text, usage
	logged := o.log(rec)

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(event string, data map[string]any) bool {
		data["type"] = event
		b, _ := json.Marshal(data)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return r.Context().Err() == nil
	}
	responseID, itemID := fmt.Sprintf("resp_mock_%d", n), fmt.Sprintf("msg_mock_%d", n)
	response := map[string]any{"id": responseID, "object": "response", "status": "in_progress", "output": []any{}}
	item := func(status, text string) map[string]any {
		content := []any{}
		if status == "completed" {
			content = []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}
		}
		return map[string]any{"id": itemID, "type": "message", "role": "assistant", "status": status, "content": content}
	}
	delta := func(s string) bool {
		return send("response.output_text.delta",
			map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "delta": s})
	}
	ok := send("response.created", map[string]any{"response": response}) &&
		send("response.output_item.added", map[string]any{"output_index": 0, "item": item("in_progress", "")})
	if slow {
		// The checkpoint line, then a dot every half second until slowFor
		// passes or the client leaves.
		before, after, _ := strings.Cut(text, OpenAICheckpointLine)
		ok = ok && delta(before) && delta(OpenAICheckpointLine)
		text = before + OpenAICheckpointLine
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		end := time.After(slowFor)
	wait:
		for ok {
			select {
			case <-r.Context().Done():
				ok = false
			case <-end:
				break wait
			case <-tick.C:
				ok = delta(".")
				text += "."
			}
		}
		ok = ok && delta(after)
		text += after
		o.mu.Lock()
		o.requests[logged].Reply = text
		o.mu.Unlock()
	} else {
		for _, d := range pieces {
			ok = ok && delta(d)
		}
	}
	if !ok {
		return
	}
	done := item("completed", text)
	if !send("response.output_item.done", map[string]any{"output_index": 0, "item": done}) {
		return
	}
	response["status"] = "completed"
	response["output"] = []any{done}
	response["usage"] = map[string]any{
		"input_tokens":          usage.InputTokens,
		"input_tokens_details":  map[string]any{"cached_tokens": usage.CachedTokens},
		"output_tokens":         usage.OutputTokens,
		"output_tokens_details": map[string]any{"reasoning_tokens": usage.ReasoningTokens},
		"total_tokens":          usage.InputTokens + usage.OutputTokens,
	}
	send("response.completed", map[string]any{"response": response})
}

// log records r and returns its index.
func (o *OpenAI) log(r OpenAIRequest) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests = append(o.requests, r)
	return len(o.requests) - 1
}

func openaiError(w http.ResponseWriter, status int, kind, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": kind, "param": nil, "code": kind}})
	w.Write(b)
}

// openaiDeltas cuts text into the deltas a reply streams: word by word.
func openaiDeltas(text string) []string {
	var parts []string
	for text != "" {
		i := strings.IndexAny(text, " \n")
		if i < 0 {
			parts = append(parts, text)
			break
		}
		parts = append(parts, text[:i+1])
		text = text[i+1:]
	}
	return parts
}

// CodexConfig is a $CODEX_HOME/config.toml that points Codex at the mock:
// provider "mock" over the Responses API, its key read from MOCK_API_KEY
// (any value), no retries (Codex would otherwise retry a failed request 4
// times and a failed stream 5 times: 30 requests and ~25 s for one
// failure), no update check, no analytics, no plugins.
func (o *OpenAI) CodexConfig() string {
	return `model = "gpt-5.5"
model_provider = "mock"
check_for_update_on_startup = false

[model_providers.mock]
name = "mock"
base_url = "` + o.URL + `/v1"
env_key = "MOCK_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[features]
plugins = false
`
}
