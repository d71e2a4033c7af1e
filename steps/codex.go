package steps

import (
	"github.com/pipeline-dev/pipeline/internal/lazy"
	"github.com/pipeline-dev/pipeline/internal/transcript"

	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// The codex adapter runs the Codex CLI (npm @openai/codex, seen at 0.169.0)
// headless:
//
//	codex exec --json --skip-git-repo-check [--model M] ARGS -- PROMPT
//	codex exec --json --skip-git-repo-check [--model M] ARGS resume -- THREAD_ID PROMPT
//	codex exec --json --skip-git-repo-check [--model M] ARGS fork -- THREAD_ID PROMPT
//
// The options stand before resume (or fork), at the exec level, where
// Codex applies them to a resumed thread too: so the agent's args may
// hold options that only exec knows (--sandbox, --cd), which "exec
// resume" alone refuses. "exec fork" (Request.Fork) continues the thread
// as a new one with an id of its own, leaving the original as it was;
// the new thread's session file holds only its own turns and names the
// original (session_meta's forked_from_id).
// "--" keeps a prompt that starts with a dash a prompt. Standard input is
// left empty (/dev/null): with a prompt argument Codex would append what
// it reads there (it still says "Reading additional input from stdin..."
// on stderr). A thread id that is not a UUID would be taken for a thread
// name and, matching none, silently start a new thread; Codex's ids are
// UUIDs.
//
// Its --json output is one JSON object a line:
//
//	thread.started {thread_id}        the native session id
//	turn.started
//	item.completed {item{type:"agent_message", text}}
//	turn.completed {usage{input_tokens, cached_input_tokens,
//	    cache_write_input_tokens, output_tokens, reasoning_output_tokens}}
//	error {message}                   also "Reconnecting... n/5 (...)"
//	turn.failed {error{message}}      then exit 1
//
// Errors are shown; a rate limit or a plan's usage limit is reported as
// such, with the time Codex gives to try again (see codexParser.error).
//
// The agent's text arrives whole, one message at a time: there are no
// deltas in this output. A [CHECKPOINT] in the middle of a long reply is
// therefore seen when that message completes, not when the model wrote
// it.
//
// Usage. On a resumed thread, turn.completed reports the thread's running
// total, not the turn's; a forked thread's total starts from the
// original's. Codex keeps that total in its own session file,
// $CODEX_HOME/sessions/YYYY/MM/DD/rollout-*-<thread_id>.jsonl (CODEX_HOME
// defaults to ~/.codex), as token_count events; it is where Codex itself
// reads it back on resume. Invocation reads the last total of the thread
// it resumes or forks there before the turn starts (the previous turn's
// process has ended, so the file is complete), and the parser subtracts
// it from the total the turn reports. The usage reported is the turn's:
// input tokens (cached ones included, as OpenAI counts them) and output
// tokens (reasoning included). The context in use is the input of the
// turn's last model request, read from the last token_count of the
// turn's own thread's file once it holds the total the turn reported;
// without that file, the turn's input (the same number for a turn of one
// request). Codex reports no cost: CostUSD stays 0.
//
// Limitations: a turn stopped by a trigger (a checkpoint in its reply)
// usually ends before Codex prints turn.completed, so its usage is not
// reported (Codex's own total still counts it, and the next turn's
// figures stay per turn). The session file is looked for under the
// CODEX_HOME (or HOME) the turn runs with, an agent's env: included; the
// context of a new thread's first turn is read under pipeline's own.
type codexAdapter struct{}

func (codexAdapter) Prepare(r Request) (Turn, error) {
	args := []string{"codex", "exec", "--json", "--skip-git-repo-check"}
	// The parser of a resumed turn knows the thread's running total
	// before the turn, which Codex prints in place of the turn's own.
	parser := &codexParser{}
	if r.Model != "" {
		args = append(args, "--model", r.Model)
	}
	if r.ReadOnly {
		args = append(args, withoutFlags(r.Args, []string{"--sandbox", "-s"},
			[]string{"--full-auto", "--dangerously-bypass-approvals-and-sandbox"})...)
		args = append(args, "--sandbox", "read-only")
	} else {
		args = append(args, r.Args...)
	}
	if r.SessionID != "" {
		home := codexHome()
		if r.Env != nil {
			home = codexHomeIn(r.Env)
		}
		parser.before, parser.home = codexThreadTotal(home, r.SessionID), home
		sub := "resume"
		if r.Fork {
			sub = "fork"
		}
		args = append(args, sub, "--", r.SessionID, r.Prompt)
	} else {
		args = append(args, "--", r.Prompt)
	}
	return Turn{Args: args, Parser: parser}, nil
}

// Forks: "codex exec fork" resumes a thread as a new one, the original's
// session file left as it was.
func (codexAdapter) Forks() bool { return true }

// SessionGone reports whether a resumed turn failed because Codex no
// longer has the thread; see CodexSessionGone.
func (codexAdapter) SessionGone(stderr []byte, exitCode int) bool {
	return CodexSessionGone(stderr, exitCode)
}

// CodexSessionGone reports whether "codex exec resume <thread_id>" failed
// because the thread is gone (its session file deleted, or another
// CODEX_HOME). Codex 0.169.0 then writes nothing on stdout, exits 1, and
// says on stderr:
//
//	Error: thread/resume: thread/resume failed: no rollout found for thread id <id> (code -32600)
//
// The engine should then drop the native session and run the step again
// in a fresh thread, with the resume context.
func CodexSessionGone(stderr []byte, exitCode int) bool {
	return exitCode == 1 && bytes.Contains(stderr, []byte("no rollout found for thread id"))
}

// Recover finds Codex's own thread of a feature when the session store
// has none (lost, or made by hand): the most recently written session
// file under $CODEX_HOME/sessions (CODEX_HOME or HOME taken from the
// agent's env) of a thread made in the working directory (its
// session_meta's cwd) whose first prompt starts with the feature header.
// A forked thread's file holds only its own turns and names the thread
// it was forked from (forked_from_id): its first prompt is that thread's.
func (codexAdapter) Recover(feature string, r Request, env []string) (string, bool) {
	if feature == "" {
		return "", false
	}
	files, _ := filepath.Glob(filepath.Join(codexHomeIn(env), "sessions", "*", "*", "*", "rollout-*.jsonl"))
	type rollout struct {
		path string
		mod  time.Time
	}
	var list []rollout
	for _, path := range files {
		if info, err := os.Stat(path); err == nil {
			list = append(list, rollout{path, info.ModTime()})
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].mod.After(list[j].mod) })
	type thread struct{ id, cwd, prompt, parent string }
	var threads []thread
	byID := map[string]thread{}
	for _, f := range list {
		if id, cwd, prompt, parent, ok := codexFirstPrompt(f.path); ok {
			threads = append(threads, thread{id, cwd, prompt, parent})
			if _, seen := byID[id]; !seen {
				byID[id] = threads[len(threads)-1]
			}
		}
	}
	dir := codexRealDir(r.Dir)
	header := FeatureHeader(feature)
	for _, th := range threads {
		if codexRealDir(th.cwd) != dir {
			continue
		}
		first := th
		for n := 0; first.parent != "" && n < 1000; n++ {
			parent, ok := byID[first.parent]
			if !ok {
				break
			}
			first = parent
		}
		if strings.HasPrefix(first.prompt, header) {
			return th.id, true
		}
	}
	return "", false
}

