package mockapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Markers in the last user prompt of a turn change how the Anthropic mock
// answers it.
const (
	// AnthropicFailMarker makes the turn fail with HTTP 500 and an error
	// JSON.
	AnthropicFailMarker = "[FAIL]"
	// AnthropicSlowMarker makes the reply stream slowly: a few deltas,
	// then one carrying AnthropicCheckpointLine, then more deltas for 30 s
	// (see SetSlow) unless the client goes away first.
	AnthropicSlowMarker = "[SLOW-CHECKPOINT]"
)

// AnthropicToolUsePrefix starts a reply (from SetReply or SetReplyFunc)
// that the mock answers with a tool_use block rather than text; see
// AnthropicToolUse.
const AnthropicToolUsePrefix = "[TOOL_USE] "

// AnthropicToolUse is a reply that makes the turn a call of tool name
// with input: a tool_use content block (its id toolu_mock…, streamed as
// content_block_start and input_json_delta, as the API does), and
// stop_reason "tool_use". A client that runs the tool sends its result
// in the next request (AnthropicRequest.ToolResults).
func AnthropicToolUse(name string, input any) string {
	b, _ := json.Marshal(map[string]any{"name": name, "input": input})
	return AnthropicToolUsePrefix + string(b)
}

// AnthropicHugeMarker makes the turn report AnthropicHugeInput input
// tokens, so that a context_tokens trigger fires.
const AnthropicHugeMarker = "[HUGE-CONTEXT]"

// AnthropicHugeInput is the input usage of an AnthropicHugeMarker turn.
const AnthropicHugeInput = 400000

// AnthropicCheckpointLine is the text the slow reply streams in its middle.
const AnthropicCheckpointLine = "[CHECKPOINT] mid-turn note\n"

// Anthropic is a mock of the Anthropic Messages API as Claude Code uses
// it: HEAD (any path: Claude Code 2.1.332 sends HEAD /api/hello unless
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC is set), POST
// /v1/messages?beta=true (streamed as server-sent events, or a plain JSON
// message for a non-streamed call), POST /v1/messages/count_tokens. Every
// request is logged.
//
// The reply of a turn is the configured text, or by default "done: " and
// the first line of the last user prompt (past the "[Feature: name]"
// header pipeline puts on the first prompt of a native session). Usage is
// configurable, and a turn fails when asked (FailNext, FailAfter, or
// AnthropicFailMarker in its prompt).
type Anthropic struct {
	// URL is the base URL to give Claude Code as ANTHROPIC_BASE_URL.
	URL string
	srv *httptest.Server

	mu                        sync.Mutex
	requests                  []AnthropicRequest
	reply                     string
	replyFunc                 ReplyFunc
	inputTokens, outputTokens int
	cacheRead, cacheCreation  int
	failSkip, failNext        int
	failStatus                int
	failMessage               string
	retryAfter                int
	slowFor, slowTick         time.Duration
	counter                   int
	disconnects               disconnects
	usageFromRequest          bool
}

// AnthropicRequest is one request the mock received.
type AnthropicRequest struct {
	Method string
	// Path is the URL path with its query, e.g. /v1/messages?beta=true.
	Path   string
	Header http.Header
	Body   []byte
	// Parsed from a messages request's body.
	Model    string
	Stream   bool
	Messages []AnthropicMessage
	// ToolUses are the tool_use blocks of the conversation's assistant
	// messages, ToolResults the tool_result blocks of its user messages,
	// in order.
	ToolUses    []AnthropicToolUseBlock
	ToolResults []AnthropicToolResult
	// Status is the HTTP status the mock answered with; 0 while the
	// answer is still streaming.
	Status int
}

// AnthropicMessage is one message of a request's conversation, its text
// blocks (and tool results) joined by newlines; Claude Code's
// <system-reminder> blocks and tool calls are left out.
type AnthropicMessage struct {
	Role string
	Text string
}

