package mockapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Markers in the last user prompt of a turn change how the Gemini mock
// answers it.
const (
	// GeminiFailMarker makes the turn fail with an HTTP error (500 by
	// default, see SetFailStatus) and a Google error JSON.
	GeminiFailMarker = "[FAIL]"
	// GeminiSlowCheckpointMarker makes the reply stream slowly: a few
	// chunks, then one carrying GeminiCheckpointLine, then more chunks for
	// 30 s (SetSlow) unless the client goes away first.
	GeminiSlowCheckpointMarker = "[SLOW-CHECKPOINT]"
	// GeminiHugeContextMarker makes the turn report GeminiHugePromptTokens
	// prompt tokens, the size of a context that asks for a restart.
	GeminiHugeContextMarker = "[HUGE-CONTEXT]"
)

// GeminiHugePromptTokens is the prompt size a turn marked with
// GeminiHugeContextMarker reports.
const GeminiHugePromptTokens = 400000

// GeminiRetryDelay is the delay a rate-limited turn (SetFailStatus(429))
// asks for, in its message and in a RetryInfo detail.
const GeminiRetryDelay = 42 * time.Second

// GeminiCheckpointLine is the text the slow reply streams in its middle.
const GeminiCheckpointLine = "[CHECKPOINT] mid-turn note\n"

// GeminiRouterReply is what the mock answers the CLI's routing call: a
// simple task, so the router picks the flash model.
const GeminiRouterReply = `{"complexity_reasoning":"a short, simple task","complexity_score":10}`

// Kinds of requests the Gemini CLI makes.
const (
	// GeminiTurn is POST /v1beta/models/<model>:streamGenerateContent: a
	// turn of the conversation.
	GeminiTurn = "turn"
	// GeminiRouter is the generateContent call that scores a prompt's
	// complexity to choose a model (only when no model is given: "auto").
	GeminiRouter = "router"
	// GeminiTitle is the generateContent call asking for a one-line
	// summary of a session, made by gemini --list-sessions for the latest
	// session it has not summarised yet (new messages make it stale again);
	// the summary becomes the session's title.
	GeminiTitle = "title"
	// GeminiOther is any other request (logged, answered with the reply).
	GeminiOther = "other"
)

// Gemini is a mock of the Gemini API (generativelanguage, v1beta) as the
// Gemini CLI uses it: the routing call and the title call
// (POST /v1beta/models/<model>:generateContent) and the turn
// (POST /v1beta/models/<model>:streamGenerateContent?alt=sse, server-sent
// events of GenerateContentResponse chunks). Every request is logged.
//
// The reply of a turn is the configured text, or by default "done: " and
// the first line of the last user prompt. The usage of a turn is reported
// in its last chunk and is configurable; the router's usage is apart
// (50 prompt and 5 candidates tokens), under its own model name, so a test
// can tell them apart. Responses carry modelVersion = the model of the
// URL: the CLI keys its per-model stats by it. Markers in a prompt
// (GeminiFailMarker, GeminiSlowCheckpointMarker, GeminiHugeContextMarker)
// and the setters make a turn fail, stream slowly with a checkpoint, or
// report a huge prompt.
type Gemini struct {
	// URL is the base URL to give the Gemini CLI as GOOGLE_GEMINI_BASE_URL.
	URL string
	srv *httptest.Server

	mu                       sync.Mutex
	requests                 []GeminiRequest
	reply, title             string
	replyFunc                ReplyFunc
	promptTokens, candidates int
	failNext, failStatus     int
	failText                 string
	slowFor, slowTick        time.Duration
	disconnects              disconnects
}

// GeminiRequest is one request the mock received.
type GeminiRequest struct {
	Method string
	// Path is the URL path with its query, e.g.
	// /v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse.
	Path   string
	Header http.Header
	Body   []byte
	// Model and Action come from the path: models/<Model>:<Action>.
	Model, Action string
	// Kind is GeminiTurn, GeminiRouter, GeminiTitle or GeminiOther.
	Kind string
	// Contents is the conversation the request carries.
	Contents []GeminiContent
	// Status is the HTTP status the mock answered with.
	Status int
}

// GeminiContent is one content of a request's conversation: its role
// ("user" or "model") and its text parts (other parts are left out).
type GeminiContent struct {
	Role  string
	Parts []string
}

// Text is the content's text parts joined by newlines.
func (c GeminiContent) Text() string { return strings.Join(c.Parts, "\n") }

// IsTurn reports whether the request is a turn (streamGenerateContent).
func (r GeminiRequest) IsTurn() bool { return r.Kind == GeminiTurn }

