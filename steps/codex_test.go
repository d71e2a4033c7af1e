package steps

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/internal/mockapi"
)

var codexTestdata = filepath.Join("testdata", "codex")

// The captured turns: the usage the mock reports in each, and what the
// files hold.
var (
	codexFirstUsage  = mockapi.OpenAIUsage{InputTokens: 1200, CachedTokens: 200, OutputTokens: 30, ReasoningTokens: 5}
	codexSecondUsage = mockapi.OpenAIUsage{InputTokens: 3000, CachedTokens: 1000, OutputTokens: 70, ReasoningTokens: 10}
)

func codexRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// codexEvents feeds a captured output to p.
func codexEvents(t *testing.T, p Parser, name string) []Event {
	t.Helper()
	var events []Event
	for _, line := range bytes.SplitAfter(codexRead(t, filepath.Join(codexTestdata, name)), []byte("\n")) {
		events = append(events, p.Line(bytes.TrimSuffix(line, []byte("\n")))...)
	}
	return events
}

func codexKinds(events []Event) []EventKind {
	var kinds []EventKind
	for _, ev := range events {
		kinds = append(kinds, ev.Kind)
	}
	return kinds
}

// codexNoRollout keeps the parser away from any session file.
func codexNoRollout(string) string { return "" }

func TestCodexParserNewThread(t *testing.T) {
	events := codexEvents(t, &codexParser{rollout: codexNoRollout}, "new.jsonl")
	if want := []EventKind{EventSession, EventText, EventUsage}; !slices.Equal(codexKinds(events), want) {
		t.Fatalf("events %+v, want kinds %v", events, want)
	}
	if events[0].SessionID != "THREAD-1" || events[1].Text != "done: [Feature: plan]\n" {
		t.Errorf("events %+v", events)
	}
	u := events[2]
	if u.InputTokens != codexFirstUsage.InputTokens || u.OutputTokens != codexFirstUsage.OutputTokens ||
		u.ContextTokens != codexFirstUsage.InputTokens || u.CostUSD != 0 {
		t.Errorf("usage %+v, want input %d, output %d, context %d, no cost", u,
			codexFirstUsage.InputTokens, codexFirstUsage.OutputTokens, codexFirstUsage.InputTokens)
	}
}