// AnthropicToolUseBlock is a tool call of the assistant, as a request
// carries it back in the conversation.
type AnthropicToolUseBlock struct {
	ID    string
	Name  string
	Input json.RawMessage
}

// AnthropicToolResult is the result of a tool call, as a client sends it:
// its text blocks (or its string content) joined by newlines.
type AnthropicToolResult struct {
	ToolUseID string
	Content   string
	IsError   bool
}

// IsTurn reports whether the request is a streamed POST /v1/messages, the
// kind that carries a turn of the conversation.
func (r AnthropicRequest) IsTurn() bool {
	return r.Method == http.MethodPost && strings.HasPrefix(r.Path, "/v1/messages") &&
		!strings.HasPrefix(r.Path, "/v1/messages/") && r.Stream
}

// LastUserText is the text of the last user message, without the
// <system-reminder> blocks Claude Code adds.
func (r AnthropicRequest) LastUserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Text
		}
	}
	return ""
}

// HasMessage reports whether a message of role contains text.
func (r AnthropicRequest) HasMessage(role, text string) bool {
	for _, m := range r.Messages {
		if m.Role == role && strings.Contains(m.Text, text) {
			return true
		}
	}
	return false
}

// NewAnthropic starts the mock on 127.0.0.1 with a default usage of 100
// input and 20 output tokens.
func NewAnthropic() *Anthropic {
	a := &Anthropic{inputTokens: 100, outputTokens: 20, failStatus: http.StatusInternalServerError,
		slowFor: 30 * time.Second, slowTick: 200 * time.Millisecond, retryAfter: 1}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	a.URL = a.srv.URL
	return a
}

// Close stops the server; a slow reply in progress ends.
func (a *Anthropic) Close() {
	a.srv.CloseClientConnections()
	a.srv.Close()
}

// Requests returns every request received so far, in order.
func (a *Anthropic) Requests() []AnthropicRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]AnthropicRequest(nil), a.requests...)
}

// Turns returns the requests that carried a turn (see
// AnthropicRequest.IsTurn).
func (a *Anthropic) Turns() []AnthropicRequest {
	var turns []AnthropicRequest
	for _, r := range a.Requests() {
		if r.IsTurn() {
			turns = append(turns, r)
		}
	}
	return turns
}

// SetReply makes every turn answer text; "" restores the echo. The text
// may hold DeltaBreak.
func (a *Anthropic) SetReply(text string) {
	a.mu.Lock()
	a.reply = text
	a.mu.Unlock()
}

// SetReplyFunc makes each request answer what f returns for its prompt
// (the last user text), as a test that answers a compaction prompt one
// way and a task another needs; when f returns "", SetReply's text or the
// echo. nil removes it. f is called outside the mock's lock.
func (a *Anthropic) SetReplyFunc(f ReplyFunc) {
	a.mu.Lock()
	a.replyFunc = f
	a.mu.Unlock()
}

// SetUsage sets the input and output tokens each turn reports. A huge
// input (e.g. 400000) makes the client see a huge context.
func (a *Anthropic) SetUsage(input, output int) {
	a.mu.Lock()
	a.inputTokens, a.outputTokens = input, output
	a.mu.Unlock()
}

// SetUsageFromRequest makes each turn report the size of what it was
// sent as its input tokens (a token per four bytes of the request, as
// count_tokens answers) and of its reply as its output tokens: the
// context a long conversation carries grows as a vendor's would.
func (a *Anthropic) SetUsageFromRequest(on bool) {
	a.mu.Lock()
	a.usageFromRequest = on
	a.mu.Unlock()
}

// SetCacheUsage sets the cache read and cache creation input tokens each
// turn reports, beside the input tokens.
func (a *Anthropic) SetCacheUsage(read, creation int) {
	a.mu.Lock()
	a.cacheRead, a.cacheCreation = read, creation
	a.mu.Unlock()
}

// FailNext makes the next n turns fail with status (500 when 0; 529 is
// "overloaded", 429 "rate limited" with a Retry-After).
func (a *Anthropic) FailNext(n, status int) { a.FailAfter(0, n, status) }

