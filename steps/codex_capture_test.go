//go:build agentclis

package steps

import (
	"bytes"
	"errors"
	"flag"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/internal/mockapi"
)

// captureCodex rewrites testdata/codex from the real Codex CLI:
//
//	PIPELINE_AGENT_CLIS=$PWD/.cache/npm/node_modules/.bin \
//	  go test ./steps -run TestCodexCaptures -capture-codex
//
// (make test installs the CLIs). Without the flag, TestCodexCaptures runs
// the same turns and fails when the CLI's output no longer matches the
// files: the parser tests below read them. Review the diff after a
// rewrite.
var captureCodex = flag.Bool("capture-codex", false, "run the real Codex CLI against the mock and rewrite testdata/codex")

// codexCLI is the real Codex CLI, or a failure that says how to get it.
func codexCLI(t *testing.T) string {
	path, _ := mockapi.AgentCLI(t, "codex")
	return path
}

// An OpenAI rate limit, and a ChatGPT plan's usage limit that ends at
// 2033-05-18 03:33:20 UTC.
const (
	codexRateLimitBody  = `{"error":{"message":"Rate limit reached for gpt-5.5. Please try again in 20s.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	codexUsageLimitBody = `{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"plus","resets_at":2000000000,"resets_in_seconds":3600}}`
)

const (
	codexPlanPrompt = "[Feature: plan]\n\nWrite the plan.\nKeep it short."
	codexCheckpoint = "Plan drafted.\n[CHECKPOINT] design ready for review\nWaiting for a human."
)

// codexUUID matches the thread ids in Codex's output (UUIDv7).
var codexUUID = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// TestCodexCaptures runs the real CLI against the mock through the
// adapter's own command lines, in temporary HOME and CODEX_HOME folders:
// a new thread, its resumed second turn, a failing turn (HTTP 500), a
// rate limit and a plan's usage limit (HTTP 429), a reply with a
// checkpoint, and a resume of a thread that does not exist. It checks
// what only a live run shows (the resumed request re-sent the history;
// the running total read from Codex's session file before the turn;
// Recover finding the thread by its feature header; one request per
// failure, no retries), then compares each stdout, thread ids replaced by
// THREAD-1..., with testdata/codex/<case>.jsonl, or rewrites the files
// with -capture-codex. A rewrite also keeps the session file's
// token_count events after each of the first two turns
// (rollout-after-*.jsonl) and the stderr of the missing thread
// (resume-gone.stderr), whose paths and timestamps vary from run to run.
func TestCodexCaptures(t *testing.T) {
	cli := codexCLI(t)
	mock := mockapi.NewOpenAI()
	defer mock.Close()
	home, codexHomeDir, work := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(codexHomeDir, "config.toml"), []byte(mock.CodexConfig()), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CODEX_HOME", codexHomeDir) // for the adapter's own look-ups
	threads := map[string]string{}
	normalize := func(b []byte) []byte {
		b = bytes.ReplaceAll(b, []byte(codexHomeDir), []byte("$CODEX_HOME"))
		return codexUUID.ReplaceAllFunc(b, func(id []byte) []byte {
			if _, ok := threads[string(id)]; !ok {
				threads[string(id)] = "THREAD-" + strconv.Itoa(len(threads)+1)
			}
			return []byte(threads[string(id)])
		})
	}
	type turn struct {
		stdout, stderr []byte
		exit           int
		parser         Parser
	}
	run := func(r Request) turn {
		t.Helper()
		inv, err := codexAdapter{}.Prepare(r)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(cli, inv.Args[1:]...)
		cmd.Dir = work
		// TZ: Codex writes when a usage limit ends in local time.
		cmd.Env = append(os.Environ(), "HOME="+home, "CODEX_HOME="+codexHomeDir, "MOCK_API_KEY=mock-key", "TZ=UTC")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err = cmd.Run()
		var exitErr *exec.ExitError
		if err != nil && !errors.As(err, &exitErr) {
			t.Fatal(err)
		}
		return turn{stdout.Bytes(), stderr.Bytes(), cmd.ProcessState.ExitCode(), inv.Parser}
	}
	files := map[string][]byte{}
	tokenCounts := func() []byte {
		var counts []byte
		for _, line := range bytes.SplitAfter(codexRead(t, codexRollout(codexThreadOf(t, files["new.jsonl"], threads))), []byte("\n")) {
			if bytes.Contains(line, []byte(`"type":"token_count"`)) {
				counts = append(counts, line...)
			}
		}
		return counts
	}

	mock.SetUsage(codexFirstUsage)
	first := run(Request{Prompt: codexPlanPrompt, Model: "gpt-5.5"})
	if first.exit != 0 {
		t.Fatalf("new thread: exit %d: %s", first.exit, first.stderr)
	}
	files["new.jsonl"] = normalize(first.stdout)
	thread := codexThreadOf(t, files["new.jsonl"], threads)
	files["rollout-after-new.jsonl"] = normalize(tokenCounts())

	mock.SetUsage(codexSecondUsage)
	second := run(Request{Prompt: "Now build it.", Model: "gpt-5.5", SessionID: thread})
	if second.exit != 0 {
		t.Fatalf("resumed thread: exit %d: %s", second.exit, second.stderr)
	}
	files["resumed.jsonl"] = normalize(second.stdout)
	files["rollout-after-resume.jsonl"] = normalize(tokenCounts())
	// The resumed turn's parser, fed live: the turn's usage, not the
	// running total Codex prints.
	p := second.parser
	var usage Event
	for _, line := range bytes.Split(second.stdout, []byte("\n")) {
		for _, ev := range p.Line(line) {
			if ev.Kind == EventUsage {
				usage = ev
			}
		}
	}
	if usage.InputTokens != codexSecondUsage.InputTokens || usage.OutputTokens != codexSecondUsage.OutputTokens ||
		usage.ContextTokens != codexSecondUsage.InputTokens {
		t.Errorf("resumed turn's usage %+v, want the turn's %+v", usage, codexSecondUsage)
	}
	turns := mock.Turns()
	if len(turns) != 2 {
		t.Fatalf("the mock saw %d turns, want 2", len(turns))
	}
	if !turns[1].HasMessage("user", codexPlanPrompt) || !turns[1].HasMessage("assistant", "done: [Feature: plan]") {
		t.Errorf("the resumed request did not re-send the first turn:\n%s", turns[1].Body)
	}

	// Recover finds the thread by its first prompt's feature header, in
	// the folder it was made in.
	env := []string{"HOME=" + home, "CODEX_HOME=" + codexHomeDir}
	if id, ok := (codexAdapter{}).Recover("plan", Request{Dir: work}, env); !ok || id != thread {
		t.Errorf("Recover(plan) = %q, %v; want the thread %s", id, ok, thread)
	}

	// A fork of the thread: a new thread id, the original's history
	// re-sent, the turn's own usage though Codex prints a total that
	// starts from the original's, and the original left as it was.
	mock.SetUsage(codexSecondUsage)
	forked := run(Request{Prompt: "Now test it.", Model: "gpt-5.5", SessionID: thread, Fork: true})
	if forked.exit != 0 {
		t.Fatalf("forked thread: exit %d: %s", forked.exit, forked.stderr)
	}
	var fork string
	usage = Event{}
	for _, line := range bytes.Split(forked.stdout, []byte("\n")) {
		for _, ev := range forked.parser.Line(line) {
			switch ev.Kind {
			case EventSession:
				fork = ev.SessionID
			case EventUsage:
				usage = ev
			}
		}
	}
	if fork == "" || fork == thread {
		t.Errorf("the fork's thread %q, the original's %s", fork, thread)
	}
	if usage.InputTokens != codexSecondUsage.InputTokens || usage.OutputTokens != codexSecondUsage.OutputTokens {
		t.Errorf("forked turn's usage %+v, want the turn's %+v", usage, codexSecondUsage)
	}
	if turns := mock.Turns(); len(turns) != 3 || !turns[2].HasMessage("assistant", "done: Now build it.") ||
		!turns[2].HasMessage("user", codexPlanPrompt) {
		t.Errorf("the forked request did not re-send the original's turns:\n%s", turns[len(turns)-1].Body)
	}
	if bytes.Contains(codexRead(t, codexRollout(thread)), []byte("Now test it.")) {
		t.Error("the fork's turn went into the original's session file")
	}
	// Recover now finds the fork, the newest thread of the feature.
	if id, ok := (codexAdapter{}).Recover("plan", Request{Dir: work}, env); !ok || id != fork {
		t.Errorf("Recover(plan) after the fork = %q, %v; want the fork %s", id, ok, fork)
	}
	if id, ok := (codexAdapter{}).Recover("other", Request{Dir: work}, env); ok {
		t.Errorf("Recover(other) = %q", id)
	}
	if id, ok := (codexAdapter{}).Recover("plan", Request{Dir: home}, env); ok {
		t.Errorf("Recover(plan) in another folder = %q", id)
	}

	mock.SetUsage(mockapi.OpenAIDefaultUsage)
	failed := run(Request{Prompt: "Try this " + mockapi.OpenAIFailMarker})
	if failed.exit != 1 {
		t.Errorf("failing turn: exit %d, want 1", failed.exit)
	}
	if n := len(mock.Turns()); n != 4 {
		t.Errorf("the failing turn made %d requests, want 1: Codex retried", n-3)
	}
	files["failed.jsonl"] = normalize(failed.stdout)

	mock.SetFailure(http.StatusTooManyRequests, codexRateLimitBody, http.Header{"Retry-After": {"20"}})
	limited := run(Request{Prompt: "Again " + mockapi.OpenAIFailMarker})
	mock.SetFailure(http.StatusTooManyRequests, codexUsageLimitBody, nil)
	usageLimit := run(Request{Prompt: "Once more " + mockapi.OpenAIFailMarker})
	mock.SetFailure(0, "", nil)
	if limited.exit != 1 || usageLimit.exit != 1 {
		t.Errorf("rate limited turns: exit %d and %d, want 1", limited.exit, usageLimit.exit)
	}
	files["rate-limited.jsonl"] = normalize(limited.stdout)
	files["usage-limit.jsonl"] = normalize(usageLimit.stdout)

	mock.SetReply(codexCheckpoint)
	checkpoint := run(Request{Prompt: "Draft the design."})
	mock.SetReply("")
	if checkpoint.exit != 0 {
		t.Errorf("checkpoint turn: exit %d: %s", checkpoint.exit, checkpoint.stderr)
	}
	files["checkpoint.jsonl"] = normalize(checkpoint.stdout)

	gone := run(Request{Prompt: "Go on.", SessionID: "019a0000-0000-7000-8000-00000000dead"})
	if gone.exit != 1 || len(gone.stdout) != 0 {
		t.Errorf("resume of a missing thread: exit %d, stdout %q", gone.exit, gone.stdout)
	}
	files["resume-gone.stderr"] = normalize(gone.stderr)

	for name, got := range files {
		path := filepath.Join(codexTestdata, name)
		if *captureCodex {
			if err := os.MkdirAll(codexTestdata, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if strings.HasPrefix(name, "rollout-") || strings.HasSuffix(name, ".stderr") {
			continue // timestamps and paths differ from run to run
		}
		if want, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
			t.Errorf("the real CLI's output differs from %s (rewrite it: go test ./steps -run TestCodexCaptures -capture-codex):\n%s", path, got)
		}
	}
	if !CodexSessionGone(gone.stderr, gone.exit) {
		t.Errorf("CodexSessionGone is false for the CLI's answer: exit %d, %s", gone.exit, gone.stderr)
	}
}

// codexThreadOf is the real thread id behind the normalized one in output.
func codexThreadOf(t *testing.T, output []byte, threads map[string]string) string {
	t.Helper()
	for real, name := range threads {
		if bytes.Contains(output, []byte(`"thread_id":"`+name+`"`)) {
			return real
		}
	}
	t.Fatalf("no thread in %s", output)
	return ""
}
