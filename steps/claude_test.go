package steps

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/internal/mockapi"
)

// The parser tests read output captured from the real Claude Code against
// the mock of internal/mockapi, kept in testdata/claude: NAME.jsonl is the
// CLI's standard output as it printed it, NAME.meta.json its arguments,
// exit code and standard error. To capture again (after a version bump of
// the CLI in scripts/install-agent-clis.sh), with the CLI installed:
//
//	PIPELINE_AGENT_CLIS=$PWD/.cache/npm/node_modules/.bin \
//	    go test ./steps -run TestClaudeCapture -capture-claude
var captureClaude = flag.Bool("capture-claude", false, "run the real claude CLI against the mock and rewrite testdata/claude")

const claudeCaptures = "testdata/claude"

// claudeCapture is what NAME.meta.json keeps beside a capture.
type claudeCapture struct {
	Args     []string `json:"args"`
	ExitCode int      `json:"exit_code"`
	Stderr   string   `json:"stderr"`
}

// claudeCLI is the real claude program installed by make test.
func claudeCLI(t *testing.T) string {
	path, _ := mockapi.AgentCLI(t, "claude")
	return path
}

// claudeEnv is the environment of a claude run against the mock: its own
// HOME, nothing of the caller's Anthropic settings.
func claudeEnv(home, url string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "ANTHROPIC_") || strings.HasPrefix(kv, "CLAUDE_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "ANTHROPIC_BASE_URL="+url, "ANTHROPIC_API_KEY=test", "DISABLE_TELEMETRY=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_MAX_RETRIES=0")
	return append(env, extra...)
}

