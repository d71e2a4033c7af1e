package steps

import (
	"github.com/pipeline-dev/pipeline/internal/lazy"
	"github.com/pipeline-dev/pipeline/internal/transcript"
	"github.com/pipeline-dev/pipeline/internal/web"

	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// geminiAdapter runs the Gemini CLI (@google/gemini-cli, checked with
// 0.61.0) headless, one turn per step:
//
//	gemini --prompt=PROMPT -o stream-json [-m MODEL] [-r SESSION] --skip-trust ARGS...
//
// (--prompt=PROMPT is -p PROMPT, safe for a prompt that starts with a
// dash.) --skip-trust because an untrusted folder stops the CLI (exit 55).
// A session is resumed by its uuid (-r); sessions are kept per project
// (the folder the CLI runs in), so a step must run in the folder of its
// earlier turns. The output is JSON lines: init (the session id), message
// (the user's prompt, then the assistant's text in deltas), tool_use,
// tool_result, error (warnings and errors met on the way) and result (the
// status and the turn's stats). Errors found before the turn starts (an
// unknown session, exit 42; bad auth, exit 41) are plain text on stderr.
// An API error ends the turn with a result of status error and the HTTP
// status as exit code (500 exits 244, 429 exits 173), after the CLI's own
// retries (general.maxAttempts in its settings, 10 by default, 5 s to
// 30 s apart). Stopped by SIGINT, it exits 0 with no result line.
//
// Gemini reports no cost: CostUSD stays 0.
type geminiAdapter struct{}

// geminiMaxArg is how long a prompt may be as an argument: Linux refuses
// a single argument over 128 KiB (MAX_ARG_STRLEN). A longer prompt goes
// to standard input, which the CLI puts before the -p text.
const geminiMaxArg = 100 << 10

func (geminiAdapter) Prepare(r Request) (Turn, error) {
	inv := Turn{Parser: &geminiParser{}}
	prompt := r.Prompt
	if len(prompt) > geminiMaxArg {
		inv.Stdin, prompt = prompt, " "
	}
	// --prompt=TEXT rather than -p TEXT: a prompt that starts with a dash
	// would be read as an option.
	inv.Args = []string{"gemini", "--prompt=" + prompt, "-o", "stream-json"}
	if r.Model != "" {
		inv.Args = append(inv.Args, "-m", r.Model)
	}
	if r.SessionID != "" {
		inv.Args = append(inv.Args, "-r", r.SessionID)
	}
	inv.Args = append(inv.Args, "--skip-trust")
	if r.ReadOnly {
		inv.Args = append(inv.Args, withoutFlags(r.Args, []string{"--approval-mode"}, []string{"-y", "--yolo"})...)
		inv.Args = append(inv.Args, "--approval-mode", "plan")
	} else {
		inv.Args = append(inv.Args, r.Args...)
	}
	return inv, nil
}

// SessionGone: see GeminiSessionGone.
func (geminiAdapter) SessionGone(stderr []byte, exitCode int) bool {
	return GeminiSessionGone(stderr, exitCode)
}

// geminiListTimeout bounds gemini --list-sessions (a start-up of the CLI,
// a few seconds).
const geminiListTimeout = 60 * time.Second

// Recover finds the CLI's own session of a feature: it runs gemini
// --list-sessions in the step's folder (sessions are kept per project)
// and takes the latest session of the last week titled with the feature's
// header (FindGeminiSession).
//
// Listing has a side effect that would defeat it: the CLI first asks the
// model for a one-line summary of the latest session that has none, and
// the summary replaces the first prompt as the session's title. So the
// listing runs with GOOGLE_GEMINI_BASE_URL pointed at a listener of ours
// that refuses every request (HTTP 400, which the CLI does not retry):
// the summary fails, the CLI marks the session as done with, and the
// title stays the first prompt. That holds with an API key; with a Google
// login the CLI ignores the base URL, and a summary may still retitle the
// latest session.
func (geminiAdapter) Recover(feature string, r Request, env []string) (string, bool) {
	if feature == "" {
		return "", false
	}
	addr, stop, err := web.Refuse(`{"error":{"code":400,"message":"pipeline lists sessions without summaries","status":"INVALID_ARGUMENT"}}`)
	if err != nil {
		return "", false
	}
	defer stop()

	ctx, cancel := context.WithTimeout(context.Background(), geminiListTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "gemini", "--list-sessions")
	cmd.Dir = r.Dir
	cmd.Env = append(append([]string(nil), env...), "GOOGLE_GEMINI_BASE_URL=http://"+addr,
		"GEMINI_CLI_NO_RELAUNCH=true")
	cmd.SysProcAttr = groupAttr()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, _ := cmd.Output()
	return FindGeminiSession(GeminiListSessions(string(out)), feature, time.Now())
}

// geminiParser reads the CLI's stream-json output of one turn.
//
// The init line names the session, but the parser reports it only once the
// turn got a reply (text, a tool call, or success): when the API fails
// before that, the CLI takes the prompt back out of the session, and a new
// session is left empty, one that -r refuses ("No previous sessions found",
// exit 42). A turn stopped mid-reply (SIGINT: exit 0, no result line)
// keeps its prompt in the session, and resumes.
type geminiParser struct {
	// model is the model the init line names: the one given with -m, or
	// "auto" when the CLI routes each turn.
	model string
	// session is the init line's session id; reported is set once it
	// was reported.
	session  string
	reported bool
	// midLine is set while the text shown so far does not end a line.
	midLine bool
	tools   toolCalls
}

type geminiLine struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	SessionID string `json:"session_id"`
	Model     string `json:"model"`
	Role      string `json:"role"`
	Content   string `json:"content"`
	ToolName  string `json:"tool_name"`
	Status    string `json:"status"`
	Severity  string `json:"severity"`
	Message   string `json:"message"`
	Error     *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	Stats *geminiStats `json:"stats"`
}

