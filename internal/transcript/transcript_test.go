package transcript

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func render(t *testing.T, path string, f Format, dir string) []Item {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return Render(data, f, dir)
}

func text(t *testing.T, items []Item, o Options) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteText(&b, items, o); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A turn captured from the real Claude Code CLI (steps/testdata) shows its
// text once, though it came as deltas and as the message, and its usage.
func TestClaudeCapturedTurnShowsTheTextOnce(t *testing.T) {
	items := render(t, "../../steps/testdata/claude/checkpoint.jsonl", Detect, "")
	out := text(t, items, Options{})
	if n := strings.Count(out, "Working on it."); n != 1 {
		t.Errorf("the text shows %d times, want once:\n%s", n, out)
	}
	for _, noise := range []string{"stream_event", "content_block_delta", "session_id", "{"} {
		if strings.Contains(out, noise) {
			t.Errorf("the rendered transcript holds %q:\n%s", noise, out)
		}
	}
	last := items[len(items)-1]
	if last.Kind != Usage || last.InputTokens != 100 || last.OutputTokens != 20 || last.CostUSD != 0.0004 {
		t.Errorf("last item = %+v, want the turn's usage (100 in, 20 out, $0.0004)", last)
	}
}

func TestClaudeToolCallsAndResults(t *testing.T) {
	items := render(t, "testdata/claude-tools.jsonl", Detect, "")
	want := `I will fix the word count.
▸ Edit src/wc.py
  │ The file /w/src/wc.py has been updated.
  │ line 2
  │ line 3
  │ … 2 more lines
▸ Bash go test ./...
  ✗ FAIL wc 0.01s
The tests fail; the review drafted says why.
· 1,234 tokens in, 56 out, $0.0123
`
	if got := text(t, items, Options{}); got != want {
		t.Errorf("rendered:\n%s\nwant:\n%s", got, want)
	}
	verbose := text(t, items, Options{Verbose: true})
	if !strings.HasPrefix(verbose, "  ∴ The counter is off by one.\nI will fix") {
		t.Errorf("with Verbose the thinking shows first:\n%s", verbose)
	}
	var calls []Item
	for _, it := range items {
		if it.Kind == ToolCall || it.Kind == ToolResult {
			calls = append(calls, it)
		}
	}
	if len(calls) != 4 || calls[1].Call != 1 || calls[1].Tool != "Edit" || calls[3].Call != 2 || !calls[3].Failed ||
		calls[0].Turn != 1 || calls[2].Turn != 2 {
		t.Errorf("calls and results = %+v; want Edit (call 1, turn 1) answered, Bash (call 2, turn 2) failed", calls)
	}
	if last := items[len(items)-2]; last.Kind != Text || last.Turn != 3 {
		t.Errorf("the last text = %+v, want turn 3", last)
	}
}