// LastUserText is the last text part of the last user content: the
// prompt of the turn (the CLI puts its <session_context> in a part before
// it).
func (r GeminiRequest) LastUserText() string {
	for i := len(r.Contents) - 1; i >= 0; i-- {
		c := r.Contents[i]
		if c.Role == "user" && len(c.Parts) > 0 {
			return c.Parts[len(c.Parts)-1]
		}
	}
	return ""
}

// HasMessage reports whether a content of role ("user" or "model")
// contains text.
func (r GeminiRequest) HasMessage(role, text string) bool {
	for _, c := range r.Contents {
		if c.Role == role && strings.Contains(c.Text(), text) {
			return true
		}
	}
	return false
}

// NewGemini starts the mock on 127.0.0.1 with a default usage of 1200
// prompt and 30 candidates tokens per turn.
func NewGemini() *Gemini {
	g := &Gemini{promptTokens: 1200, candidates: 30, failStatus: http.StatusInternalServerError,
		slowFor: 30 * time.Second, slowTick: 200 * time.Millisecond}
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	g.URL = g.srv.URL
	return g
}

// Close stops the server; a slow reply in progress ends.
func (g *Gemini) Close() {
	g.srv.CloseClientConnections()
	g.srv.Close()
}

// Requests returns every request received so far, in order.
func (g *Gemini) Requests() []GeminiRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]GeminiRequest(nil), g.requests...)
}

// Turns returns the requests that carried a turn.
func (g *Gemini) Turns() []GeminiRequest {
	var turns []GeminiRequest
	for _, r := range g.Requests() {
		if r.IsTurn() {
			turns = append(turns, r)
		}
	}
	return turns
}

// SetReply makes every turn answer text; "" restores the echo. The text
// may hold DeltaBreak.
func (g *Gemini) SetReply(text string) {
	g.mu.Lock()
	g.reply = text
	g.mu.Unlock()
}

// SetReplyFunc makes each turn answer what f returns for its prompt (the
// last user text); when f returns "", SetReply's text or the echo. nil
// removes it. f is called outside the mock's lock; the routing and title
// calls keep their own answers.
func (g *Gemini) SetReplyFunc(f ReplyFunc) {
	g.mu.Lock()
	g.replyFunc = f
	g.mu.Unlock()
}

// SetUsage sets the prompt and candidates (output) tokens every turn
// reports; the total is their sum.
func (g *Gemini) SetUsage(prompt, candidates int) {
	g.mu.Lock()
	g.promptTokens, g.candidates = prompt, candidates
	g.mu.Unlock()
}

// SetTitle sets the one-line summary the title call gets. By default it
// is the first line of the session's first prompt, as a model told to
// keep it would write.
func (g *Gemini) SetTitle(title string) {
	g.mu.Lock()
	g.title = title
	g.mu.Unlock()
}

// FailNext makes the next n turns fail with the failure status, whatever
// their prompt.
func (g *Gemini) FailNext(n int) { g.FailNextContaining("", n) }

// FailNextContaining makes the next n turns whose prompt (the last user
// text) contains text fail with the failure status; other turns pass.
func (g *Gemini) FailNextContaining(text string, n int) {
	g.mu.Lock()
	g.failNext, g.failText = n, text
	g.mu.Unlock()
}

// SetFailStatus sets the HTTP status of a failed turn (500 by default);
// a 429 says to retry in GeminiRetryDelay.
// The CLI retries a 429 or a 5xx (after 5 s, then 10 s, ...) up to its
// general.maxAttempts setting (10 by default); a 4xx other than 429 it
// does not retry.
func (g *Gemini) SetFailStatus(status int) {
	g.mu.Lock()
	g.failStatus = status
	g.mu.Unlock()
}

// SetSlow sets how long a slow reply keeps streaming after its
// checkpoint, and the time between its chunks.
func (g *Gemini) SetSlow(total, tick time.Duration) {
	g.mu.Lock()
	g.slowFor, g.slowTick = total, tick
	g.mu.Unlock()
}

// Disconnected counts the slow replies the client went away from before
// their end.
func (g *Gemini) Disconnected() int {
	return g.disconnects.count()
}

// AwaitDisconnected waits until the client has gone away from n slow
// replies, or timeout passed; it reports whether it did.
func (g *Gemini) AwaitDisconnected(n int, timeout time.Duration) bool {
	return g.disconnects.await(n, timeout)
}

type geminiBody struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			Text *string `json:"text"`
		} `json:"parts"`
	} `json:"contents"`
	GenerationConfig struct {
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
	} `json:"generationConfig"`
}