// FailAfter lets the next ok turns through, then makes n turns fail with
// status (500 when 0).
func (a *Anthropic) FailAfter(ok, n, status int) {
	a.mu.Lock()
	if status == 0 {
		status = http.StatusInternalServerError
	}
	a.failSkip, a.failNext, a.failStatus = ok, n, status
	a.mu.Unlock()
}

// SetFailMessage sets the message of the error JSON of a failed turn.
func (a *Anthropic) SetFailMessage(message string) {
	a.mu.Lock()
	a.failMessage = message
	a.mu.Unlock()
}

// SetRetryAfter sets the Retry-After (seconds) of a failed turn with
// status 429; 1 by default. Claude Code waits that long before it retries
// (when CLAUDE_CODE_MAX_RETRIES allows).
func (a *Anthropic) SetRetryAfter(seconds int) {
	a.mu.Lock()
	a.retryAfter = seconds
	a.mu.Unlock()
}

// SetSlow sets how long an AnthropicSlowMarker reply keeps streaming after
// its checkpoint, and how often it sends a delta.
func (a *Anthropic) SetSlow(total, tick time.Duration) {
	a.mu.Lock()
	a.slowFor, a.slowTick = total, tick
	a.mu.Unlock()
}

// Disconnected reports how many slow replies ended because the client
// went away before the end.
func (a *Anthropic) Disconnected() int {
	return a.disconnects.count()
}

// AwaitDisconnected waits until the client has gone away from n slow
// replies, or timeout passed; it reports whether it did.
func (a *Anthropic) AwaitDisconnected(n int, timeout time.Duration) bool {
	return a.disconnects.await(n, timeout)
}

func (a *Anthropic) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := AnthropicRequest{Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body}
	var parsed struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if len(body) > 0 && json.Unmarshal(body, &parsed) == nil {
		req.Model, req.Stream = parsed.Model, parsed.Stream
		for _, m := range parsed.Messages {
			req.Messages = append(req.Messages, AnthropicMessage{Role: m.Role, Text: anthropicText(m.Content)})
			anthropicTools(m.Content, &req)
		}
	}
	// Logged before the answer, so that a slow reply's request is seen
	// while it streams; its status is filled in once answered.
	a.mu.Lock()
	i := len(a.requests)
	a.requests = append(a.requests, req)
	a.mu.Unlock()
	status := a.answer(w, r, req)
	a.mu.Lock()
	a.requests[i].Status = status
	a.mu.Unlock()
}

