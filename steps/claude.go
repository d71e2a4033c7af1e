package steps

import (
	"github.com/pipeline-dev/pipeline/internal/transcript"

	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// The claude adapter runs Claude Code headless, one turn per step:
//
//	claude -p --output-format stream-json --verbose --include-partial-messages
//	       [--model M] [--resume ID [--fork-session]] [agent args...] -- PROMPT
//
// --include-partial-messages streams the text as the API sends it
// (stream_event lines), so a [CHECKPOINT] in the middle of a long turn is
// seen, and the step stopped, before the turn ends. The prompt comes last,
// after "--", so that neither a prompt starting with "-" nor an agent
// argument taking a list of values (--add-dir, --allowedTools) can take it
// for an option; a prompt too long for one argument goes to standard input
// instead.
//
// Claude Code keeps its sessions under ~/.claude/projects/<working
// directory>/: the runner runs every step in the folder of phases.yaml, so
// a native session is resumed from the directory it was made in. (2.1.332
// also finds a session made elsewhere, and tells the model the directory
// changed; older versions answered "No conversation found with session
// ID" on stderr, exit 1: see ClaudeSessionGone.)

type claudeAdapter struct{}

// claudeStdinPrompt is the size past which the prompt goes to standard
// input: Linux refuses a single argument of 128 KiB or more.
const claudeStdinPrompt = 100 << 10

func (claudeAdapter) Prepare(r Request) (Turn, error) {
	args := []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages"}
	if r.Model != "" {
		args = append(args, "--model", r.Model)
	}
	if r.SessionID != "" {
		args = append(args, "--resume", r.SessionID)
		if r.Fork {
			args = append(args, "--fork-session")
		}
	}
	if r.ReadOnly {
		args = append(args, withoutFlags(r.Args, []string{"--permission-mode"},
			[]string{"--dangerously-skip-permissions", "--allow-dangerously-skip-permissions"})...)
		args = append(args, "--permission-mode", "plan")
	} else {
		args = append(args, r.Args...)
	}
	if len(r.Prompt) >= claudeStdinPrompt {
		return Turn{Args: args, Stdin: r.Prompt, Parser: newClaudeParser()}, nil
	}
	return Turn{Args: append(args, "--", r.Prompt), Parser: newClaudeParser()}, nil
}

// Forks: --fork-session resumes a session under a new id, the original's
// transcript left as it was.
func (claudeAdapter) Forks() bool { return true }

// SessionGone reports whether a turn failed because the native session it
// resumed is gone; the engine may then run the turn again in a fresh
// session (see ClaudeSessionGone).
func (claudeAdapter) SessionGone(stderr []byte, exitCode int) bool {
	return ClaudeSessionGone(stderr, exitCode)
}

// Recover finds Claude Code's own session of a feature when the session
// store has none (lost, or made by hand): the newest transcript of the
// working directory whose first prompt starts with the feature header.
// Transcripts are $CLAUDE_CONFIG_DIR (or ~/.claude) /projects/<the
// directory, every character but letters and digits as "-">/<session
// id>.jsonl.
func (claudeAdapter) Recover(feature string, r Request, env []string) (string, bool) {
	if feature == "" {
		return "", false
	}
	dirs := claudeProjectDirs(r.Dir, env)
	type transcript struct {
		id   string
		path string
		mod  time.Time
	}
	var list []transcript
	for _, dir := range dirs {
		entries, _ := os.ReadDir(dir)
		for _, entry := range entries {
			name := entry.Name()
			if entry.IsDir() || !strings.HasSuffix(name, ".jsonl") {
				continue
			}
			info, err := entry.Info()
			if err != nil {
				continue
			}
			list = append(list, transcript{strings.TrimSuffix(name, ".jsonl"), filepath.Join(dir, name), info.ModTime()})
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].mod.After(list[j].mod) })
	header := FeatureHeader(feature)
	for _, t := range list {
		if prompt, ok := claudeFirstPrompt(t.path); ok && strings.HasPrefix(prompt, header) {
			return t.id, true
		}
	}
	return "", false
}

// claudeProjectDirs is where Claude Code keeps the transcripts of the
// sessions made in dir (a folder name past 200 characters is cut and
// given a suffix: every folder with that start is taken).
func claudeProjectDirs(dir string, env []string) []string {
	var home, config string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		} else if v, ok := strings.CutPrefix(kv, "CLAUDE_CONFIG_DIR="); ok {
			config = v
		}
	}
	if config == "" {
		if home == "" {
			return nil
		}
		config = filepath.Join(home, ".claude")
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	name := []byte(dir)
	for i, c := range name {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			name[i] = '-'
		}
	}
	projects := filepath.Join(config, "projects")
	if len(name) <= 200 {
		return []string{filepath.Join(projects, string(name))}
	}
	dirs, _ := filepath.Glob(filepath.Join(projects, string(name[:200])+"*"))
	return dirs
}