// geminiStats is the result's stats: the turn's tokens, in total and per
// model.
type geminiStats struct {
	geminiTokens
	Models map[string]geminiTokens `json:"models"`
}

type geminiTokens struct {
	TotalTokens  int `json:"total_tokens"`
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

func (p *geminiParser) Line(line []byte) []Event {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	var l geminiLine
	if line[0] != '{' || json.Unmarshal(line, &l) != nil || l.Type == "" {
		// Not the stream: a message of the CLI's own, shown as it is.
		return []Event{p.text(string(line) + "\n")}
	}
	switch l.Type {
	case "init":
		p.model, p.session = l.Model, l.SessionID
	case "message":
		// The user's prompt is echoed first: not the agent's output (a
		// [CHECKPOINT] in the prompt must not count).
		if l.Role == "assistant" && l.Content != "" {
			return append(p.replied(), p.text(l.Content))
		}
	case "tool_use":
		events := append(p.replied(), p.tools.events(transcript.Gemini, line, p.midLine)...)
		p.midLine = false
		return events
	case "tool_result":
		if l.Status == "error" && l.Error != nil {
			return []Event{p.line("tool error: " + l.Error.Message)}
		}
	case "error":
		if l.Severity == "warning" {
			return []Event{p.line("warning: " + l.Message)}
		}
		return []Event{p.failure(l.Message, l.Timestamp)}
	case "result":
		var events []Event
		if l.Status == "success" {
			events = p.replied()
		}
		if l.Stats != nil {
			events = append(events, p.usage(l.Stats))
		}
		if l.Status == "error" || l.Error != nil {
			message := "the turn failed"
			if l.Error != nil {
				message = l.Error.Message
			}
			events = append(events, p.failure(message, l.Timestamp))
		}
		return append(events, Event{Kind: EventResult, Text: l.Status})
	}
	return nil
}

// replied reports the session, the first time the turn shows a reply.
func (p *geminiParser) replied() []Event {
	if p.reported || p.session == "" {
		return nil
	}
	p.reported = true
	return []Event{{Kind: EventSession, SessionID: p.session}}
}

// geminiRateLimit is how the CLI words a 429 (RESOURCE_EXHAUSTED) after
// its own retries: "[API Error: Quota exceeded for metric: ... Please
// retry in 42s.\nSuggested retry after 42s.]\nPlease wait and try again
// later. ...", exit 173 (429 & 0xff).
var geminiRateLimit = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)quota|resource.exhausted|rate.?limit|\b429\b|exhausted your`)
}}

// geminiRetryIn is the delay a rate limit asks for.
var geminiRetryIn = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)retry (?:in|after) ([0-9]+(?:\.[0-9]+)?)(ms|s)\b`)
}}