// anthropicText joins the text blocks of a message's content (a string or
// a list of blocks), leaving out Claude Code's <system-reminder> blocks.
func anthropicText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type    string          `json:"type"`
		Text    string          `json:"text"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var texts []string
	for _, b := range blocks {
		switch {
		case b.Type == "text" && strings.HasPrefix(strings.TrimSpace(b.Text), "<system-reminder>"):
		case b.Type == "text":
			texts = append(texts, b.Text)
		case b.Type == "tool_result" && len(b.Content) > 0:
			if t := anthropicText(b.Content); t != "" {
				texts = append(texts, t)
			}
		}
	}
	return strings.Join(texts, "\n")
}

// anthropicTools adds the tool_use and tool_result blocks of a message's
// content to req.
func anthropicTools(raw json.RawMessage, req *AnthropicRequest) {
	var blocks []struct {
		Type      string          `json:"type"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
		IsError   bool            `json:"is_error"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return
	}
	for _, b := range blocks {
		switch b.Type {
		case "tool_use":
			req.ToolUses = append(req.ToolUses, AnthropicToolUseBlock{ID: b.ID, Name: b.Name, Input: b.Input})
		case "tool_result":
			req.ToolResults = append(req.ToolResults, AnthropicToolResult{ToolUseID: b.ToolUseID, Content: anthropicText(b.Content), IsError: b.IsError})
		}
	}
}

func (a *Anthropic) answer(w http.ResponseWriter, r *http.Request, req AnthropicRequest) int {
	switch {
	case r.Method == http.MethodHead || (r.Method == http.MethodGet && r.URL.Path == "/"):
		w.WriteHeader(http.StatusOK)
		return http.StatusOK
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		// A rough count: a token per four bytes of the request.
		anthropicJSON(w, http.StatusOK, map[string]any{"input_tokens": max(1, len(req.Body)/4)})
		return http.StatusOK
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
	default:
		anthropicJSON(w, http.StatusNotFound, anthropicError("not_found_error", "mockapi: no such endpoint: "+r.Method+" "+r.URL.Path))
		return http.StatusNotFound
	}
	prompt := req.LastUserText()
	a.mu.Lock()
	replyFunc := a.replyFunc
	reply, in, out, cacheRead, cacheCreation := a.reply, a.inputTokens, a.outputTokens, a.cacheRead, a.cacheCreation
	failStatus, failMessage, retryAfter := 0, a.failMessage, a.retryAfter
	switch {
	case !req.Stream:
	case a.failSkip > 0:
		a.failSkip--
	case a.failNext > 0:
		a.failNext--
		failStatus = a.failStatus
	}
	if req.Stream && failStatus == 0 && strings.Contains(prompt, AnthropicFailMarker) {
		failStatus = http.StatusInternalServerError
	}
	if strings.Contains(prompt, AnthropicHugeMarker) {
		in = AnthropicHugeInput
	}
	fromRequest := a.usageFromRequest
	slowFor, slowTick := a.slowFor, a.slowTick
	a.counter++
	id := fmt.Sprintf("msg_mock%06d", a.counter)
	a.mu.Unlock()
	if failStatus != 0 {
		kind := "api_error"
		switch failStatus {
		case 529:
			kind = "overloaded_error"
		case http.StatusTooManyRequests:
			kind = "rate_limit_error"
			w.Header().Set("Retry-After", fmt.Sprint(retryAfter))
		}
		if failMessage == "" {
			failMessage = fmt.Sprintf("mockapi: failing on demand (HTTP %d)", failStatus)
		}
		anthropicJSON(w, failStatus, anthropicError(kind, failMessage))
		return failStatus
	}
	if replyFunc != nil {
		if r := replyFunc(prompt); r != "" {
			reply = r
		}
	}
	if reply == "" {
		reply = "done: " + anthropicFirstLine(prompt)
	}
	var toolUse *anthropicToolCall
	if rest, ok := strings.CutPrefix(reply, AnthropicToolUsePrefix); ok {
		toolUse = &anthropicToolCall{ID: "toolu_mock" + strings.TrimPrefix(id, "msg_mock")}
		if err := json.Unmarshal([]byte(rest), toolUse); err != nil || toolUse.Name == "" {
			anthropicJSON(w, http.StatusInternalServerError, anthropicError("api_error", "mockapi: a bad tool_use reply: "+rest))
			return http.StatusInternalServerError
		}
		if toolUse.Input == nil {
			toolUse.Input = json.RawMessage("{}")
		}
		reply = ""
	}
	pieces, broken := replyPieces(reply)
	reply = withoutBreaks(reply)
	if fromRequest {
		in, out = max(1, len(req.Body)/4), max(1, len(reply)/4)
	}
	model := req.Model
	if model == "" {
		model = "claude-mock"
	}
	usage := map[string]any{"input_tokens": in, "output_tokens": out,
		"cache_read_input_tokens": cacheRead, "cache_creation_input_tokens": cacheCreation}
	if toolUse != nil {
		return a.answerToolUse(w, req, id, model, usage, *toolUse)
	}
	if !req.Stream {
		anthropicJSON(w, http.StatusOK, map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
			"content": []any{map[string]any{"type": "text", "text": reply}}, "stop_reason": "end_turn",
			"stop_sequence": nil, "usage": usage})
		return http.StatusOK
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(event string, data map[string]any) bool {
		b, _ := json.Marshal(data)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	delta := func(text string) bool {
		return send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": text}})
	}
	startUsage := map[string]any{"input_tokens": in, "output_tokens": 1,
		"cache_read_input_tokens": cacheRead, "cache_creation_input_tokens": cacheCreation}
	send("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": id, "type": "message",
		"role": "assistant", "model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": startUsage}})
	send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "text", "text": ""}})
	send("ping", map[string]any{"type": "ping"})
	if strings.Contains(prompt, AnthropicSlowMarker) {
		if !a.slow(r, delta, slowFor, slowTick) {
			a.disconnects.add()
			return http.StatusOK
		}
	}
	// The reply in two deltas, as a real stream splits text, or where
	// its breaks say.
	if !broken {
		half := len(reply) / 2
		for half > 0 && half < len(reply) && !anthropicRuneStart(reply[half]) {
			half++
		}
		pieces = []string{reply[half:]}
		if half > 0 {
			pieces = []string{reply[:half], reply[half:]}
		}
	}
	for _, p := range pieces {
		delta(p)
	}
	send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil}, "usage": usage})
	send("message_stop", map[string]any{"type": "message_stop"})
	return http.StatusOK
}

// anthropicToolCall is the tool call of an AnthropicToolUse reply.
type anthropicToolCall struct {
	ID    string          `json:"-"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// answerToolUse answers a turn with one tool_use block and stop_reason