// runClaude runs one turn; onLine sees each line of output as it comes
// and may signal the process.
func runClaude(t *testing.T, bin, dir string, env []string, inv Turn, onLine func(string, *os.Process)) ([]byte, claudeCapture) {
	t.Helper()
	cmd := exec.Command(bin, inv.Args[1:]...)
	cmd.Dir, cmd.Env = dir, env
	if inv.Stdin != "" {
		cmd.Stdin = strings.NewReader(inv.Stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	defer timer.Stop()
	var stdout bytes.Buffer
	scanner := bufio.NewScanner(out)
	scanner.Buffer(nil, 16<<20)
	for scanner.Scan() {
		stdout.Write(scanner.Bytes())
		stdout.WriteByte('\n')
		if onLine != nil {
			onLine(scanner.Text(), cmd.Process)
		}
	}
	err = cmd.Wait()
	meta := claudeCapture{Args: inv.Args, Stderr: stderr.String()}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		meta.ExitCode = exitErr.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.Bytes(), meta
}

// TestClaudeCapture rewrites testdata/claude from the real CLI; it runs
// only with -capture-claude.
func TestClaudeCapture(t *testing.T) {
	if !*captureClaude {
		t.Skip("captures are rewritten with -capture-claude")
	}
	bin := claudeCLI(t)
	if err := os.MkdirAll(claudeCaptures, 0o755); err != nil {
		t.Fatal(err)
	}
	save := func(name string, stdout []byte, meta claudeCapture) {
		t.Helper()
		meta.Args = append([]string{"claude"}, meta.Args[1:]...)
		b, _ := json.MarshalIndent(meta, "", "  ")
		if err := os.WriteFile(filepath.Join(claudeCaptures, name+".jsonl"), stdout, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(claudeCaptures, name+".meta.json"), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: exit %d, %d bytes", name, meta.ExitCode, len(stdout))
	}
	invocation := func(prompt, session string) Turn {
		inv, err := claudeAdapter{}.Prepare(Request{Kind: "claude", Prompt: prompt, Model: "sonnet", SessionID: session})
		if err != nil {
			t.Fatal(err)
		}
		return inv
	}
	sessionOf := func(stdout []byte) string {
		for _, ev := range parseClaude(bytes.Split(stdout, []byte("\n"))) {
			if ev.Kind == EventSession {
				return ev.SessionID
			}
		}
		t.Fatalf("no session id in %s", stdout)
		return ""
	}
	mock := mockapi.NewAnthropic()
	defer mock.Close()
	home, dir := t.TempDir(), t.TempDir()
	env := claudeEnv(home, mock.URL)

	// A turn with cache usage, then the same usage resumed: the result's
	// total_cost_usd counts the whole session.
	mock.SetUsage(1000, 50)
	mock.SetCacheUsage(200, 100)
	out, meta := runClaude(t, bin, dir, env, invocation("write the plan\nwith a second line", ""), nil)
	save("turn", out, meta)
	out, meta = runClaude(t, bin, dir, env, invocation("go on with the plan", sessionOf(out)), nil)
	save("resume", out, meta)

	// Without --include-partial-messages: the text comes only in the
	// assistant message.
	mock.SetUsage(100, 20)
	mock.SetCacheUsage(0, 0)
	inv := invocation("no partial messages", "")
	inv.Args = slices.DeleteFunc(inv.Args, func(a string) bool { return a == "--include-partial-messages" })
	out, meta = runClaude(t, bin, dir, env, inv, nil)
	save("no-partial", out, meta)

	mock.FailNext(1, 500)
	out, meta = runClaude(t, bin, dir, env, invocation("this call fails", ""), nil)
	save("api-error", out, meta)

	mock.FailNext(1, 429)
	mock.SetRetryAfter(1)
	out, meta = runClaude(t, bin, dir, claudeEnv(home, mock.URL, "CLAUDE_CODE_MAX_RETRIES=1"),
		invocation("rate limited once", ""), nil)
	save("rate-limit-retry", out, meta)

	mock.FailNext(1, 429)
	out, meta = runClaude(t, bin, dir, env, invocation("rate limited", ""), nil)
	save("rate-limited", out, meta)

	out, meta = runClaude(t, bin, dir, env, invocation("resume a session that is gone", "0f3c9d7e-5a1b-4c2d-8e9f-123456789abc"), nil)
	save("stale-session", out, meta)

	// A long turn with a checkpoint in its middle: to its end, and
	// interrupted (SIGINT) once the checkpoint is out, as the runner does.
	mock.SetSlow(time.Second, 100*time.Millisecond)
	out, meta = runClaude(t, bin, dir, env, invocation("think long "+mockapi.AnthropicSlowMarker, ""), nil)
	save("checkpoint", out, meta)
	mock.SetSlow(30*time.Second, 100*time.Millisecond)
	interrupted := false
	out, meta = runClaude(t, bin, dir, env, invocation("think long "+mockapi.AnthropicSlowMarker, ""), func(line string, p *os.Process) {
		if !interrupted && strings.Contains(line, "[CHECKPOINT]") {
			interrupted = true
			p.Signal(syscall.SIGINT)
		}
	})
	save("interrupted", out, meta)
}

func parseClaude(lines [][]byte) []Event {
	p := newClaudeParser()
	var events []Event
	for _, line := range lines {
		events = append(events, p.Line(line)...)
	}
	return events
}

// loadCapture returns a capture's lines, their events and its meta.
func loadCapture(t *testing.T, name string) ([][]byte, []Event, claudeCapture) {
	t.Helper()
	out, err := os.ReadFile(filepath.Join(claudeCaptures, name+".jsonl"))
	if err != nil {
		t.Fatalf("%v (capture with: go test ./steps -run TestClaudeCapture -capture-claude)", err)
	}
	var meta claudeCapture
	b, err := os.ReadFile(filepath.Join(claudeCaptures, name+".meta.json"))
	if err == nil {
		err = json.Unmarshal(b, &meta)
	}
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n"))
	return lines, parseClaude(lines), meta
}

// rawResult is the result line of a capture, read apart from the parser.
type rawResult struct {
	SessionID    string  `json:"session_id"`
	IsError      bool    `json:"is_error"`
	Subtype      string  `json:"subtype"`
	Result       string  `json:"result"`
	TotalCostUSD float64 `json:"total_cost_usd"`
}

func resultOf(t *testing.T, lines [][]byte) rawResult {
	t.Helper()
	for _, line := range lines {
		var r struct {
			Type string `json:"type"`
			rawResult
		}
		if json.Unmarshal(line, &r) == nil && r.Type == "result" {
			return r.rawResult
		}
	}
	t.Fatal("no result line")
	return rawResult{}
}

func shown(events []Event) string {
	var b strings.Builder
	for _, ev := range events {
		if ev.Kind == EventText || ev.Kind == EventError {
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}

func lastUsage(events []Event) Event {
	var u Event
	for _, ev := range events {
		if ev.Kind == EventUsage {
			u = ev
		}
	}
	return u
}

func kinds(events []Event, kind EventKind) []Event {
	var list []Event
	for _, ev := range events {
		if ev.Kind == kind {
			list = append(list, ev)
		}
	}
	return list
}

func TestClaudeParserTurn(t *testing.T) {
	lines, events, meta := loadCapture(t, "turn")
	if meta.ExitCode != 0 {
		t.Fatalf("capture exit %d", meta.ExitCode)
	}
	result := resultOf(t, lines)
	sessions := kinds(events, EventSession)
	if len(sessions) != 1 || sessions[0].SessionID != result.SessionID || result.SessionID == "" {
		t.Errorf("session events %+v, want one with %q", sessions, result.SessionID)
	}
	// The text streamed as deltas, shown once (the assistant message and
	// the result repeat it), ending its line.
	if got := shown(events); got != "done: write the plan\n" {
		t.Errorf("shown %q", got)
	}
	// 1000 input + 200 cache read + 100 cache creation, 50 output.
	u := lastUsage(events)
	if u.InputTokens != 1300 || u.OutputTokens != 50 || u.ContextTokens != 1300 {
		t.Errorf("usage %+v, want input 1300, output 50, context 1300", u)
	}
	if u.CostUSD <= 0 || math.Abs(u.CostUSD-result.TotalCostUSD) > 1e-12 {
		t.Errorf("cost %v, want the first turn's total_cost_usd %v", u.CostUSD, result.TotalCostUSD)
	}
	if len(kinds(events, EventError)) != 0 {
		t.Errorf("errors in a good turn: %+v", kinds(events, EventError))
	}
	// Usage is known before the turn ends: message_start comes first.
	for _, ev := range events {
		if ev.Kind == EventText {
			break
		}
		if ev.Kind == EventUsage && ev.InputTokens == 1300 {
			return
		}
	}
	t.Error("no usage before the text: the input of the call is not taken from message_start")
}

// A resumed turn: the same session id, and the cost of this turn alone,
// although total_cost_usd counts the whole session.
func TestClaudeParserResumeCostIsTheTurns(t *testing.T) {
	turnLines, turnEvents, _ := loadCapture(t, "turn")
	lines, events, meta := loadCapture(t, "resume")
	first, result := resultOf(t, turnLines), resultOf(t, lines)
	if !slices.Contains(meta.Args, "--resume") || result.SessionID != first.SessionID {
		t.Fatalf("the capture did not resume %s: %v, session %s", first.SessionID, meta.Args, result.SessionID)
	}
	if math.Abs(result.TotalCostUSD-2*first.TotalCostUSD) > 1e-12 {
		t.Logf("total_cost_usd %v after %v: the CLI no longer counts the whole session?", result.TotalCostUSD, first.TotalCostUSD)
	}
	u, want := lastUsage(events), lastUsage(turnEvents)
	if u.CostUSD != want.CostUSD || u.InputTokens != want.InputTokens || u.OutputTokens != want.OutputTokens {
		t.Errorf("resumed turn usage %+v, want the same as the first turn %+v (not the session's %v)", u, want, result.TotalCostUSD)
	}
	if got := shown(events); got != "done: go on with the plan\n" {
		t.Errorf("shown %q", got)
	}
}

func TestClaudeParserWithoutPartialMessages(t *testing.T) {
	_, events, _ := loadCapture(t, "no-partial")
	if got := shown(events); got != "done: no partial messages\n" {
		t.Errorf("shown %q", got)
	}
	if u := lastUsage(events); u.InputTokens != 100 || u.OutputTokens != 20 || u.CostUSD <= 0 {
		t.Errorf("usage %+v", u)
	}
}

// An API error: subtype says success, is_error says otherwise; the error
// is shown once, not as text.
func TestClaudeParserAPIError(t *testing.T) {
	lines, events, meta := loadCapture(t, "api-error")
	result := resultOf(t, lines)
	if !result.IsError || result.Subtype != "success" || meta.ExitCode != 1 {
		t.Logf("capture: is_error %v, subtype %q, exit %d (the pitfall may be gone)", result.IsError, result.Subtype, meta.ExitCode)
	}
	errs := kinds(events, EventError)
	if len(errs) != 1 || !strings.Contains(errs[0].Text, "API Error: 500") || errs[0].RateLimited {
		t.Fatalf("error events %+v, want one with the API error", errs)
	}
	if strings.Count(shown(events), "API Error") != 1 {
		t.Errorf("shown %q", shown(events))
	}
	if len(kinds(events, EventSession)) != 1 {
		t.Errorf("the failed turn's session is still a session: %+v", kinds(events, EventSession))
	}
	if ClaudeSessionGone([]byte(meta.Stderr+shown(events)), meta.ExitCode) {
		t.Error("an API error taken for a gone session")
	}
}

// A 429 that Claude Code retried by itself, successfully: a line of text,
// not an error (a rate-limited error pauses the session).
func TestClaudeParserRateLimitRetry(t *testing.T) {
	_, events, meta := loadCapture(t, "rate-limit-retry")
	if errs := kinds(events, EventError); len(errs) != 0 {
		t.Errorf("error events %+v, want none: the retry succeeded", errs)
	}
	got := shown(events)
	if !strings.Contains(got, "claude: API error 429 (rate_limit); retry 1 of 1 in ") ||
		!strings.HasSuffix(got, "done: rate limited once\n") || meta.ExitCode != 0 {
		t.Errorf("exit %d, shown %q", meta.ExitCode, got)
	}
}

// A 429 with no retry left: a rate-limited error, once.
func TestClaudeParserRateLimited(t *testing.T) {
	_, events, meta := loadCapture(t, "rate-limited")
	errs := kinds(events, EventError)
	if len(errs) != 1 || !errs[0].RateLimited || !strings.Contains(errs[0].Text, "429") || meta.ExitCode != 1 {
		t.Fatalf("exit %d, error events %+v, want one rate-limited error", meta.ExitCode, errs)
	}
	// A retry said how long to wait: the error says when to come back.
	p := newClaudeParser()
	p.Line([]byte(`{"type":"system","subtype":"api_retry","attempt":1,"max_retries":1,"retry_delay_ms":60000,"error_status":429,"error":"rate_limit"}`))
	var after time.Time
	for _, ev := range p.Line([]byte(`{"type":"assistant","message":{"id":"x","content":[{"type":"text","text":"API Error: Request rejected (429)"}]},"error":"rate_limit","is_api_error_message":true,"api_error_status":429}`)) {
		if ev.Kind == EventError && ev.RateLimited {
			after = ev.ResumeAfter
		}
	}
	if d := time.Until(after); d < 50*time.Second || d > 61*time.Second {
		t.Errorf("resume after %v, want about a minute from now", after)
	}
}

// Recover finds the newest transcript of the working directory whose first
// prompt carries the feature header.
func TestClaudeRecover(t *testing.T) {
	home, dir := t.TempDir(), filepath.Join(t.TempDir(), "my.project_1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	munged := strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			return r
		}
		return '-'
	}, real)
	projects := filepath.Join(home, ".claude", "projects", munged)
	if err := os.MkdirAll(projects, 0o700); err != nil {
		t.Fatal(err)
	}
	transcript := func(id, content string, age time.Duration) {
		lines := `{"type":"queue-operation","operation":"enqueue","sessionId":"` + id + `"}` + "\n" +
			`{"type":"user","message":{"role":"user","content":` + content + `},"sessionId":"` + id + `"}` + "\n" +
			`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"[Feature: f] in a reply"}]}}` + "\n"
		path := filepath.Join(projects, id+".jsonl")
		if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
			t.Fatal(err)
		}
		when := time.Now().Add(-age)
		os.Chtimes(path, when, when)
	}
	transcript("old-f", `"[Feature: f]\n\nfirst"`, 3*time.Hour)
	transcript("new-f", `[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"[Feature: f]\n\nagain"}]`, time.Hour)
	transcript("other", `"[Feature: f2]\n\nnot this one"`, 0)
	transcript("plain", `"no header"`, 0)
	env := []string{"PATH=/bin", "HOME=" + home}
	req := Request{Kind: "claude", Dir: dir}
	if id, ok := (claudeAdapter{}).Recover("f", req, env); !ok || id != "new-f" {
		t.Errorf("recovered %q %v, want new-f", id, ok)
	}
	if id, ok := (claudeAdapter{}).Recover("f2", req, env); !ok || id != "other" {
		t.Errorf("recovered %q %v, want other", id, ok)
	}
	if id, ok := (claudeAdapter{}).Recover("g", req, env); ok {
		t.Errorf("recovered %q for a feature with no session", id)
	}
	if id, ok := (claudeAdapter{}).Recover("f", Request{Kind: "claude", Dir: t.TempDir()}, env); ok {
		t.Errorf("recovered %q from another folder", id)
	}
	if _, ok := (claudeAdapter{}).Recover("f", req, []string{"HOME=" + t.TempDir(), "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude")}); !ok {
		t.Error("CLAUDE_CONFIG_DIR is not where the transcripts are looked for")
	}
	var adapter Adapter = claudeAdapter{}
	if _, ok := adapter.(Recoverer); !ok {
		t.Error("the claude adapter is not a Recoverer")
	}
}

// --resume of a session that is gone: a plain-text line on stderr, exit 1,
// and a result line whose session id must not be kept.
func TestClaudeParserStaleSession(t *testing.T) {
	_, events, meta := loadCapture(t, "stale-session")
	if !ClaudeSessionGone([]byte(meta.Stderr), meta.ExitCode) {
		t.Fatalf("stderr %q, exit %d: not seen as a gone session", meta.Stderr, meta.ExitCode)
	}
	errs := kinds(events, EventError)
	if len(errs) != 1 || !ClaudeSessionGone([]byte(errs[0].Text), meta.ExitCode) {
		t.Errorf("error events %+v, want the gone session's message", errs)
	}
	if s := kinds(events, EventSession); len(s) != 0 {
		t.Errorf("the gone session was reported as the session: %+v", s)
	}
	if ClaudeSessionGone([]byte(meta.Stderr), 0) {
		t.Error("a turn that exited 0 taken for a gone session")
	}
	var adapter Adapter = claudeAdapter{}
	gone, ok := adapter.(SessionChecker)
	if !ok || !gone.SessionGone([]byte(meta.Stderr), meta.ExitCode) {
		t.Error("the adapter does not tell the engine the session is gone")
	}
}

// The checkpoint streams in the middle of the turn: the parser shows it
// before the turn's end (the assistant message and the result).
func TestClaudeParserCheckpointMidTurn(t *testing.T) {
	lines, _, _ := loadCapture(t, "checkpoint")
	p := newClaudeParser()
	var scanner OutputScanner
	for i, line := range lines {
		for _, ev := range p.Line(line) {
			if ev.Kind == EventText {
				scanner.Write([]byte(ev.Text))
			}
		}
		if scanner.Checkpoint {
			if bytes.Contains(line, []byte(`"type":"result"`)) || bytes.Contains(line, []byte(`"type":"assistant"`)) {
				t.Fatalf("the checkpoint was seen only at line %d, the end of the turn", i+1)
			}
			if note := scanner.CheckpointNote(); note != "mid-turn note" {
				t.Errorf("note %q", note)
			}
			return
		}
	}
	t.Fatal("no checkpoint")
}

// Interrupted (SIGINT, as a trigger stops a step): the result's usage is
// zero, this turn's usage is in model_usage_since_last_result.
func TestClaudeParserInterrupted(t *testing.T) {
	_, events, _ := loadCapture(t, "interrupted")
	text := shown(events)
	if !strings.Contains(text, mockapi.AnthropicCheckpointLine) || strings.Count(text, "[CHECKPOINT]") != 1 {
		t.Errorf("shown %q", text)
	}
	errs := kinds(events, EventError)
	if len(errs) != 1 || errs[0].Text != "claude: the turn was interrupted\n" {
		t.Errorf("errors %+v", errs)
	}
	if u := lastUsage(events); u.InputTokens != 100 || u.OutputTokens == 0 || u.CostUSD <= 0 || u.ContextTokens != 100 {
		t.Errorf("usage %+v", u)
	}
}

// Every capture: no text shown twice, usage never goes down.
func TestClaudeParserCapturesShowTextOnce(t *testing.T) {
	names, _ := filepath.Glob(filepath.Join(claudeCaptures, "*.jsonl"))
	if len(names) < 9 {
		t.Fatalf("%d captures in %s", len(names), claudeCaptures)
	}
	for _, name := range names {
		name = strings.TrimSuffix(filepath.Base(name), ".jsonl")
		_, events, _ := loadCapture(t, name)
		text := shown(events)
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "done: ") && strings.Count(text, line) != 1 {
				t.Errorf("%s: %q shown %d times", name, line, strings.Count(text, line))
			}
		}
		tokens := 0
		for _, ev := range events {
			if ev.Kind == EventUsage {
				if ev.InputTokens+ev.OutputTokens < tokens && ev.InputTokens+ev.OutputTokens != 0 {
					t.Errorf("%s: usage went down to %+v from %d", name, ev, tokens)
				}
				tokens = max(tokens, ev.InputTokens+ev.OutputTokens)
			}
		}
	}
}