// failure is an error event; a rate limit comes with the time to resume,
// counted from the line's timestamp.
func (p *geminiParser) failure(message, timestamp string) Event {
	ev := p.line("error: " + message)
	ev.Kind = EventError
	if geminiRateLimit.Get().MatchString(message) {
		ev.RateLimited = true
		at, err := time.Parse(time.RFC3339Nano, timestamp)
		if m := geminiRetryIn.Get().FindStringSubmatch(message); m != nil && err == nil {
			n, _ := strconv.ParseFloat(m[1], 64)
			unit := time.Second
			if m[2] == "ms" {
				unit = time.Millisecond
			}
			ev.ResumeAfter = at.Add(time.Duration(n * float64(unit)))
		}
	}
	return ev
}

// text is an event of text the agent wrote.
func (p *geminiParser) text(s string) Event {
	p.midLine = !strings.HasSuffix(s, "\n")
	return Event{Kind: EventText, Text: s}
}

// line is a line of its own, after the text so far.
func (p *geminiParser) line(s string) Event {
	if p.midLine {
		s = "\n" + s
	}
	return p.text(strings.TrimRight(s, "\n") + "\n")
}

// usage counts the tokens of the turn's main model. The CLI keeps a stats
// entry per model, keyed by the model the API answered as: with no -m
// ("auto"), a routing call to a flash-lite model scores the prompt first,
// and its tokens are an entry of their own beside the main model's. The
// totals at the top level add them up; the main model's entry alone is
// what the turn cost in context. So: the entry of the model the init line
// named (or of a version of it, "gemini-2.5-flash-001"); else, in auto
// mode, every entry but the flash-lite router's (a turn may fall back
// from one main model to another).
//
// Input is the prompt tokens (cached ones included); output is the
// candidates tokens plus the thinking tokens, which the CLI leaves out of
// output_tokens but bills (they are in total_tokens). ContextTokens is the
// main model's prompt tokens: the size of the context for a turn of one
// request; a turn that called tools made one request per round and the CLI
// adds their prompts up, so there it is an upper bound. Gemini reports no
// cost: CostUSD is 0.
func (p *geminiParser) usage(s *geminiStats) Event {
	main := geminiMainModels(s.Models, p.model)
	if len(main) == 0 {
		main = []geminiTokens{s.geminiTokens}
	}
	ev := Event{Kind: EventUsage}
	for _, t := range main {
		ev.InputTokens += t.InputTokens
		ev.OutputTokens += max(t.OutputTokens, t.TotalTokens-t.InputTokens)
		ev.ContextTokens += t.InputTokens
	}
	return ev
}

func geminiMainModels(models map[string]geminiTokens, named string) []geminiTokens {
	names := make([]string, 0, len(models))
	for name := range models {
		names = append(names, name)
	}
	sort.Strings(names)
	router := func(name string) bool {
		return strings.Contains(name, "flash-lite") && !strings.Contains(named, "flash-lite")
	}
	var exact, versions, rest, all []geminiTokens
	for _, name := range names {
		t := models[name]
		all = append(all, t)
		switch {
		case named == "" || named == "auto":
		case name == named:
			exact = append(exact, t)
		case strings.HasPrefix(name, named+"-") && !router(name):
			versions = append(versions, t)
		}
		if !strings.Contains(name, "flash-lite") {
			rest = append(rest, t)
		}
	}
	for _, list := range [][]geminiTokens{exact, versions, rest} {
		if len(list) > 0 {
			return list
		}
	}
	return all
}