// codexHomeIn is Codex's home in an environment: CODEX_HOME, or
// HOME/.codex; the last setting of a name wins, as in exec.
func codexHomeIn(env []string) string {
	var home, codex string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "CODEX_HOME="); ok {
			codex = v
		} else if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	switch {
	case codex != "":
		return codex
	case home != "":
		return filepath.Join(home, ".codex")
	}
	return codexHome()
}

func codexRealDir(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return dir
}

// codexFirstPrompt reads a session file's thread id, the folder it was
// made in, its first prompt (the first UserMessage item, which leaves out
// the environment context Codex adds), and the thread it was forked from.
func codexFirstPrompt(path string) (id, cwd, prompt, parent string, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", "", "", false
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for n := 0; n < 200; n++ {
		line, err := r.ReadBytes('\n')
		var ev struct {
			Type    string `json:"type"`
			Payload struct {
				Type       string `json:"type"`
				ID         string `json:"id"`
				Cwd        string `json:"cwd"`
				ForkedFrom string `json:"forked_from_id"`
				Item       struct {
					Type    string `json:"type"`
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"item"`
			} `json:"payload"`
		}
		switch {
		case n == 0 || bytes.Contains(line, []byte(`"UserMessage"`)):
			if json.Unmarshal(line, &ev) != nil {
				break
			}
			if ev.Type == "session_meta" {
				id, cwd, parent = ev.Payload.ID, ev.Payload.Cwd, ev.Payload.ForkedFrom
			} else if ev.Payload.Type == "item_completed" && ev.Payload.Item.Type == "UserMessage" {
				var b strings.Builder
				for _, c := range ev.Payload.Item.Content {
					b.WriteString(c.Text)
				}
				return id, cwd, b.String(), parent, id != ""
			}
		}
		if err != nil {
			break
		}
	}
	return "", "", "", "", false
}

// codexUsage is Codex's token usage.
type codexUsage struct {
	InputTokens     int `json:"input_tokens"`
	CachedTokens    int `json:"cached_input_tokens"`
	OutputTokens    int `json:"output_tokens"`
	ReasoningTokens int `json:"reasoning_output_tokens"`
}

func (u codexUsage) minus(v codexUsage) codexUsage {
	return codexUsage{max(u.InputTokens-v.InputTokens, 0), max(u.CachedTokens-v.CachedTokens, 0),
		max(u.OutputTokens-v.OutputTokens, 0), max(u.ReasoningTokens-v.ReasoningTokens, 0)}
}

// codexParser reads one turn's --json output.
type codexParser struct {
	thread string
	// before is the thread's running total before the turn.
	before    codexUsage
	lastError string
	// rollout finds the thread's session file; nil looks under home (or
	// $CODEX_HOME when the turn's home is not known).
	rollout func(thread string) string
	home    string
	// now is the time; nil uses time.Now.
	now   func() time.Time
	tools toolCalls
}

type codexLine struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Message  string `json:"message"`
	Item     struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Message string `json:"message"`
	} `json:"item"`
	Usage *codexUsage `json:"usage"`
	Error struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (p *codexParser) Line(line []byte) []Event {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	var l codexLine
	if line[0] != '{' || json.Unmarshal(line, &l) != nil {
		// Not an event: show it as it is.
		return []Event{{Kind: EventText, Text: string(line) + "\n"}}
	}
	switch l.Type {
	case "thread.started":
		p.thread = l.ThreadID
		return []Event{{Kind: EventSession, SessionID: l.ThreadID}}
	case "item.started":
		return p.tools.events(transcript.Codex, line, false)
	case "item.completed":
		if tools := p.tools.events(transcript.Codex, line, false); len(tools) > 0 {
			return tools
		}
		switch l.Item.Type {
		case "agent_message":
			return []Event{{Kind: EventText, Text: codexWithNewline(l.Item.Text)}}
		case "error":
			return []Event{{Kind: EventError, Text: codexWithNewline(l.Item.Message)}}
		}
	case "turn.completed":
		if l.Usage == nil {
			return nil
		}
		turn := l.Usage.minus(p.before)
		context := turn.InputTokens
		if last, ok := p.lastRequest(*l.Usage); ok {
			context = last.InputTokens
		}
		return []Event{{Kind: EventUsage, InputTokens: turn.InputTokens, OutputTokens: turn.OutputTokens,
			ContextTokens: context}}
	case "error":
		p.lastError = l.Message
		return []Event{p.error(l.Message)}
	case "turn.failed":
		if l.Error.Message == "" || l.Error.Message == p.lastError {
			return nil // said already
		}
		return []Event{p.error(l.Error.Message)}
	}
	return nil
}

// error is an error event, rate limited when Codex said so: after its own
// retries, "exceeded retry limit, last status: 429 Too Many Requests"; a
// plan's limit, "You've hit your usage limit. ... try again at Nov 26th,
// 2026 1:33 PM." (or "at 11:54 PM." the same day), in local time, to the
// minute: the turn may resume a minute after it. A "Reconnecting... n/5
// (...)" error is Codex retrying, not a failure.
func (p *codexParser) error(message string) Event {
	ev := Event{Kind: EventError, Text: codexWithNewline(message)}
	if strings.HasPrefix(message, "Reconnecting...") ||
		!strings.Contains(message, "429 Too Many Requests") && !strings.Contains(message, "hit your usage limit") {
		return ev
	}
	ev.RateLimited = true
	m := codexTryAgain.Get().FindStringSubmatch(message)
	if m == nil {
		return ev
	}
	now := time.Now()
	if p.now != nil {
		now = p.now()
	}
	if m[1] != "" {
		if at, err := time.ParseInLocation("Jan 2 2006 3:04 PM", m[1]+" "+m[2]+" "+m[3]+" "+m[4], now.Location()); err == nil {
			ev.ResumeAfter = at.Add(time.Minute)
		}
	} else if at, err := time.ParseInLocation("3:04 PM", m[4], now.Location()); err == nil {
		y, mo, d := now.Date()
		at = time.Date(y, mo, d, at.Hour(), at.Minute(), 0, 0, now.Location())
		if at.Before(now.Add(-time.Minute)) {
			at = at.AddDate(0, 0, 1)
		}
		ev.ResumeAfter = at.Add(time.Minute)
	}
	return ev
}

// codexTryAgain finds when a usage limit ends in Codex's message.
var codexTryAgain = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp {
	return regexp.MustCompile(`(?i:try again at) (?:([A-Z][a-z]{2}) (\d{1,2})(?:st|nd|rd|th), (\d{4}) )?(\d{1,2}:\d{2} [AP]M)`)
}}

// lastRequest is the usage of the turn's last model request, from the
// thread's session file, when its last token_count holds the total the
// turn reported.
func (p *codexParser) lastRequest(total codexUsage) (codexUsage, bool) {
	find := p.rollout
	if find == nil {
		home := p.home
		if home == "" {
			home = codexHome()
		}
		find = func(thread string) string { return codexRolloutIn(home, thread) }
	}
	path := find(p.thread)
	if path == "" {
		return codexUsage{}, false
	}
	threadTotal, last, ok := codexLastTokenCount(path, 1<<20)
	if !ok || threadTotal != total {
		return codexUsage{}, false
	}
	return last, true
}

func codexWithNewline(s string) string {
	if strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

// codexHome is Codex's home: $CODEX_HOME, or ~/.codex.
func codexHome() string {
	if home := os.Getenv("CODEX_HOME"); home != "" {
		return home
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".codex")
}

// codexRollout finds the session file of a thread under $CODEX_HOME, or "".
func codexRollout(thread string) string { return codexRolloutIn(codexHome(), thread) }

// codexRolloutIn finds the session file of a thread under home, or "".
func codexRolloutIn(home, thread string) string {
	if home == "" || thread == "" || strings.ContainsAny(thread, `/\*?[]`) {
		return ""
	}
	matches, _ := filepath.Glob(filepath.Join(home, "sessions", "*", "*", "*", "rollout-*-"+thread+".jsonl"))
	if len(matches) == 0 {
		return ""
	}
	return matches[len(matches)-1]
}

// codexThreadTotal is the running total of a thread's usage so far, from
// its session file; zero when there is none.
func codexThreadTotal(home, thread string) codexUsage {
	path := codexRolloutIn(home, thread)
	if path == "" {
		return codexUsage{}
	}
	total, _, _ := codexLastTokenCount(path, 0)
	return total
}

// codexTokenCount is a token_count event of a session file.
type codexTokenCount struct {
	Type    string `json:"type"`
	Payload struct {
		Type string `json:"type"`
		Info *struct {
			Total codexUsage `json:"total_token_usage"`
			Last  codexUsage `json:"last_token_usage"`
		} `json:"info"`
	} `json:"payload"`
}

// codexLastTokenCount reads the last token_count event of a session file:
// the thread's total and its last request's usage. It reads only the last
// tail bytes of the file when tail > 0.
func codexLastTokenCount(path string, tail int64) (total, last codexUsage, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return total, last, false
	}
	defer f.Close()
	if tail > 0 {
		if info, err := f.Stat(); err == nil && info.Size() > tail {
			if _, err := f.Seek(info.Size()-tail, io.SeekStart); err != nil {
				return total, last, false
			}
		}
	}
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if bytes.Contains(line, []byte(`"token_count"`)) {
			var ev codexTokenCount
			if json.Unmarshal(line, &ev) == nil && ev.Type == "event_msg" && ev.Payload.Type == "token_count" && ev.Payload.Info != nil {
				total, last, ok = ev.Payload.Info.Total, ev.Payload.Info.Last, true
			}
		}
		if err != nil {
			return total, last, ok
		}
	}
}