func (g *Gemini) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := GeminiRequest{Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body, Kind: GeminiOther}
	if rest, ok := strings.CutPrefix(r.URL.Path, "/v1beta/models/"); ok {
		req.Model, req.Action, _ = strings.Cut(rest, ":")
	}
	var parsed geminiBody
	if json.Unmarshal(body, &parsed) == nil {
		for _, c := range parsed.Contents {
			content := GeminiContent{Role: c.Role}
			for _, p := range c.Parts {
				if p.Text != nil {
					content.Parts = append(content.Parts, *p.Text)
				}
			}
			req.Contents = append(req.Contents, content)
		}
	}
	schema := string(parsed.GenerationConfig.ResponseJSONSchema) + string(parsed.GenerationConfig.ResponseSchema)
	switch {
	case req.Action == "streamGenerateContent":
		req.Kind = GeminiTurn
	case req.Action == "generateContent" && strings.Contains(schema, "complexity_score"):
		req.Kind = GeminiRouter
	case req.Action == "generateContent" && strings.Contains(req.LastUserText(), "Summarize the user's primary intent"):
		req.Kind = GeminiTitle
	}
	req.Status = g.answer(w, r, req)
	g.mu.Lock()
	g.requests = append(g.requests, req)
	g.mu.Unlock()
}

// answer writes the response to one request and returns its status.
func (g *Gemini) answer(w http.ResponseWriter, r *http.Request, req GeminiRequest) int {
	g.mu.Lock()
	reply, title, replyFunc := g.reply, g.title, g.replyFunc
	prompt, candidates := g.promptTokens, g.candidates
	slowFor, slowTick := g.slowFor, g.slowTick
	fail := false
	if req.Kind == GeminiTurn {
		counted := g.failNext > 0 && strings.Contains(req.LastUserText(), g.failText)
		if counted {
			g.failNext--
		}
		fail = counted || strings.Contains(req.LastUserText(), GeminiFailMarker)
	}
	failStatus := g.failStatus
	g.mu.Unlock()

	switch {
	case req.Method != http.MethodPost || req.Model == "":
		geminiError(w, http.StatusNotFound, "NOT_FOUND", fmt.Sprintf("the mock does not serve %s %s", req.Method, req.Path))
		return http.StatusNotFound
	case req.Action == "countTokens":
		geminiJSON(w, http.StatusOK, map[string]any{"totalTokens": prompt})
		return http.StatusOK
	case fail && failStatus == http.StatusTooManyRequests:
		geminiJSON(w, failStatus, map[string]any{"error": map[string]any{"code": failStatus, "status": "RESOURCE_EXHAUSTED",
			"message": fmt.Sprintf("Quota exceeded for metric: generate_content_requests, limit: 10. Please retry in %gs.", GeminiRetryDelay.Seconds()),
			"details": []any{map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo",
				"retryDelay": fmt.Sprintf("%gs", GeminiRetryDelay.Seconds())}}}})
		return failStatus
	case fail:
		geminiError(w, failStatus, geminiStatusName(failStatus), "Internal error encountered. (mock: failing on demand)")
		return failStatus
	case req.Kind == GeminiRouter:
		geminiJSON(w, http.StatusOK, geminiResponse(req.Model, GeminiRouterReply, true, 50, 5))
		return http.StatusOK
	case req.Kind == GeminiTitle:
		if title == "" {
			title = geminiFirstPrompt(req.LastUserText())
		}
		geminiJSON(w, http.StatusOK, geminiResponse(req.Model, title, true, 200, 8))
		return http.StatusOK
	}
	if replyFunc != nil {
		if r := replyFunc(req.LastUserText()); r != "" {
			reply = r
		}
	}
	if reply == "" {
		first, _, _ := strings.Cut(req.LastUserText(), "\n")
		reply = "done: " + first
	}
	pieces, broken := replyPieces(reply)
	reply = withoutBreaks(reply)
	if req.Kind != GeminiTurn {
		geminiJSON(w, http.StatusOK, geminiResponse(req.Model, reply, true, prompt, candidates))
		return http.StatusOK
	}
	if strings.Contains(req.LastUserText(), GeminiHugeContextMarker) {
		prompt = GeminiHugePromptTokens
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	chunk := func(v any) bool {
		data, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "data: %s\r\n\r\n", data); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return r.Context().Err() == nil
	}
	if strings.Contains(req.LastUserText(), GeminiSlowCheckpointMarker) {
		if !g.slow(r, chunk, req.Model, slowFor, slowTick) {
			g.disconnects.add()
			return http.StatusOK
		}
	}
	// The reply in two chunks (or where its breaks say), the usage with
	// the last, as the API does.
	if !broken {
		half := len(reply) / 2
		for half > 0 && half < len(reply) && !geminiRuneStart(reply[half]) {
			half++
		}
		pieces = []string{reply[half:]}
		if half > 0 {
			pieces = []string{reply[:half], reply[half:]}
		}
	}
	for i, p := range pieces {
		if i < len(pieces)-1 {
			chunk(geminiResponse(req.Model, p, false, 0, 0))
		} else {
			chunk(geminiResponse(req.Model, p, true, prompt, candidates))
		}
	}
	return http.StatusOK
}