// "tool_use": streamed as the API streams it (content_block_start with an
// empty input, the input in input_json_delta pieces, content_block_stop),
// or as one message.
func (a *Anthropic) answerToolUse(w http.ResponseWriter, req AnthropicRequest, id, model string, usage map[string]any, call anthropicToolCall) int {
	block := map[string]any{"type": "tool_use", "id": call.ID, "name": call.Name, "input": call.Input}
	if !req.Stream {
		anthropicJSON(w, http.StatusOK, map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
			"content": []any{block}, "stop_reason": "tool_use", "stop_sequence": nil, "usage": usage})
		return http.StatusOK
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(event string, data map[string]any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	startUsage := maps.Clone(usage)
	startUsage["output_tokens"] = 1
	send("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": id, "type": "message",
		"role": "assistant", "model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": startUsage}})
	send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "tool_use", "id": call.ID, "name": call.Name, "input": map[string]any{}}})
	input := string(call.Input)
	half := len(input) / 2
	for _, part := range []string{input[:half], input[half:]} {
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
	}
	send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": "tool_use", "stop_sequence": nil}, "usage": usage})
	send("message_stop", map[string]any{"type": "message_stop"})
	return http.StatusOK
}

// slow streams the long reply of AnthropicSlowMarker up to its end, less
// the final text; it returns false when the client went away.
func (a *Anthropic) slow(r *http.Request, delta func(string) bool, total, tick time.Duration) bool {
	for _, text := range []string{"Working on it.\n", "Step one is done.\n", "Now step two.\n"} {
		if !delta(text) || !anthropicSleep(r, tick) {
			return false
		}
	}
	if !delta(AnthropicCheckpointLine) {
		return false
	}
	deadline := time.Now().Add(total)
	for i := 1; time.Now().Before(deadline); i++ {
		if !anthropicSleep(r, tick) || !delta(fmt.Sprintf("still working (%d)\n", i)) {
			return false
		}
	}
	return true
}

// anthropicFirstLine is the first line of a prompt that says something:
// blank lines and the runner's "[Feature: name]" header are skipped.
func anthropicFirstLine(prompt string) string {
	for _, line := range strings.Split(prompt, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "[Feature: ") {
			return line
		}
	}
	return ""
}

func anthropicSleep(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.Context().Done():
		return false
	case <-t.C:
		return true
	}
}

func anthropicRuneStart(b byte) bool { return b&0xC0 != 0x80 }

func anthropicError(kind, message string) map[string]any {
	return map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": message}}
}

func anthropicJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}
