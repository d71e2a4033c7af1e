package steps

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/internal/mockapi"
)

// The parser tests read output captured from the real Gemini CLI against
// the mock (internal/mockapi), in testdata/gemini. To capture it again
// (after a CLI upgrade, say), with the CLIs installed by make test:
//
//	PIPELINE_AGENT_CLIS=$PWD/.cache/npm/node_modules/.bin \
//	  go test ./steps -run TestCaptureGemini -capture-gemini
//
// and review the diff: TestCaptureGemini says what each file holds.
var captureGemini = flag.Bool("capture-gemini", false, "run the real Gemini CLI against the mock and rewrite testdata/gemini")

const geminiTestdata = "testdata/gemini"

func TestGeminiInvocation(t *testing.T) {
	long := strings.Repeat("x", geminiMaxArg+1)
	for _, c := range []struct {
		name  string
		req   Request
		args  []string
		stdin string
	}{
		{"new session", Request{Prompt: "Write it."},
			[]string{"gemini", "--prompt=Write it.", "-o", "stream-json", "--skip-trust"}, ""},
		{"model, resume, extra args", Request{Prompt: "Go on.", Model: "gemini-2.5-pro", SessionID: "a91fab3d-5c77-4922-ac5a-3b7293918c5e", Args: []string{"--yolo"}},
			[]string{"gemini", "--prompt=Go on.", "-o", "stream-json", "-m", "gemini-2.5-pro", "-r", "a91fab3d-5c77-4922-ac5a-3b7293918c5e", "--skip-trust", "--yolo"}, ""},
		{"a prompt that starts with a dash", Request{Prompt: "-x marks the spot"},
			[]string{"gemini", "--prompt=-x marks the spot", "-o", "stream-json", "--skip-trust"}, ""},
		{"a prompt too long for an argument", Request{Prompt: long},
			[]string{"gemini", "--prompt= ", "-o", "stream-json", "--skip-trust"}, long},
	} {
		inv, err := geminiAdapter{}.Prepare(c.req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(inv.Args, c.args) || inv.Stdin != c.stdin {
			t.Errorf("%s: args %q, stdin %d bytes; want %q, %d bytes", c.name, inv.Args, len(inv.Stdin), c.args, len(c.stdin))
		}
	}
	if a, err := AdapterFor("gemini"); err != nil || a == nil {
		t.Errorf("gemini is not registered: %v", err)
	}
}

// geminiCaptured is one captured run: its stdout, stderr and exit code.
type geminiCaptured struct {
	stdout, stderr []byte
	exit           int
}

func readGemini(t *testing.T, name string) geminiCaptured {
	t.Helper()
	var c geminiCaptured
	var err error
	ext := ".jsonl"
	if name == "list-sessions" {
		ext = ".txt"
	}
	if c.stdout, err = os.ReadFile(filepath.Join(geminiTestdata, name+ext)); err != nil {
		t.Fatalf("%v (capture it: go test ./steps -run TestCaptureGemini -capture-gemini)", err)
	}
	if c.stderr, err = os.ReadFile(filepath.Join(geminiTestdata, name+".stderr")); err != nil {
		t.Fatal(err)
	}
	code, err := os.ReadFile(filepath.Join(geminiTestdata, name+".exit"))
	if err != nil {
		t.Fatal(err)
	}
	if c.exit, err = strconv.Atoi(strings.TrimSpace(string(code))); err != nil {
		t.Fatal(err)
	}
	return c
}

// geminiTurn is what a parser made of one turn's output.
type geminiTurn struct {
	text, errors string
	// tools are the tool calls shown; shown is the text and the calls, in order.
	tools, shown string
	errorEvents  []Event
	sessions     []string
	usage        []Event
	results      []string
	// sessionFirst is set when the session came before the first text.
	sessionFirst bool
}

func parseGemini(stdout []byte) geminiTurn {
	p := &geminiParser{}
	var turn geminiTurn
	// In chunks of odd sizes, as the engine reads them, split into lines.
	for _, line := range bytes.SplitAfter(stdout, []byte("\n")) {
		for _, ev := range p.Line(bytes.TrimSuffix(line, []byte("\n"))) {
			switch ev.Kind {
			case EventText:
				turn.text += ev.Text
				turn.shown += ev.Text
			case EventTool:
				turn.tools += ev.Text
				turn.shown += ev.Text
			case EventError:
				turn.errors += ev.Text
				turn.errorEvents = append(turn.errorEvents, ev)
			case EventSession:
				turn.sessions = append(turn.sessions, ev.SessionID)
				turn.sessionFirst = turn.text == ""
			case EventUsage:
				turn.usage = append(turn.usage, ev)
			case EventResult:
				turn.results = append(turn.results, ev.Text)
			}
		}
	}
	return turn
}

// sessionOf is the session id of the init line of a captured run.
func geminiSessionOf(t *testing.T, stdout []byte) string {
	t.Helper()
	for _, line := range bytes.Split(stdout, []byte("\n")) {
		var init struct {
			Type      string `json:"type"`
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal(line, &init) == nil && init.Type == "init" {
			return init.SessionID
		}
	}
	t.Fatalf("no init line in %s", stdout)
	return ""
}

func TestGeminiParserFirstTurn(t *testing.T) {
	c := readGemini(t, "turn")
	turn := parseGemini(c.stdout)
	if c.exit != 0 {
		t.Fatalf("captured exit %d", c.exit)
	}
	// The prompt the CLI echoes (role user) is not the agent's text.
	if turn.text != "done: [Feature: login] Write the login form." {
		t.Errorf("text %q", turn.text)
	}
	if want := []string{geminiSessionOf(t, c.stdout)}; !reflect.DeepEqual(turn.sessions, want) || !turn.sessionFirst {
		t.Errorf("sessions %q (before the text: %v), want %q", turn.sessions, turn.sessionFirst, want)
	}
	want := Event{Kind: EventUsage, InputTokens: 1200, OutputTokens: 30, ContextTokens: 1200}
	if len(turn.usage) != 1 || turn.usage[0] != want {
		t.Errorf("usage %+v, want %+v (the mock's default)", turn.usage, want)
	}
	if turn.errors != "" || !reflect.DeepEqual(turn.results, []string{"success"}) {
		t.Errorf("errors %q, results %q", turn.errors, turn.results)
	}
}

// A resumed turn keeps the session id, and its stats are the turn's own,
// not the session's so far.
func TestGeminiParserResumedTurn(t *testing.T) {
	first, resumed := readGemini(t, "turn"), readGemini(t, "resume")
	turn := parseGemini(resumed.stdout)
	if want := geminiSessionOf(t, first.stdout); !reflect.DeepEqual(turn.sessions, []string{want}) {
		t.Errorf("sessions %q, want the first turn's %s", turn.sessions, want)
	}
	if turn.text != "done: Now test it." {
		t.Errorf("text %q", turn.text)
	}
	if len(turn.usage) != 1 || turn.usage[0].InputTokens != 1200 || turn.usage[0].OutputTokens != 30 {
		t.Errorf("usage %+v, want the turn's 1200 + 30", turn.usage)
	}
}

// With no model the CLI routes the prompt through a flash-lite model
// first: its tokens are a stats entry of their own, left out.
func TestGeminiParserAutoCountsTheMainModelNotTheRouter(t *testing.T) {
	c := readGemini(t, "auto")
	if !bytes.Contains(c.stdout, []byte(`"model":"auto"`)) || !bytes.Contains(c.stdout, []byte("flash-lite")) {
		t.Fatalf("the capture has no routing call:\n%s", c.stdout)
	}
	turn := parseGemini(c.stdout)
	want := Event{Kind: EventUsage, InputTokens: 1200, OutputTokens: 30, ContextTokens: 1200}
	if len(turn.usage) != 1 || turn.usage[0] != want {
		t.Errorf("usage %+v, want the main model's %+v (the totals add the router's 50 + 5)", turn.usage, want)
	}
}

func TestGeminiUsageOfModels(t *testing.T) {
	for _, c := range []struct {
		name, line      string
		input, output   int
		context, events int
	}{
		{"thinking tokens count as output", `{"type":"init","session_id":"s","model":"gemini-2.5-pro"}
{"type":"result","status":"success","stats":{"total_tokens":1500,"input_tokens":1000,"output_tokens":100,"models":{"gemini-2.5-pro":{"total_tokens":1500,"input_tokens":1000,"output_tokens":100}}}}`, 1000, 500, 1000, 1},
		{"a version of the model named", `{"type":"init","session_id":"s","model":"gemini-2.5-flash"}
{"type":"result","status":"success","stats":{"total_tokens":130,"input_tokens":120,"output_tokens":10,"models":{"gemini-2.5-flash-001":{"total_tokens":110,"input_tokens":100,"output_tokens":10},"gemini-2.5-flash-lite":{"total_tokens":20,"input_tokens":20,"output_tokens":0}}}}`, 100, 10, 100, 1},
		{"auto, fallen back from pro to flash", `{"type":"init","session_id":"s","model":"auto"}
{"type":"result","status":"success","stats":{"models":{"gemini-2.5-flash-lite":{"total_tokens":55,"input_tokens":50,"output_tokens":5},"gemini-2.5-pro":{"total_tokens":110,"input_tokens":100,"output_tokens":10},"gemini-2.5-flash":{"total_tokens":220,"input_tokens":200,"output_tokens":20}}}}`, 300, 30, 300, 1},
		{"no models: the totals", `{"type":"result","status":"success","stats":{"total_tokens":7,"input_tokens":5,"output_tokens":2}}`, 5, 2, 5, 1},
	} {
		turn := parseGemini([]byte(c.line))
		if len(turn.usage) != c.events {
			t.Errorf("%s: %d usage events", c.name, len(turn.usage))
			continue
		}
		if u := turn.usage[0]; u.InputTokens != c.input || u.OutputTokens != c.output || u.ContextTokens != c.context || u.CostUSD != 0 {
			t.Errorf("%s: usage %+v, want %d in, %d out, %d context", c.name, u, c.input, c.output, c.context)
		}
	}
}

// An API error: the CLI exits with the HTTP status (500 & 0xff = 244),
// writes the error in the result line and a stack on stderr. The session
// it named is not reported: the CLI took the prompt back out of it.
func TestGeminiParserFailedTurn(t *testing.T) {
	c := readGemini(t, "fail")
	turn := parseGemini(c.stdout)
	if c.exit != 244 {
		t.Errorf("captured exit %d, want 244", c.exit)
	}
	if !strings.Contains(turn.errors, "error: [API Error:") || !strings.Contains(turn.errors, "Internal error encountered") {
		t.Errorf("errors %q", turn.errors)
	}
	if turn.text != "" || len(turn.sessions) != 0 || !reflect.DeepEqual(turn.results, []string{"error"}) {
		t.Errorf("text %q, sessions %q, results %q", turn.text, turn.sessions, turn.results)
	}
	if len(turn.usage) != 1 || turn.usage[0].InputTokens+turn.usage[0].OutputTokens != 0 {
		t.Errorf("usage %+v", turn.usage)
	}
	if !bytes.Contains(c.stderr, []byte("gemini-client-error-")) || GeminiSessionGone(c.stderr, c.exit) {
		t.Errorf("stderr (gone %v):\n%s", GeminiSessionGone(c.stderr, c.exit), c.stderr)
	}
	if len(turn.errorEvents) != 1 || turn.errorEvents[0].RateLimited {
		t.Errorf("error events %+v", turn.errorEvents)
	}
}

// HTTP 429: the CLI exits 173 (429 & 0xff); its message says when to
// come back, counted here from the result line's time.
func TestGeminiParserRateLimit(t *testing.T) {
	c := readGemini(t, "ratelimit")
	turn := parseGemini(c.stdout)
	if c.exit != 173 || len(turn.errorEvents) != 1 || len(turn.sessions) != 0 {
		t.Fatalf("exit %d, errors %+v, sessions %q", c.exit, turn.errorEvents, turn.sessions)
	}
	var result struct {
		Timestamp time.Time `json:"timestamp"`
	}
	lines := bytes.Split(bytes.TrimSpace(c.stdout), []byte("\n"))
	if err := json.Unmarshal(lines[len(lines)-1], &result); err != nil {
		t.Fatal(err)
	}
	ev := turn.errorEvents[0]
	if !ev.RateLimited || !ev.ResumeAfter.Equal(result.Timestamp.Add(mockapi.GeminiRetryDelay)) {
		t.Errorf("rate limited %v, resume after %v; want %v", ev.RateLimited, ev.ResumeAfter, result.Timestamp.Add(mockapi.GeminiRetryDelay))
	}
	if !strings.Contains(ev.Text, "Quota exceeded") {
		t.Errorf("text %q", ev.Text)
	}
}

// The slow reply streams its checkpoint in a delta of its own; a turn
// stopped there (SIGINT, as a trigger stops a step) exits 0 with no
// result line, and its session is reported: it keeps the prompt and
// resumes.
func TestGeminiParserCheckpointMidTurn(t *testing.T) {
	for _, name := range []string{"slow", "interrupted"} {
		c := readGemini(t, name)
		turn := parseGemini(c.stdout)
		if !strings.Contains(turn.text, "working, step 3\n"+mockapi.GeminiCheckpointLine) {
			t.Errorf("%s: text %q lacks the checkpoint line", name, turn.text)
		}
		if want := []string{geminiSessionOf(t, c.stdout)}; !reflect.DeepEqual(turn.sessions, want) {
			t.Errorf("%s: sessions %q, want %q", name, turn.sessions, want)
		}
		if name == "interrupted" && (c.exit != 0 || len(turn.results) != 0 || len(turn.usage) != 0) {
			t.Errorf("interrupted: exit %d, results %q, usage %+v", c.exit, turn.results, turn.usage)
		}
	}
}

func TestGeminiParserOtherLines(t *testing.T) {
	out := `{"type":"init","session_id":"s1","model":"gemini-2.5-flash"}
{"type":"message","role":"user","content":"[CHECKPOINT] in the prompt"}
{"type":"message","role":"assistant","content":"Reading","delta":true}
{"type":"tool_use","tool_name":"read_file","tool_id":"t1","parameters":{"file_path":"[CHECKPOINT].md"}}
{"type":"tool_result","tool_id":"t1","status":"error","error":{"type":"FILE_NOT_FOUND","message":"no such file"}}
{"type":"error","severity":"warning","message":"Loop detected"}
{"type":"error","severity":"error","message":"Maximum session turns exceeded"}
not json at all

{"type":"something_new","content":"ignored"}
`
	turn := parseGemini([]byte(out))
	// The tool call shows on a line of its own, as logs renders it; it is
	// not the agent's text, which the markers are read from.
	wantShown := "Reading\n▸ read_file [CHECKPOINT].md\ntool error: no such file\nwarning: Loop detected\nnot json at all\n"
	if turn.shown != wantShown || turn.tools != "\n▸ read_file [CHECKPOINT].md\n" || turn.errors != "error: Maximum session turns exceeded\n" {
		t.Errorf("shown %q\ntools %q\nerrors %q", turn.shown, turn.tools, turn.errors)
	}
	if strings.Contains(turn.text, "[CHECKPOINT]") {
		t.Error("a checkpoint marker in the prompt or in a tool's parameters came out as the agent's text")
	}
	if !reflect.DeepEqual(turn.sessions, []string{"s1"}) {
		t.Errorf("sessions %q", turn.sessions)
	}
}

func TestGeminiSessionGone(t *testing.T) {
	c := readGemini(t, "gone")
	if c.exit != 42 || !GeminiSessionGone(c.stderr, c.exit) {
		t.Errorf("captured: exit %d, gone %v:\n%s", c.exit, GeminiSessionGone(c.stderr, c.exit), c.stderr)
	}
	for _, s := range []struct {
		stderr string
		code   int
		gone   bool
	}{
		{"Error resuming session: No previous sessions found for this project.", 42, true},
		{"Error resuming session: No previous sessions found for this project.", 0, false},
		{"Invalid auth method selected", 41, false},
		{"Some other bad input", 42, false},
	} {
		if got := GeminiSessionGone([]byte(s.stderr), s.code); got != s.gone {
			t.Errorf("%q exit %d: gone %v", s.stderr, s.code, got)
		}
	}
}

// The captured list: the CLI titled each session with its first prompt,
// except the latest, which gemini --list-sessions summarised first (the
// mock's summary drops the header, as a model may).
func TestGeminiListSessionsCaptured(t *testing.T) {
	c := readGemini(t, "list-sessions")
	list := GeminiListSessions(string(c.stdout))
	login := geminiSessionOf(t, readGemini(t, "turn").stdout)
	search := geminiSessionOf(t, readGemini(t, "auto").stdout)
	slow := geminiSessionOf(t, readGemini(t, "slow").stdout)
	interrupted := geminiSessionOf(t, readGemini(t, "interrupted").stdout)
	want := []GeminiSession{
		{Index: 1, Title: "[Feature: login] Write the login form. Spec: spec.md", UUID: login},
		{Index: 2, Title: "[Feature: search] Find the search bug.", UUID: search},
		{Index: 3, Title: "[SLOW-CHECKPOINT] Take your time.", UUID: slow},
		{Index: 4, Title: "Build the login form", UUID: interrupted},
	}
	if !reflect.DeepEqual(list, want) {
		t.Fatalf("sessions\n%+v\nwant\n%+v\nfrom\n%s", list, want, c.stdout)
	}
	now := time.Now()
	for feature, want := range map[string]string{"login": login, "search": search, "billing": ""} {
		got, ok := FindGeminiSession(list, feature, now)
		if got != want || ok != (want != "") {
			t.Errorf("feature %s: %q %v, want %q", feature, got, ok, want)
		}
	}
}

func TestGeminiListSessions(t *testing.T) {
	out := `Warning: 256-color support not detected.

Available sessions for this project (6):
  1. [Feature: api] Design the API (8 days ago) [11111111-1111-4111-8111-111111111111]
  2. [Feature: api] Build (the API) (6 days ago) [22222222-2222-4222-8222-222222222222]
  3. [Feature: api] Review (2 hours ago) [33333333-3333-4333-8333-333333333333]
  4. [Feature: ui] Sketch it (1 minute ago) [44444444-4444-4444-8444-444444444444]
  5. Fix the [Feature: api] docs (5 minutes ago, current) [55555555-5555-4555-8555-555555555555]
  6. [Feature: old] Long gone (7 days ago) [66666666-6666-4666-8666-666666666666]
`
	list := GeminiListSessions(out)
	ages := []time.Duration{8 * 24 * time.Hour, 6 * 24 * time.Hour, 2 * time.Hour, time.Minute, 5 * time.Minute, 7 * 24 * time.Hour}
	if len(list) != len(ages) {
		t.Fatalf("%d sessions: %+v", len(list), list)
	}
	for i, s := range list {
		if s.Index != i+1 || s.Age != ages[i] || !strings.HasPrefix(s.UUID, strings.Repeat(strconv.Itoa(i+1), 8)) {
			t.Errorf("session %d: %+v", i+1, s)
		}
	}
	if list[1].Title != "[Feature: api] Build (the API)" {
		t.Errorf("a title with parentheses: %q", list[1].Title)
	}
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for feature, want := range map[string]string{
		"api": "55555555-5555-4555-8555-555555555555", // the latest updated, wherever the header is
		"ui":  "44444444-4444-4444-8444-444444444444",
		"old": "", // 7 days ago is more than a week
		"API": "",
	} {
		got, ok := FindGeminiSession(list, feature, now)
		if got != want || ok != (want != "") {
			t.Errorf("feature %s: %q %v, want %q", feature, got, ok, want)
		}
	}
	// Ties (ages are rounded) go to the later session.
	tie := GeminiListSessions("  1. [Feature: a] x (Just now) [aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa]\n  2. [Feature: a] y (Just now) [bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb]\n")
	if got, _ := FindGeminiSession(tie, "a", now); got != "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb" {
		t.Errorf("tie: %s", got)
	}
	if list := GeminiListSessions("No previous sessions found for this project."); len(list) != 0 {
		t.Errorf("no sessions: %+v", list)
	}
}

func FuzzGeminiParser(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(geminiTestdata, "*.jsonl"))
	for _, file := range files {
		content, _ := os.ReadFile(file)
		for _, line := range bytes.Split(content, []byte("\n")) {
			f.Add(line)
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		p := &geminiParser{}
		for _, ev := range append(p.Line(line), p.Line(line)...) {
			if ev.CostUSD != 0 {
				t.Errorf("a cost from %q", line)
			}
			if ev.Kind == EventSession && ev.SessionID == "" {
				t.Errorf("an empty session from %q", line)
			}
		}
	})
}

// TestCaptureGemini writes testdata/gemini, running each case with the
// real CLI against the mock in one temporary HOME and project folder:
// <case>.jsonl (stdout), <case>.stderr, <case>.exit, then
// list-sessions.txt (gemini --list-sessions after them all) and
// requests.txt (what the mock received). Temporary paths become $HOME and
// $PROJECT. The cases: turn (a first turn with a model), resume (its
// second turn), auto (no model: the routing call), fail (an API error; its
// prompt starts with a dash), ratelimit (HTTP 429, retry in 42s), slow (a reply with a checkpoint in the
// middle), interrupted (the same, stopped with SIGINT at the checkpoint),
// gone (-r of a session that is not there).
func TestCaptureGemini(t *testing.T) {
	if !*captureGemini {
		t.Skip("regenerates testdata/gemini with the real CLI: go test ./steps -run TestCaptureGemini -capture-gemini")
	}
	cli := geminiCLI(t)
	mock := mockapi.NewGemini()
	defer mock.Close()
	mock.SetSlow(600*time.Millisecond, 100*time.Millisecond)
	home, project := t.TempDir(), t.TempDir()
	if err := mockapi.WriteGeminiHome(home); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(geminiTestdata, 0o755); err != nil {
		t.Fatal(err)
	}
	normalize := func(b []byte) []byte {
		b = bytes.ReplaceAll(b, []byte(home), []byte("$HOME"))
		b = bytes.ReplaceAll(b, []byte(project), []byte("$PROJECT"))
		// The CLI names a project's folder after the project's.
		return bytes.ReplaceAll(b, []byte("/.gemini/tmp/"+filepath.Base(project)+"/"), []byte("/.gemini/tmp/PROJECT/"))
	}
	save := func(name, ext string, c geminiCaptured) {
		for file, content := range map[string][]byte{name + ext: c.stdout, name + ".stderr": c.stderr,
			name + ".exit": fmt.Appendf(nil, "%d\n", c.exit)} {
			if err := os.WriteFile(filepath.Join(geminiTestdata, file), content, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("%s: exit %d, %d bytes out, %d bytes err", name, c.exit, len(c.stdout), len(c.stderr))
	}
	run := func(args []string, stdin string, interruptAt string) geminiCaptured {
		t.Helper()
		cmd := exec.Command(cli, args...)
		cmd.Dir = project
		cmd.Env = append(os.Environ(), mock.Env(home)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if stdin != "" {
			cmd.Stdin = strings.NewReader(stdin)
		}
		stdout := &geminiWatch{want: []byte(interruptAt)}
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = stdout, &stderr
		stdout.fire = func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }
		err := cmd.Run()
		c := geminiCaptured{stdout: normalize(stdout.buf.Bytes()), stderr: normalize(stderr.Bytes())}
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			c.exit = exitErr.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return c
	}
	turn := func(name string, r Request, interruptAt string) geminiCaptured {
		t.Helper()
		inv, err := geminiAdapter{}.Prepare(r)
		if err != nil {
			t.Fatal(err)
		}
		c := run(inv.Args[1:], inv.Stdin, interruptAt)
		save(name, ".jsonl", c)
		return c
	}

	// The summary the title call gets drops the feature header, as a
	// model may well do.
	mock.SetTitle("Build the login form")
	first := turn("turn", Request{Prompt: "[Feature: login] Write the login form.\n\nSpec: spec.md", Model: "gemini-2.5-flash"}, "")
	turn("resume", Request{Prompt: "Now test it.", Model: "gemini-2.5-flash", SessionID: geminiSessionOf(t, first.stdout)}, "")
	turn("auto", Request{Prompt: "[Feature: search] Find the search bug."}, "")
	turn("fail", Request{Prompt: "-[FAIL] a prompt that starts with a dash", Model: "gemini-2.5-flash"}, "")
	mock.SetFailStatus(http.StatusTooManyRequests)
	mock.FailNext(1)
	turn("ratelimit", Request{Prompt: "Too fast.", Model: "gemini-2.5-flash"}, "")
	mock.SetFailStatus(http.StatusInternalServerError)
	turn("slow", Request{Prompt: "[SLOW-CHECKPOINT] Take your time.", Model: "gemini-2.5-flash"}, "")
	mock.SetSlow(30*time.Second, 100*time.Millisecond)
	turn("interrupted", Request{Prompt: "[SLOW-CHECKPOINT] Stop me there.", Model: "gemini-2.5-flash"}, "[CHECKPOINT]")
	turn("gone", Request{Prompt: "Go on.", Model: "gemini-2.5-flash", SessionID: "00000000-1111-2222-3333-444444444444"}, "")
	save("list-sessions", ".txt", run([]string{"--list-sessions"}, "", ""))

	var log strings.Builder
	for _, r := range mock.Requests() {
		first, _, _ := strings.Cut(r.LastUserText(), "\n")
		if len(first) > 60 {
			first = first[:60] + "..."
		}
		fmt.Fprintf(&log, "%s %s %s %d %q\n", r.Method, r.Path, r.Kind, r.Status, first)
	}
	if err := os.WriteFile(filepath.Join(geminiTestdata, "requests.txt"), normalize([]byte(log.String())), 0o644); err != nil {
		t.Fatal(err)
	}
}

// geminiWatch keeps a command's output and calls fire once want shows up
// in it.
type geminiWatch struct {
	buf   bytes.Buffer
	want  []byte
	fire  func()
	fired bool
}

func (w *geminiWatch) Write(p []byte) (int, error) {
	w.buf.Write(p)
	if len(w.want) > 0 && !w.fired && bytes.Contains(w.buf.Bytes(), w.want) {
		w.fired = true
		w.fire()
	}
	return len(p), nil
}

// geminiCLI is the real Gemini CLI, or a failure that says how to get it.
func geminiCLI(t *testing.T) string {
	path, _ := mockapi.AgentCLI(t, "gemini")
	return path
}