// slow streams a few chunks, the checkpoint line, then a chunk every tick
// for total; it returns false when the client went away first.
func (g *Gemini) slow(r *http.Request, chunk func(any) bool, model string, total, tick time.Duration) bool {
	for i := 1; i <= 3; i++ {
		if !chunk(geminiResponse(model, fmt.Sprintf("working, step %d\n", i), false, 0, 0)) || !geminiSleep(r, tick) {
			return false
		}
	}
	if !chunk(geminiResponse(model, GeminiCheckpointLine, false, 0, 0)) {
		return false
	}
	deadline := time.Now().Add(total)
	for i := 1; time.Now().Before(deadline); i++ {
		if !geminiSleep(r, tick) || !chunk(geminiResponse(model, fmt.Sprintf("still working, %d\n", i), false, 0, 0)) {
			return false
		}
	}
	return true
}

func geminiSleep(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

func geminiRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// geminiResponse is a GenerateContentResponse with one candidate; the last
// chunk of a reply carries the finish reason and the usage.
func geminiResponse(model, text string, last bool, prompt, candidates int) map[string]any {
	candidate := map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}}, "index": 0}
	resp := map[string]any{"candidates": []any{candidate}, "modelVersion": model, "responseId": "mock-response"}
	if last {
		candidate["finishReason"] = "STOP"
		resp["usageMetadata"] = map[string]any{"promptTokenCount": prompt, "candidatesTokenCount": candidates,
			"totalTokenCount": prompt + candidates}
	}
	return resp
}

// geminiFirstPrompt finds, in the title call's prompt, the first line of
// the session's first prompt (the CLI's <session_context> left out),
// at most 80 characters like the summary it asks for.
func geminiFirstPrompt(ask string) string {
	for _, part := range strings.Split(ask, "\nUser: ")[1:] {
		if strings.HasPrefix(part, "<session_context>") {
			continue
		}
		first, _, _ := strings.Cut(part, "\n")
		if runes := []rune(first); len(runes) > 80 {
			first = string(runes[:80])
		}
		return first
	}
	return "A session"
}

func geminiStatusName(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	}
	return "INTERNAL"
}

// geminiError writes a Google API error: {"error": {code, message, status}}.
func geminiError(w http.ResponseWriter, status int, name, message string) {
	geminiJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": message, "status": name}})
}

func geminiJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// GeminiSettings is the ~/.gemini/settings.json the Gemini CLI needs
// against the mock: API-key auth (with environment variables alone, a
// custom base URL selects an auth type headless mode rejects, exit 41), no
// usage statistics, telemetry or update checks, and general.maxAttempts 1
// so that a failed request fails the turn at once: by default the CLI
// retries a 5xx up to 10 times, 5 s to 30 s apart.
const GeminiSettings = `{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false, "maxAttempts": 1}
}
`

// WriteGeminiHome writes GeminiSettings to home/.gemini/settings.json,
// and makes home/tmp for the CLI's temporary files (see Env).
func WriteGeminiHome(home string) error {
	for _, dir := range []string{".gemini", "tmp"} {
		if err := os.MkdirAll(filepath.Join(home, dir), 0o755); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(GeminiSettings), 0o644)
}

// Env is the environment the Gemini CLI needs to talk to the mock, with
// home (see WriteGeminiHome) as its HOME: the base URL, an API key, no
// relaunch of itself in a child process (it halves the start-up), a
// trusted workspace (an untrusted folder stops it, exit 55), and home/tmp
// as TMPDIR, where it writes a gemini-client-error-*.json per API error.
func (g *Gemini) Env(home string) []string {
	return []string{"HOME=" + home, "GOOGLE_GEMINI_BASE_URL=" + g.URL, "GEMINI_API_KEY=test",
		"GEMINI_CLI_NO_RELAUNCH=true", "GEMINI_CLI_TRUST_WORKSPACE=true", "TMPDIR=" + filepath.Join(home, "tmp")}
}