// codexHomeWith makes a CODEX_HOME holding a session file of thread with
// the captured token_count events of file.
func codexHomeWith(t *testing.T, thread, file string) {
	t.Helper()
	home := t.TempDir()
	dir := filepath.Join(home, "sessions", "2026", "01", "02")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	content := append([]byte(`{"timestamp":"2026-01-02T03:04:05.000Z","type":"session_meta","payload":{"id":"`+thread+`"}}`+"\n"),
		codexRead(t, filepath.Join(codexTestdata, file))...)
	if err := os.WriteFile(filepath.Join(dir, "rollout-2026-01-02T03-04-05-"+thread+".jsonl"), content, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CODEX_HOME", home)
}

// The pitfall: on a resumed thread Codex prints the thread's running
// total. Prepare reads the total so far from Codex's session file; the
// parser reports the turn's own usage.
func TestCodexParserResumedTurnReportsTheTurn(t *testing.T) {
	codexHomeWith(t, "THREAD-1", "rollout-after-new.jsonl")
	inv, err := codexAdapter{}.Prepare(Request{Prompt: "Now build it.", SessionID: "THREAD-1"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(inv.Args, "resume") {
		t.Fatalf("no resume in %q", inv.Args)
	}
	codexHomeWith(t, "THREAD-1", "rollout-after-resume.jsonl")
	events := codexEvents(t, inv.Parser, "resumed.jsonl")
	if want := []EventKind{EventSession, EventText, EventUsage}; !slices.Equal(codexKinds(events), want) {
		t.Fatalf("events %+v, want kinds %v", events, want)
	}
	u := events[2]
	if u.InputTokens != codexSecondUsage.InputTokens || u.OutputTokens != codexSecondUsage.OutputTokens ||
		u.ContextTokens != codexSecondUsage.InputTokens {
		t.Errorf("usage %+v, want the turn's: input %d, output %d, context %d", u,
			codexSecondUsage.InputTokens, codexSecondUsage.OutputTokens, codexSecondUsage.InputTokens)
	}
	// Without the total before the turn, the parser could only report
	// the running total.
	events = codexEvents(t, &codexParser{rollout: codexNoRollout}, "resumed.jsonl")
	if u := events[2]; u.InputTokens != codexFirstUsage.InputTokens+codexSecondUsage.InputTokens {
		t.Errorf("the captured resumed turn should print the running total; got input %d", u.InputTokens)
	}
}

// A forked thread's total starts from the original's: Prepare reads the
// original's total, as for a resume, and the parser subtracts it.
func TestCodexForkedTurnReportsTheTurn(t *testing.T) {
	codexHomeWith(t, "THREAD-1", "rollout-after-new.jsonl")
	inv, err := codexAdapter{}.Prepare(Request{Prompt: "Now build it.", SessionID: "THREAD-1", Fork: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(inv.Args, "fork") || slices.Contains(inv.Args, "resume") {
		t.Fatalf("not a fork: %q", inv.Args)
	}
	resumed, _ := codexAdapter{}.Prepare(Request{Prompt: "Now build it.", SessionID: "THREAD-1"})
	before := inv.Parser.(*codexParser).before
	if before.InputTokens != codexFirstUsage.InputTokens || before != resumed.Parser.(*codexParser).before {
		t.Errorf("the fork's total before the turn %+v, want the original's (input %d)", before, codexFirstUsage.InputTokens)
	}
	inv.Parser.(*codexParser).rollout = codexNoRollout
	events := codexEvents(t, inv.Parser, "resumed.jsonl")
	if u := events[len(events)-1]; u.Kind != EventUsage || u.InputTokens != codexSecondUsage.InputTokens || u.OutputTokens != codexSecondUsage.OutputTokens {
		t.Errorf("usage %+v, want the turn's: input %d, output %d", u, codexSecondUsage.InputTokens, codexSecondUsage.OutputTokens)
	}
}

// Recover finds a forked thread by the first prompt of the thread it was
// forked from: a fork's session file holds only its own turns.
func TestCodexRecoverForkedThread(t *testing.T) {
	home, work := t.TempDir(), t.TempDir()
	dir := filepath.Join(home, "sessions", "2026", "01", "02")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	thread := func(id, parent, prompt string, at time.Time) {
		t.Helper()
		meta, _ := json.Marshal(map[string]any{"type": "session_meta", "payload": map[string]string{"id": id, "cwd": work, "forked_from_id": parent}})
		item, _ := json.Marshal(map[string]any{"type": "event_msg", "payload": map[string]any{"type": "item_completed",
			"item": map[string]any{"type": "UserMessage", "content": []map[string]string{{"type": "Text", "text": prompt}}}}})
		path := filepath.Join(dir, "rollout-2026-01-02T03-04-05-"+id+".jsonl")
		if err := os.WriteFile(path, append(append(meta, '\n'), append(item, '\n')...), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	thread("design", "", FeatureHeader("f")+"\n\nDesign it.", at)
	thread("build", "design", "Build it.", at.Add(time.Minute))
	thread("test", "build", "Test it.", at.Add(2*time.Minute))
	thread("orphan", "gone", FeatureHeader("f")+" not first", at.Add(3*time.Minute))
	thread("other", "", FeatureHeader("g")+"\n\nElse.", at.Add(4*time.Minute))
	env := []string{"CODEX_HOME=" + home}
	if id, ok := (codexAdapter{}).Recover("f", Request{Dir: work}, env); !ok || id != "orphan" {
		t.Errorf("Recover(f) = %q, %v; want the newest thread whose first prompt has the header", id, ok)
	}
	if err := os.Remove(filepath.Join(dir, "rollout-2026-01-02T03-04-05-orphan.jsonl")); err != nil {
		t.Fatal(err)
	}
	if id, ok := (codexAdapter{}).Recover("f", Request{Dir: work}, env); !ok || id != "test" {
		t.Errorf("Recover(f) = %q, %v; want the fork of a fork, test", id, ok)
	}
	if id, ok := (codexAdapter{}).Recover("h", Request{Dir: work}, env); ok {
		t.Errorf("Recover(h) = %q", id)
	}
}

// A turn of several model requests (tool calls): the context in use is
// the last request's input, not the turn's sum, when the session file
// holds the total the turn printed; otherwise the turn's input.
func TestCodexContextIsTheLastRequest(t *testing.T) {
	dir := t.TempDir()
	rollout := filepath.Join(dir, "rollout.jsonl")
	os.WriteFile(rollout, []byte(`{"type":"event_msg","payload":{"type":"token_count","info":null}}
{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":5000,"cached_input_tokens":0,"output_tokens":90,"reasoning_output_tokens":0},"last_token_usage":{"input_tokens":2600,"cached_input_tokens":0,"output_tokens":40,"reasoning_output_tokens":0}}}}
`), 0o600)
	line := []byte(`{"type":"turn.completed","usage":{"input_tokens":5000,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":90,"reasoning_output_tokens":0}}`)
	p := &codexParser{thread: "T", rollout: func(string) string { return rollout }}
	if ev := p.Line(line); len(ev) != 1 || ev[0].InputTokens != 5000 || ev[0].ContextTokens != 2600 {
		t.Errorf("events %+v, want input 5000, context 2600", ev)
	}
	stale := bytes.Replace(line, []byte("5000"), []byte("7000"), 1)
	if ev := p.Line(stale); len(ev) != 1 || ev[0].ContextTokens != 7000 {
		t.Errorf("a session file behind the output: events %+v, want the turn's input as context", ev)
	}
}

func TestCodexParserFailure(t *testing.T) {
	events := codexEvents(t, &codexParser{rollout: codexNoRollout}, "failed.jsonl")
	if want := []EventKind{EventSession, EventError}; !slices.Equal(codexKinds(events), want) {
		t.Fatalf("events %+v, want kinds %v (turn.failed repeats the error)", events, want)
	}
	if events[1].Text == "" {
		t.Errorf("an error without its message: %+v", events)
	}
	// A turn.failed alone still says why.
	ev := (&codexParser{}).Line([]byte(`{"type":"turn.failed","error":{"message":"boom"}}`))
	if len(ev) != 1 || ev[0].Kind != EventError || ev[0].Text != "boom\n" {
		t.Errorf("turn.failed alone: %+v", ev)
	}
}

// Codex's rate limits pause the run: a 429 after its retries (no time
// given), and a plan's usage limit with the time it ends (to the minute,
// in local time: the capture ran with TZ=UTC).
func TestCodexParserRateLimits(t *testing.T) {
	now := func() time.Time { return time.Date(2033, 5, 1, 0, 0, 0, 0, time.UTC) }
	for file, after := range map[string]time.Time{
		"rate-limited.jsonl": {},
		"usage-limit.jsonl":  time.Date(2033, 5, 18, 3, 34, 0, 0, time.UTC),
	} {
		events := codexEvents(t, &codexParser{rollout: codexNoRollout, now: now}, file)
		if len(events) != 2 || events[1].Kind != EventError || !events[1].RateLimited || !events[1].ResumeAfter.Equal(after) {
			t.Errorf("%s: events %+v, want a rate limited error, resume after %v", file, events, after)
		}
	}
	// The same day, Codex gives only the time; past it, it is tomorrow's.
	p := &codexParser{now: func() time.Time { return time.Date(2026, 11, 25, 23, 53, 36, 0, time.UTC) }}
	ev := p.Line([]byte(`{"type":"error","message":"You’ve hit your usage limit. Upgrade to Pro, or try again at 11:54 PM."}`))
	if want := time.Date(2026, 11, 25, 23, 55, 0, 0, time.UTC); len(ev) != 1 || !ev[0].RateLimited || !ev[0].ResumeAfter.Equal(want) {
		t.Errorf("same day: %+v, want resume after %v", ev, want)
	}
	ev = p.Line([]byte(`{"type":"error","message":"You’ve hit your usage limit. Try again at 1:05 AM."}`))
	if want := time.Date(2026, 11, 26, 1, 6, 0, 0, time.UTC); len(ev) != 1 || !ev[0].ResumeAfter.Equal(want) {
		t.Errorf("after midnight: %+v, want resume after %v", ev, want)
	}
	// Codex retrying is not a failure.
	ev = p.Line([]byte(`{"type":"error","message":"Reconnecting... 1/5 (exceeded retry limit, last status: 429 Too Many Requests)"}`))
	if len(ev) != 1 || ev[0].RateLimited {
		t.Errorf("reconnecting: %+v", ev)
	}
}

// The reply arrives whole: the checkpoint line is in one text event, and
// the scanner finds its note.
func TestCodexParserCheckpoint(t *testing.T) {
	var scanner OutputScanner
	for _, ev := range codexEvents(t, &codexParser{rollout: codexNoRollout}, "checkpoint.jsonl") {
		if ev.Kind == EventText {
			scanner.Write([]byte(ev.Text))
		}
	}
	if !scanner.Checkpoint || scanner.CheckpointNote() != "design ready for review" {
		t.Errorf("checkpoint %v, note %q", scanner.Checkpoint, scanner.CheckpointNote())
	}
}

func TestCodexParserOddLines(t *testing.T) {
	p := &codexParser{}
	if ev := p.Line([]byte("not json")); len(ev) != 1 || ev[0].Kind != EventText || ev[0].Text != "not json\n" {
		t.Errorf("plain line: %+v", ev)
	}
	for _, line := range []string{"", `{"type":"turn.started"}`, `{"type":"item.completed","item":{"type":"reasoning","text":"[CHECKPOINT] no"}}`, `{"type":"item.started","item":{"type":"command_execution"}}`} {
		if ev := p.Line([]byte(line)); len(ev) != 0 {
			t.Errorf("%s: %+v, want nothing", line, ev)
		}
	}
	if ev := p.Line([]byte(`{"type":"item.completed","item":{"type":"error","message":"warning"}}`)); len(ev) != 1 || ev[0].Kind != EventError {
		t.Errorf("error item: %+v", ev)
	}
}

func TestCodexInvocation(t *testing.T) {
	t.Setenv("CODEX_HOME", t.TempDir())
	for _, c := range []struct {
		r    Request
		want string
	}{
		{Request{Prompt: "-p do it"}, "codex exec --json --skip-git-repo-check -- -p do it"},
		{Request{Prompt: "do it", Model: "gpt-5.5", Args: []string{"--sandbox", "workspace-write"}},
			"codex exec --json --skip-git-repo-check --model gpt-5.5 --sandbox workspace-write -- do it"},
		{Request{Prompt: "go on", Model: "m", SessionID: "019a-id", Args: []string{"-s", "read-only"}},
			"codex exec --json --skip-git-repo-check --model m -s read-only resume -- 019a-id go on"},
		{Request{Prompt: "go on", Model: "m", SessionID: "019a-id", Fork: true, Args: []string{"-s", "read-only"}},
			"codex exec --json --skip-git-repo-check --model m -s read-only fork -- 019a-id go on"},
		{Request{Prompt: "-go on", SessionID: "019a-id", Fork: true, ReadOnly: true, Args: []string{"--full-auto"}},
			"codex exec --json --skip-git-repo-check --sandbox read-only fork -- 019a-id -go on"},
		// A fork of no thread is a new thread.
		{Request{Prompt: "go on", Fork: true}, "codex exec --json --skip-git-repo-check -- go on"},
	} {
		inv, err := codexAdapter{}.Prepare(c.r)
		if err != nil || strings.Join(inv.Args, " ") != c.want || inv.Stdin != "" {
			t.Errorf("%+v: %q %q %v, want %q and no stdin", c.r, inv.Args, inv.Stdin, err, c.want)
		}
	}
	if a, err := AdapterFor("codex"); err != nil || a == nil {
		t.Errorf("codex is not registered: %v", err)
	}
}

func TestCodexSessionGone(t *testing.T) {
	stderr := codexRead(t, filepath.Join(codexTestdata, "resume-gone.stderr"))
	if !CodexSessionGone(stderr, 1) {
		t.Errorf("the captured answer is not recognized:\n%s", stderr)
	}
	if CodexSessionGone(stderr, 0) || CodexSessionGone([]byte("Error: something else\n"), 1) {
		t.Error("a success or another error taken for a missing thread")
	}
	var checker interface {
		SessionGone([]byte, int) bool
	} = codexAdapter{}
	if !checker.SessionGone(stderr, 1) {
		t.Error("the adapter's SessionGone differs from CodexSessionGone")
	}
}