// GeminiSession is one session gemini --list-sessions shows.
type GeminiSession struct {
	// Index is the session's number in the list (the CLI's -r accepts it
	// too, but it shifts as sessions come and go: use the uuid).
	Index int
	// Title is the session's summary, or its first prompt (on one line,
	// non-ASCII characters removed, cut at 100 characters).
	Title string
	// Age is how long ago the session was last updated, as the CLI
	// rounds it: "Just now" is 0, "5 minutes ago" 5m, "2 days ago" 48h.
	Age  time.Duration
	UUID string
}

// geminiSessionLine is a line of gemini --list-sessions:
// "  1. <title> (<relative time>[, current]) [<uuid>]".
var geminiSessionLine = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp {
	return regexp.MustCompile(`^\s*(\d+)\. (.*) \((Just now|(\d+) (minute|hour|day)s? ago)(, current)?\) \[([0-9a-fA-F-]{36})\]\s*$`)
}}

// GeminiListSessions reads the output of gemini --list-sessions: a header
// line ("Available sessions for this project (N):"), then a line per
// session, oldest first. Lines of another shape (the header, the CLI's
// warnings) are left out, so it reads "No previous sessions found for this
// project." as no sessions.
func GeminiListSessions(output string) []GeminiSession {
	var list []GeminiSession
	for _, line := range strings.Split(output, "\n") {
		m := geminiSessionLine.Get().FindStringSubmatch(strings.TrimRight(line, "\r"))
		if m == nil {
			continue
		}
		s := GeminiSession{Title: m[2], UUID: strings.ToLower(m[7])}
		s.Index, _ = strconv.Atoi(m[1])
		if m[4] != "" {
			n, _ := strconv.Atoi(m[4])
			unit := map[string]time.Duration{"minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour}[m[5]]
			s.Age = time.Duration(n) * unit
		}
		list = append(list, s)
	}
	return list
}

// geminiRecent is how old a session may be and still be taken up again.
const geminiRecent = 7 * 24 * time.Hour

// FindGeminiSession returns the uuid of the most recently updated session
// of list, updated in the week before now, whose title carries the header
// [Feature: <feature>]. now is when the list was taken: the CLI prints
// ages ("2 days ago", rounded down), so a session's last update is now
// less its age.
//
// The title is the session's first prompt only until the CLI writes a
// summary for it: gemini --list-sessions first asks the model for a
// one-line summary of the latest session it has not summarised yet, and
// shows (and keeps) that summary as its title. A summary that drops the
// header hides the session from this search (Recover keeps the listing
// from asking for one).
func FindGeminiSession(list []GeminiSession, feature string, now time.Time) (uuid string, ok bool) {
	header := FeatureHeader(feature)
	cutoff := now.Add(-geminiRecent)
	var best time.Time
	for _, s := range list {
		updated := now.Add(-s.Age)
		if !updated.After(cutoff) || !strings.Contains(s.Title, header) {
			continue
		}
		// The list is oldest first and ages are rounded: a tie goes to
		// the later line.
		if !ok || !updated.Before(best) {
			uuid, best, ok = s.UUID, updated, true
		}
	}
	return uuid, ok
}

// GeminiSessionGone reports whether a turn failed because the session it
// resumed is not there: the CLI exits 42 (its code for bad input) with
// "Error resuming session: No previous sessions found for this project."
// (none in this folder) or "Error resuming session: Invalid session
// identifier ..." (not this one) on stderr. The session then has to start
// afresh.
func GeminiSessionGone(stderr []byte, exitCode int) bool {
	return exitCode == 42 && (bytes.Contains(stderr, []byte("Error resuming session")) ||
		bytes.Contains(stderr, []byte("No previous sessions found")) ||
		bytes.Contains(stderr, []byte("Invalid session identifier")))
}