// A step stopped while a message streamed keeps what it said so far.
func TestClaudeStoppedMidMessageShowsTheStreamedText(t *testing.T) {
	data, err := os.ReadFile("testdata/claude-tools.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	cut := bytes.Index(data, []byte(`{"type":"assistant","message":{"id":"msg_3"`))
	out := text(t, Render(data[:cut], Claude, ""), Options{})
	if !strings.HasSuffix(out, "  ✗ FAIL wc 0.01s\nThe tests fail\n") {
		t.Errorf("rendered:\n%s\nwant the streamed text of the message cut short at the end", out)
	}
}

func TestGeminiToolCallsAndResults(t *testing.T) {
	items := render(t, "testdata/gemini-tools.jsonl", Detect, "/w")
	want := `Reading the file first.
▸ read_file src/wc.py
  │ def wc(s):
  │     return len(s.split()) + 1
▸ run_shell_command python -m pytest
  ✗ exit 1: 1 failed
One test fails.
· 1,200 tokens in, 30 out
`
	if got := text(t, items, Options{}); got != want {
		t.Errorf("rendered:\n%s\nwant:\n%s", got, want)
	}
}

func TestCodexToolCallsAndResults(t *testing.T) {
	items := render(t, "testdata/codex-tools.jsonl", Detect, "/w")
	want := `▸ shell go test ./...
  ✗ --- FAIL: TestWC
  │ FAIL
  │ (exit 1)
▸ edit wc.go
Fixed the off-by-one in wc.go.
· 4,200 tokens in, 100 out
`
	if got := text(t, items, Options{}); got != want {
		t.Errorf("rendered:\n%s\nwant:\n%s", got, want)
	}
	if got := text(t, items, Options{Verbose: true}); !strings.HasPrefix(got, "  ∴ Look at the tests first.\n") {
		t.Errorf("with Verbose the reasoning shows first:\n%s", got)
	}
}

// Every format's real captures render without a line of JSON left.
func TestCapturedTranscriptsLeaveNoJSON(t *testing.T) {
	for _, pattern := range []string{"../../steps/testdata/claude/*.jsonl", "../../steps/testdata/gemini/*.jsonl", "../../steps/testdata/codex/*.jsonl"} {
		paths, _ := filepath.Glob(pattern)
		if len(paths) == 0 {
			t.Fatalf("no capture matches %s", pattern)
		}
		for _, path := range paths {
			if strings.Contains(path, "rollout") {
				continue // Codex's own session file, not what exec prints
			}
			out := text(t, render(t, path, Detect, ""), Options{Verbose: true})
			for _, line := range strings.Split(out, "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), "{") {
					t.Errorf("%s: a line of JSON is left: %s", path, line)
				}
			}
		}
	}
}

func TestPlainOutputAndStandardError(t *testing.T) {
	items := Render([]byte("ok 1\n[stderr] warning: x\n{\"not\":\"agent\"}\n"), Plain, "")
	if len(items) != 3 || items[1].Kind != Output || !items[1].Stderr || items[1].Text != "warning: x" || items[2].Text != `{"not":"agent"}` {
		t.Errorf("items = %+v", items)
	}
	claude := Render([]byte("[stderr] rate limited\nnot json\n"), Claude, "")
	if len(claude) != 2 || !claude[0].Stderr || claude[1].Kind != Output {
		t.Errorf("a parsed agent's standard error and stray lines = %+v", claude)
	}
}

func TestShortArgs(t *testing.T) {
	long := strings.Repeat("x", 150)
	for _, c := range []struct {
		tool  string
		input map[string]any
		want  string
	}{
		{"Edit", map[string]any{"file_path": "/w/a/b.go", "old_string": "x"}, "a/b.go"},
		{"Read", map[string]any{"file_path": "/elsewhere/b.go"}, "/elsewhere/b.go"},
		{"Read", map[string]any{"file_path": "/w/../etc/passwd"}, "/w/../etc/passwd"},
		{"Bash", map[string]any{"command": "go test ./...\ngo vet ./...", "description": "tests"}, "go test ./... …"},
		{"Grep", map[string]any{"pattern": "TODO", "path": "/w/src"}, "TODO in src"},
		{"WebFetch", map[string]any{"url": "https://example.com", "prompt": "read"}, "https://example.com"},
		{"Bash", map[string]any{"command": long}, strings.Repeat("x", 99) + "…"},
		{"mcp__x__y", map[string]any{"n": 1}, `{"n":1}`},
		{"TodoWrite", nil, ""},
	} {
		if got := ShortArgs(c.tool, c.input, "/w"); got != c.want {
			t.Errorf("ShortArgs(%s, %v) = %q, want %q", c.tool, c.input, got, c.want)
		}
	}
}

// Search indexes each thing said once: the text, the call, the result;
// never a key of the JSON the CLI wrote.
func TestWordsSayEachThingOnce(t *testing.T) {
	items := render(t, "testdata/claude-tools.jsonl", Detect, "")
	var all []string
	for _, it := range items {
		if w := Words(it); w != "" {
			all = append(all, w)
		}
	}
	joined := strings.Join(all, "\n")
	if n := strings.Count(joined, "drafted"); n != 1 {
		t.Errorf("%q said once is indexed %d times:\n%s", "drafted", n, joined)
	}
	for _, key := range []string{"text_delta", "tool_use_id", "msg_", "session_id"} {
		if strings.Contains(joined, key) {
			t.Errorf("the words hold %q:\n%s", key, joined)
		}
	}
	if !strings.Contains(joined, "Edit src/wc.py") || !strings.Contains(joined, "FAIL wc") {
		t.Errorf("the words miss the call or its result:\n%s", joined)
	}
}

func TestItemsAsJSON(t *testing.T) {
	items := render(t, "testdata/codex-tools.jsonl", Detect, "/w")
	b, err := json.Marshal(items[1])
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"kind":"tool_call","turn":1,"call":1,"tool":"shell","args":"go test ./..."}`; string(b) != want {
		t.Errorf("json = %s, want %s", b, want)
	}
}

func TestSilentLines(t *testing.T) {
	for line, want := range map[string]bool{
		`{"type":"stream_event","event":{}}`:                          true,
		`{"type":"system","subtype":"init"}`:                          true,
		`{"type":"result","subtype":"success","result":"done"}`:       true,
		`{"type":"result","is_error":true,"result":"the API failed"}`: false,
		`{"type":"assistant","message":{}}`:                           false,
		`{"type":"item.started","item":{}}`:                           true,
		`{"type":"item.completed","item":{}}`:                         false,
		`{"type":"init","session_id":"g"}`:                            true,
		`{"level":"info","type":"system"}`:                            false,
		`plain text`:                                                  false,
	} {
		if got := Silent([]byte(line)); got != want {
			t.Errorf("Silent(%s) = %v, want %v", line, got, want)
		}
	}
}