func TestClaudeInvocation(t *testing.T) {
	inv, err := claudeAdapter{}.Prepare(Request{Kind: "claude", Prompt: "-starts with a dash", Model: "opus",
		SessionID: "abc", Args: []string{"--add-dir", "a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages",
		"--model", "opus", "--resume", "abc", "--add-dir", "a", "b", "--", "-starts with a dash"}
	if !slices.Equal(inv.Args, want) || inv.Stdin != "" {
		t.Errorf("args %q, stdin %q", inv.Args, inv.Stdin)
	}
	inv, _ = claudeAdapter{}.Prepare(Request{Kind: "claude", Prompt: "hi"})
	if slices.Contains(inv.Args, "--model") || slices.Contains(inv.Args, "--resume") {
		t.Errorf("args %q", inv.Args)
	}
	long := strings.Repeat("x", claudeStdinPrompt)
	inv, _ = claudeAdapter{}.Prepare(Request{Kind: "claude", Prompt: long})
	if inv.Stdin != long || slices.Contains(inv.Args, long) || slices.Contains(inv.Args, "--") {
		t.Errorf("a long prompt goes to standard input; args %d", len(inv.Args))
	}
	if a, err := AdapterFor("claude"); err != nil || a == nil {
		t.Errorf("claude is not registered: %v", err)
	}
}

func TestClaudeParserPlainLinesAndGarbage(t *testing.T) {
	p := newClaudeParser()
	events := p.Line([]byte("a warning in plain text"))
	if len(events) != 1 || events[0].Kind != EventText || events[0].Text != "a warning in plain text\n" {
		t.Errorf("plain line: %+v", events)
	}
	for _, line := range []string{"", "{", `{"type":"stream_event","event":"x"}`, `{"type":"assistant","message":[]}`,
		`{"type":"result","usage":null}`, `{"type":"user","message":{"role":"user"}}`} {
		p.Line([]byte(line)) // no panic
	}
}

// Fork resumes the session under a new id (--fork-session); without a
// session there is nothing to fork. Claude and Codex fork; Gemini CLI
// cannot.
func TestClaudeForkSession(t *testing.T) {
	inv, err := claudeAdapter{}.Prepare(Request{Kind: "claude", Prompt: "go on", SessionID: "abc", Fork: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages",
		"--resume", "abc", "--fork-session", "--", "go on"}
	if !slices.Equal(inv.Args, want) {
		t.Errorf("args %q", inv.Args)
	}
	inv, _ = claudeAdapter{}.Prepare(Request{Kind: "claude", Prompt: "go on", Fork: true})
	if slices.Contains(inv.Args, "--fork-session") {
		t.Errorf("a fork of no session: args %q", inv.Args)
	}
	for kind, forks := range map[string]bool{"claude": true, "codex": true, "gemini": false, "command": false} {
		a, err := AdapterFor(kind)
		if err != nil {
			t.Fatal(err)
		}
		if CanFork(a) != forks {
			t.Errorf("%s: CanFork %v", kind, !forks)
		}
	}
}

// A tool call shows as it happens, on a line of its own, as logs renders
// it; it is not the agent's text (its arguments may hold anything).
func TestClaudeParserShowsToolCallsAsTheyHappen(t *testing.T) {
	p := newClaudeParser()
	var shown strings.Builder
	var tools []string
	for _, line := range []string{
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Looking"}},"api_message_id":"m1"}`,
		`{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"grep -r '[CHECKPOINT]' ."}}]}}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"none"}]}}`,
	} {
		for _, ev := range p.Line([]byte(line)) {
			switch ev.Kind {
			case EventTool:
				tools = append(tools, ev.Text)
				shown.WriteString(ev.Text)
			case EventText:
				if strings.Contains(ev.Text, "[CHECKPOINT]") {
					t.Errorf("the call's arguments came out as the agent's text: %q", ev.Text)
				}
				shown.WriteString(ev.Text)
			}
		}
	}
	if want := "Looking\n▸ Bash grep -r '[CHECKPOINT]' .\n"; shown.String() != want || len(tools) != 1 {
		t.Errorf("shown %q (tools %q), want %q", shown.String(), tools, want)
	}
}
