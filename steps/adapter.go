package steps

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Request is one turn asked of an agent.
type Request struct {
	Kind    string
	Prompt  string
	Model   string
	Command []string // for kind command
	Args    []string
	// SessionID is the agent's native session to resume; empty starts a
	// new one.
	SessionID string
	// Fork, with SessionID, resumes it as a new native session branched
	// from it, leaving it as it was; only for an adapter that is a Forker.
	Fork bool
	Dir  string
	// Env is the whole environment the agent will run with (the agent's
	// env: included), for adapters that read the CLI's own files.
	Env []string
	// ReadOnly asks the CLI to change no file (a phase with writes: []),
	// where the CLI can enforce it: Claude Code's --permission-mode plan,
	// Codex's --sandbox read-only, Gemini CLI's --approval-mode plan. The
	// flags of Args that would lift it are dropped.
	ReadOnly bool
}

// withoutFlags returns args without the named flags: "--flag value",
// "--flag=value" for those in valued, "--flag" alone for the others.
func withoutFlags(args []string, valued, alone []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		name, _, hasValue := strings.Cut(a, "=")
		switch {
		case slices.Contains(valued, name):
			if !hasValue {
				i++ // its value
			}
			continue
		case slices.Contains(alone, a):
			continue
		}
		out = append(out, a)
	}
	return out
}

// Turn is one turn of an agent, prepared from a request: how to start it,
// and the parser of its output. Everything a turn needs to know lives in
// it, so adapters keep no state between turns.
type Turn struct {
	Args []string
	// Stdin, when not empty, is written to the agent's standard input.
	Stdin string
	// Parser reads the turn's standard output; nil when the output is
	// plain text (its tokens are then counted with the tokenizer).
	Parser Parser
}

// EventKind says what an agent's output told.
type EventKind int

// Event kinds.
const (
	EventText EventKind = iota
	EventUsage
	EventSession
	EventError
	EventResult
	// EventTool is a tool call the agent made, a line to show as it
	// happens ("▸ Bash go test ./..."): not the agent's words, so never
	// scanned for markers or the checkpoint.
	EventTool
)

// Event is one thing an agent's output told: text it wrote, token usage,
// cost, its native session id, an error, its final result.
type Event struct {
	Kind EventKind
	Text string
	// Usage of the turn so far: the input and output tokens, the size of
	// the context in use, and the cost in US dollars.
	InputTokens, OutputTokens, ContextTokens int
	CostUSD                                  float64
	SessionID                                string
	// RateLimited and ResumeAfter come with an error when the vendor said
	// to wait.
	RateLimited bool
	ResumeAfter time.Time
}

// Parser turns an agent's standard output, line by line, into events.
type Parser interface {
	Line(line []byte) []Event
}

// Adapter knows one agent CLI: how to call it for a turn (resuming its
// native session by id) and how to read its output.
type Adapter interface {
	Prepare(Request) (Turn, error)
}

// SessionChecker is an adapter that can tell, from a failed turn, that
// the native session it was asked to resume is gone (each CLI has its own
// message and exit code for it).
type SessionChecker interface {
	SessionGone(stderr []byte, exitCode int) bool
}

// Recoverer is an adapter that can find the CLI's own session of a
// feature (by the [Feature: name] header of its first prompt) when the
// store has none.
type Recoverer interface {
	Recover(feature string, r Request, env []string) (sessionID string, ok bool)
}

// Forker is an adapter whose CLI can resume a native session as a new
// one branched from it (Request.Fork).
type Forker interface{ Forks() bool }

// CanFork reports whether the adapter's CLI forks a native session.
func CanFork(a Adapter) bool {
	f, ok := a.(Forker)
	return ok && f.Forks()
}

// FeatureHeader starts the first prompt of a native session with a
// feature, so that the session can be found again.
func FeatureHeader(feature string) string { return "[Feature: " + feature + "]" }

// registered holds the adapters that Register added.
var registered map[string]Adapter

// Register makes a the adapter of kind, in place of a built-in one. It is
// for tests, not for concurrent use.
func Register(kind string, a Adapter) {
	if registered == nil {
		registered = map[string]Adapter{}
	}
	registered[kind] = a
}

// AdapterFor returns the adapter of an agent kind. The built-in ones are
// chosen by a switch, not held in a map, so that no package init builds
// one at every start.
func AdapterFor(kind string) (Adapter, error) {
	if a, ok := registered[kind]; ok {
		return a, nil
	}
	switch kind {
	case "command":
		return commandAdapter{}, nil
	case "claude":
		return claudeAdapter{}, nil
	case "codex":
		return codexAdapter{}, nil
	case "gemini":
		return geminiAdapter{}, nil
	}
	return nil, fmt.Errorf("unknown agent kind %q", kind)
}

// PromptPlaceholder in an argument of a command agent receives the prompt.
const PromptPlaceholder = "{prompt}"

// commandAdapter runs any program: an argument containing {prompt} gets
// the prompt, otherwise the prompt goes to standard input. {model} is
// replaced by the model.
type commandAdapter struct{}

func (commandAdapter) Prepare(r Request) (Turn, error) {
	if len(r.Command) == 0 {
		return Turn{}, fmt.Errorf("kind: command needs a command")
	}
	inv := Turn{}
	placed := false
	for _, arg := range append(append([]string(nil), r.Command...), r.Args...) {
		if strings.Contains(arg, PromptPlaceholder) {
			placed = true
			arg = strings.ReplaceAll(arg, PromptPlaceholder, r.Prompt)
		}
		inv.Args = append(inv.Args, strings.ReplaceAll(arg, "{model}", r.Model))
	}
	if !placed {
		inv.Stdin = r.Prompt
	}
	return inv, nil
}