// claudeFirstPrompt reads the first user prompt of a session transcript.
func claudeFirstPrompt(path string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	reader := bufio.NewReaderSize(f, 64<<10)
	for range 200 {
		line, err := reader.ReadBytes('\n')
		if bytes.Contains(line, []byte(`"type":"user"`)) {
			var entry struct {
				Type    string `json:"type"`
				Message struct {
					Content json.RawMessage `json:"content"`
				} `json:"message"`
			}
			if json.Unmarshal(line, &entry) == nil && entry.Type == "user" {
				return claudeContentText(entry.Message.Content), true
			}
		}
		if err != nil {
			break
		}
	}
	return "", false
}

// claudeContentText is the text of a message's content, a string or a
// list of blocks (Claude Code's <system-reminder> blocks left out).
func claudeContentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &blocks)
	var texts []string
	for _, b := range blocks {
		if b.Type == "text" && !strings.HasPrefix(strings.TrimSpace(b.Text), "<system-reminder>") {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// ClaudeSessionGoneMessage is what Claude Code says, on stderr as plain
// text and in the errors of its result line, when --resume names a
// session it does not have.
const ClaudeSessionGoneMessage = "No conversation found with session ID"

// ClaudeSessionGone reports whether Claude Code ended (exit code not 0)
// because the session given to --resume is gone: deleted, made on another
// machine or under another HOME, or (before 2.1.332) in another working
// directory. stderr is the turn's standard error (or its output: the
// parser's error event carries the same message). The turn did nothing;
// it should run again without --resume, with the resume context.
func ClaudeSessionGone(stderr []byte, exitCode int) bool {
	return exitCode != 0 && bytes.Contains(stderr, []byte(ClaudeSessionGoneMessage))
}

// claudeParser reads the stream-json output of one turn.
//
// Text: the text deltas of stream_event lines as they come; an assistant
// message whose text was streamed is not shown again, one that was not
// (no --include-partial-messages, or a message Claude Code made itself)
// is. Usage: each API call's usage as it streams, and the result line's
// at the end; context tokens are the input (with cache) of the latest
// call. Errors: an API error comes as an assistant message with
// is_api_error_message and a result with is_error true, while subtype
// still says "success"; a failed resume as a result with subtype
// error_during_execution and errors.
type claudeParser struct {
	sessionID string
	// streamed holds the API messages whose text came as deltas.
	streamed map[string]bool
	// current is the API message streaming now, and textBlock whether its
	// open content block is text.
	current   string
	textBlock bool
	// endsLine is false when the last text shown did not end its line.
	endsLine bool
	// calls is the usage of each API call of the turn, by message id.
	calls   map[string]claudeUsage
	order   []string
	context int
	cost    float64
	// shownErrors keeps the error texts shown, to show each once.
	shownErrors map[string]bool
	// retryAt is when Claude Code's latest retry of an API call was due.
	retryAt time.Time
	tools   toolCalls
}

func newClaudeParser() *claudeParser {
	return &claudeParser{streamed: map[string]bool{}, calls: map[string]claudeUsage{}, shownErrors: map[string]bool{},
		endsLine: true}
}

// claudeUsage is the usage block of the Messages API, as Claude Code
// passes it on.
type claudeUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

func (u claudeUsage) input() int {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

// claudeModelUsage is an entry of the result's modelUsage and
// model_usage_since_last_result.
type claudeModelUsage struct {
	InputTokens              int     `json:"inputTokens"`
	OutputTokens             int     `json:"outputTokens"`
	CacheReadInputTokens     int     `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int     `json:"cacheCreationInputTokens"`
	CostUSD                  float64 `json:"costUSD"`
}

type claudeLine struct {
	Type            string          `json:"type"`
	Subtype         string          `json:"subtype"`
	SessionID       string          `json:"session_id"`
	ParentToolUseID *string         `json:"parent_tool_use_id"`
	APIMessageID    string          `json:"api_message_id"`
	Event           json.RawMessage `json:"event"`
	Message         json.RawMessage `json:"message"`

	// assistant: an API error Claude Code turned into a message.
	IsAPIErrorMessage bool   `json:"is_api_error_message"`
	Error             string `json:"error"`
	APIErrorStatus    int    `json:"api_error_status"`

	// system/api_retry
	Attempt      int `json:"attempt"`
	MaxRetries   int `json:"max_retries"`
	RetryDelayMS int `json:"retry_delay_ms"`
	ErrorStatus  int `json:"error_status"`

	// result
	IsError                   bool                        `json:"is_error"`
	Result                    string                      `json:"result"`
	Errors                    []string                    `json:"errors"`
	TerminalReason            string                      `json:"terminal_reason"`
	TotalCostUSD              float64                     `json:"total_cost_usd"`
	Usage                     *claudeUsage                `json:"usage"`
	ModelUsageSinceLastResult map[string]claudeModelUsage `json:"model_usage_since_last_result"`
}

type claudeMessage struct {
	ID      string       `json:"id"`
	Role    string       `json:"role"`
	Usage   *claudeUsage `json:"usage"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

type claudeStreamEvent struct {
	Type    string        `json:"type"`
	Message claudeMessage `json:"message"`
	Delta   struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"delta"`
	ContentBlock struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content_block"`
	Usage *claudeUsage `json:"usage"`
}

func (p *claudeParser) Line(line []byte) []Event {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	var l claudeLine
	if line[0] != '{' || json.Unmarshal(line, &l) != nil || l.Type == "" {
		// Not a line of stream-json: a warning printed as it is.
		return p.text(string(line) + "\n")
	}
	switch l.Type {
	case "system":
		return p.system(l)
	case "stream_event":
		return p.streamEvent(l)
	case "assistant":
		events := p.assistant(l)
		tools := p.tools.events(transcript.Claude, line, !p.endsLine)
		if len(tools) > 0 {
			p.endsLine = true
		}
		return append(events, tools...)
	case "result":
		return p.result(l)
	}
	// user (tool results, interruptions), rate_limit_event and the rest
	// tell nothing the run needs.
	return nil
}

func (p *claudeParser) system(l claudeLine) []Event {
	switch l.Subtype {
	case "init":
		if l.SessionID != "" && l.SessionID != p.sessionID {
			p.sessionID = l.SessionID
			return []Event{{Kind: EventSession, SessionID: l.SessionID}}
		}
	case "api_retry":
		// Claude Code retries by itself (CLAUDE_CODE_MAX_RETRIES): a line
		// of text, not an error, as the turn may yet succeed. The delay
		// asked is kept for the error if the last retry fails too.
		delay := time.Duration(l.RetryDelayMS) * time.Millisecond
		if delay > 0 {
			p.retryAt = time.Now().Add(delay)
		}
		text := fmt.Sprintf("claude: API error %d (%s); retry %d of %d in %s\n", l.ErrorStatus, l.Error,
			l.Attempt, l.MaxRetries, delay.Round(100*time.Millisecond))
		return p.withLineEnd(Event{Kind: EventText, Text: text})
	}
	return nil
}

func (p *claudeParser) streamEvent(l claudeLine) []Event {
	var e claudeStreamEvent
	if json.Unmarshal(l.Event, &e) != nil {
		return nil
	}
	mainThread := l.ParentToolUseID == nil
	switch e.Type {
	case "message_start":
		p.current = e.Message.ID
		if p.current == "" {
			p.current = l.APIMessageID
		}
		if e.Message.Usage != nil {
			return p.callUsage(p.current, *e.Message.Usage, mainThread)
		}
	case "content_block_start":
		p.textBlock = e.ContentBlock.Type == "text"
		if p.textBlock && e.ContentBlock.Text != "" {
			p.streamed[p.messageID(l)] = true
			return p.text(e.ContentBlock.Text)
		}
	case "content_block_delta":
		if e.Delta.Type == "text_delta" && e.Delta.Text != "" {
			p.streamed[p.messageID(l)] = true
			return p.text(e.Delta.Text)
		}
	case "content_block_stop":
		if p.textBlock {
			p.textBlock = false
			if !p.endsLine {
				return p.text("\n")
			}
		}
	case "message_delta":
		if e.Usage != nil {
			// The final output tokens of the call; the input comes with
			// message_start and, in newer APIs, again here.
			u := p.calls[p.messageID(l)]
			u.OutputTokens = e.Usage.OutputTokens
			if e.Usage.input() > 0 {
				u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens =
					e.Usage.InputTokens, e.Usage.CacheReadInputTokens, e.Usage.CacheCreationInputTokens
			}
			return p.callUsage(p.messageID(l), u, mainThread)
		}
	}
	return nil
}

func (p *claudeParser) messageID(l claudeLine) string {
	if l.APIMessageID != "" {
		return l.APIMessageID
	}
	return p.current
}

func (p *claudeParser) assistant(l claudeLine) []Event {
	var m claudeMessage
	if json.Unmarshal(l.Message, &m) != nil {
		return nil
	}
	var texts []string
	for _, c := range m.Content {
		if c.Type == "text" && c.Text != "" {
			texts = append(texts, c.Text)
		}
	}
	text := strings.Join(texts, "\n")
	if l.IsAPIErrorMessage || l.Error != "" {
		// Claude Code's own message for a failed API call: the error.
		if text == "" {
			text = "claude: API error: " + l.Error
		}
		return p.errorEvent(p.apiError(text, l.APIErrorStatus == 429 || l.Error == "rate_limit"))
	}
	var events []Event
	if m.Usage != nil && m.ID != "" {
		if _, seen := p.calls[m.ID]; !seen {
			events = append(events, p.callUsage(m.ID, *m.Usage, l.ParentToolUseID == nil)...)
		}
	}
	if text != "" && !p.streamed[m.ID] {
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		events = append(events, p.text(text)...)
	}
	return events
}

func (p *claudeParser) result(l claudeLine) []Event {
	var events []Event
	if l.SessionID != "" && l.SessionID != p.sessionID && !p.sessionGone(l) {
		p.sessionID = l.SessionID
		events = append(events, Event{Kind: EventSession, SessionID: l.SessionID})
	}
	// The turn's usage and cost. total_cost_usd and modelUsage count the
	// whole native session, earlier turns included when it was resumed;
	// model_usage_since_last_result is this turn's (and the only one with
	// figures when the turn was interrupted: usage is zero then).
	in, out, cost := 0, 0, l.TotalCostUSD
	if len(l.ModelUsageSinceLastResult) > 0 {
		cost = 0
		for _, name := range sortedModelNames(l.ModelUsageSinceLastResult) {
			u := l.ModelUsageSinceLastResult[name]
			in += u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
			out += u.OutputTokens
			cost += u.CostUSD
		}
	} else if l.Usage != nil {
		in, out = l.Usage.input(), l.Usage.OutputTokens
	}
	if in == 0 && out == 0 {
		in, out = p.turnUsage()
	}
	p.cost = cost
	if p.context == 0 && l.Usage != nil {
		p.context = l.Usage.input()
	}
	events = append(events, Event{Kind: EventUsage, InputTokens: in, OutputTokens: out, ContextTokens: p.context,
		CostUSD: p.cost})
	if l.IsError {
		var text string
		switch {
		case strings.HasPrefix(l.TerminalReason, "aborted"):
			text = "claude: the turn was interrupted"
		case l.Result != "":
			text = l.Result
		case len(l.Errors) > 0:
			text = strings.Join(l.Errors, "\n")
		default:
			text = "claude: the turn failed (" + l.Subtype + ")"
		}
		events = append(events, p.errorEvent(p.apiError(text, l.APIErrorStatus == 429))...)
	}
	events = append(events, Event{Kind: EventResult, Text: l.Result})
	return events
}

// apiError is an error event; a rate limit says when to come back when a
// retry of the turn said how long to wait.
func (p *claudeParser) apiError(text string, rateLimited bool) Event {
	ev := Event{Kind: EventError, Text: text, RateLimited: rateLimited}
	if rateLimited && p.retryAt.After(time.Now()) {
		ev.ResumeAfter = p.retryAt
	}
	return ev
}

// sessionGone reports a result line saying the resumed session is gone:
// its session id is the one that is not there, not one to keep.
func (p *claudeParser) sessionGone(l claudeLine) bool {
	for _, e := range l.Errors {
		if strings.Contains(e, ClaudeSessionGoneMessage) {
			return true
		}
	}
	return false
}

func sortedModelNames(m map[string]claudeModelUsage) []string {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// callUsage records the usage of one API call and reports the turn's.
func (p *claudeParser) callUsage(id string, u claudeUsage, mainThread bool) []Event {
	if id == "" {
		id = fmt.Sprintf("call-%d", len(p.order))
	}
	if _, seen := p.calls[id]; !seen {
		p.order = append(p.order, id)
	}
	p.calls[id] = u
	if mainThread && u.input() > 0 {
		p.context = u.input()
	}
	in, out := p.turnUsage()
	return []Event{{Kind: EventUsage, InputTokens: in, OutputTokens: out, ContextTokens: p.context, CostUSD: p.cost}}
}

func (p *claudeParser) turnUsage() (in, out int) {
	for _, id := range p.order {
		u := p.calls[id]
		in += u.input()
		out += u.OutputTokens
	}
	return in, out
}

func (p *claudeParser) text(text string) []Event {
	p.endsLine = strings.HasSuffix(text, "\n")
	return []Event{{Kind: EventText, Text: text}}
}

// errorEvent shows an error once, on a line of its own.
func (p *claudeParser) errorEvent(ev Event) []Event {
	key := strings.TrimSpace(ev.Text)
	if p.shownErrors[key] {
		return nil
	}
	p.shownErrors[key] = true
	if !strings.HasSuffix(ev.Text, "\n") {
		ev.Text += "\n"
	}
	return p.withLineEnd(ev)
}

// withLineEnd puts an event's text on a line of its own.
func (p *claudeParser) withLineEnd(ev Event) []Event {
	var events []Event
	if !p.endsLine {
		events = append(events, Event{Kind: EventText, Text: "\n"})
	}
	p.endsLine = true
	return append(events, ev)
}
