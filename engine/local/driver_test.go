package local_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/clock"
	"github.com/pipeline-dev/pipeline/internal/proctest"
	"github.com/pipeline-dev/pipeline/internal/testwait"
	"github.com/pipeline-dev/pipeline/steps"
)

// testView records what a run shows and hands each line of output to the
// test as it arrives.
type testView struct {
	mu      sync.Mutex
	output  bytes.Buffer
	partial []byte
	said    []string
	lines   chan string
	// chunks is told, without blocking, that output arrived.
	chunks chan struct{}
}

func newTestView() *testView {
	return &testView{lines: make(chan string, 1000), chunks: make(chan struct{}, 1)}
}

func (v *testView) StepStarted(local.StepInfo) {}
func (v *testView) Output(chunk []byte) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.output.Write(chunk)
	select {
	case v.chunks <- struct{}{}:
	default:
	}
	v.partial = append(v.partial, chunk...)
	for {
		i := bytes.IndexByte(v.partial, '\n')
		if i < 0 {
			return
		}
		select {
		case v.lines <- string(v.partial[:i]):
		default:
		}
		v.partial = v.partial[i+1:]
	}
}
func (v *testView) Progress(local.Progress)                        {}
func (v *testView) StepFinished(local.StepInfo, engine.StepResult) {}
func (v *testView) Say(format string, args ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.said = append(v.said, fmt.Sprintf(format, args...))
}
func (v *testView) Close() error { return nil }

func (v *testView) saidText() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return strings.Join(v.said, "\n")
}

// awaitLine waits for a line of output: the child tells when it is ready.
func (v *testView) awaitLine(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(testwait.Failsafe)
	for {
		select {
		case line := <-v.lines:
			if strings.Contains(line, want) {
				return
			}
		case <-timeout:
			t.Fatalf("no line %q in the output", want)
		}
	}
}

type harness struct {
	t          *testing.T
	dir        string
	file       string
	plan       *spec.Plan
	clock      clock.Clock
	driver     *local.Driver
	sess       *session.Session
	view       *testView
	interrupts chan local.Interrupt
}

// pipelineIn writes yamlText as the phases.yaml of dir and loads it.
func pipelineIn(t *testing.T, dir, yamlText string) (file string, plan *spec.Plan) {
	t.Helper()
	file = filepath.Join(dir, "phases.yaml")
	if err := os.WriteFile(file, []byte(yamlText), 0o600); err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Load(file, "")
	if err != nil {
		t.Fatal(err)
	}
	return file, plan
}

// storeIn opens the session store of the pipeline in dir.
func storeIn(t *testing.T, dir string) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(dir, ".pipeline"))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// newHarness makes a pipeline folder with yamlText as its phases.yaml;
// the test may change the plan and the driver before start.
func newHarness(t *testing.T, yamlText string, clk clock.Clock) *harness {
	t.Helper()
	dir := t.TempDir()
	file, plan := pipelineIn(t, dir, yamlText)
	h := &harness{t: t, dir: dir, file: file, plan: plan, clock: clk, view: newTestView(),
		interrupts: make(chan local.Interrupt, 2)}
	h.driver = &local.Driver{View: h.view, Clock: clk, Grace: 5 * time.Second, Tick: 100 * time.Millisecond,
		Interrupts: h.interrupts}
	return h
}

// start opens a new session through the session service and runs it in
// the background.
func (h *harness) start() <-chan engine.State {
	h.t.Helper()
	var err error
	h.sess, err = session.Open(context.Background(), storeIn(h.t, h.dir), session.Options{File: h.file, Plan: h.plan, Create: session.Always})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { h.sess.Close() })
	done := make(chan engine.State, 1)
	go func() {
		s, err := h.driver.Run(context.Background(), h.sess, h.sess.Start(h.clock.Now()))
		if err != nil {
			h.t.Errorf("run: %v", err)
		}
		done <- s
	}()
	return done
}

func (h *harness) await(done <-chan engine.State) engine.State {
	h.t.Helper()
	select {
	case s := <-done:
		return s
	case <-time.After(testwait.Failsafe):
		h.t.Fatal("the run did not end")
	}
	return engine.State{}
}

// awaitAdvancing moves the fake clock to each timer as it is armed until
// the run ends, and returns its state.
func awaitAdvancing(t *testing.T, fake *clock.Fake, done <-chan engine.State) engine.State {
	t.Helper()
	for {
		select {
		case s := <-done:
			return s
		case <-fake.Armed():
			fake.AdvanceToNext()
		case <-time.After(testwait.Failsafe):
			t.Fatal("the run did not end")
		}
	}
}

func transcript(t *testing.T, h *harness, phase string, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.sess.X.Dir, "transcripts", phase, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A checkpoint stops a step that ignores SIGINT: it is killed after the
// grace period, and the session pauses with the checkpoint's note.
func TestRunCheckpointStopsAStepThatIgnoresSIGINT(t *testing.T) {
	h := newHarness(t, `version: 1
agent: {kind: command, command: [sh, -c, 'trap "" INT; echo "[CHECKPOINT] half way"; while :; do sleep 1; done']}
phases: [{name: design}]
`, clock.Real{})
	h.driver.Grace = 200 * time.Millisecond
	s := h.await(h.start())
	if s.Status != engine.StatusPaused || s.Pause.Reason != "checkpoint" || s.Pause.Note != "half way" {
		t.Fatalf("state %+v, pause %+v", s, s.Pause)
	}
	if codes := s.Phases[0].ExitCodes; len(codes) != 1 || codes[0] != -1 {
		t.Errorf("exit codes %v; want -1, killed", codes)
	}
	if got := transcript(t, h, "design", "1-agent.log"); !strings.Contains(got, "[CHECKPOINT] half way") {
		t.Errorf("transcript %q", got)
	}
}

// A pause that stops a step takes its grandchildren with it.
func TestRunPauseKillsGrandchildren(t *testing.T) {
	h := newHarness(t, `version: 1
phases:
  - name: build
    steps: [{run: '(trap "" INT; exec sleep 600) & echo "child $!"; wait'}]
`, clock.Real{})
	h.driver.Grace = 200 * time.Millisecond
	done := h.start()
	var pid int
	for pid == 0 {
		line := <-h.view.lines
		if rest, ok := strings.CutPrefix(line, "child "); ok {
			pid, _ = strconv.Atoi(rest)
		}
	}
	h.interrupts <- local.Interrupt{}
	s := h.await(done)
	if s.Status != engine.StatusPaused || s.Pause.Reason != engine.ReasonInterrupted {
		t.Fatalf("state %+v", s)
	}
	proctest.AwaitExit(t, pid)
	if err := syscall.Kill(pid, 0); err == nil {
		// A zombie is gone in every way that matters, but say so.
		t.Logf("process %d exited and waits to be reaped", pid)
	}
}

// Ctrl+C stops a cooperative step gracefully and pauses.
func TestRunInterruptPausesGracefully(t *testing.T) {
	h := newHarness(t, `version: 1
phases:
  - name: build
    steps: [{run: 'trap "echo saved; exit 0" INT; echo ready; while :; do sleep 1; done'}]
`, clock.Real{})
	done := h.start()
	h.view.awaitLine(t, "ready")
	h.interrupts <- local.Interrupt{}
	s := h.await(done)
	if s.Status != engine.StatusPaused || s.Pause.Reason != engine.ReasonInterrupted || s.Phases[0].Human != 1 {
		t.Fatalf("state %+v", s)
	}
	if got := transcript(t, h, "build", "1-run.log"); !strings.Contains(got, "saved") {
		t.Errorf("the step did not get to save: %q", got)
	}
}

// An idle step times out; a slow step that keeps talking does not. The
// clock is fake: the test moves it, and the children print when told to.
func TestRunIdleTimeout(t *testing.T) {
	clock := clock.NewFake(time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC))
	h := newHarness(t, `version: 1
defaults:
  idle_timeout: 1s
  retry: {when: "false"}
  pause_when: {stalled: timed_out}
phases:
  - name: talk
    steps: [{run: 'exec 3< talk.fifo; while read line <&3; do [ "$line" = end ] && exit 0; echo "said $line"; done; exit 1'}]
  - name: stall
    steps: [{run: 'echo started; exec sleep 600'}]
`, clock)
	fifo := filepath.Join(h.dir, "talk.fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := h.start()
	// One writer for the whole conversation: opening blocks until the
	// step has opened its end.
	talk, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		// 5 × 600ms = 3s of fake time, never 1s without output.
		io.WriteString(talk, strconv.Itoa(i)+"\n")
		h.view.awaitLine(t, "said "+strconv.Itoa(i))
		clock.Advance(600 * time.Millisecond)
	}
	io.WriteString(talk, "end\n")
	talk.Close()
	h.view.awaitLine(t, "started")
	// Tick by tick until the idle timeout: one Advance of 1.1s could run
	// the check's timer before the step's re-armed it, and then nothing
	// would move the clock again.
	s := awaitAdvancing(t, clock, done)
	if s.Status != engine.StatusPaused || s.Pause.Reason != "stalled" || s.Phase != 1 {
		t.Fatalf("state %+v, pause %+v", s, s.Pause)
	}
	if s.Phases[0].Status != engine.StatusCompleted {
		t.Errorf("the talking step timed out: %+v", s.Phases[0])
	}
}

// Failures back off 10s then 20s on the fake clock, then the step
// succeeds.
func TestRunRetriesWithBackoff(t *testing.T) {
	clock := clock.NewFake(time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC))
	h := newHarness(t, `version: 1
defaults:
  retry: {when: exit_code != 0, backoff: duration("10s") * consecutive_errors, escalate_when: attempt > 5}
phases:
  - name: build
    steps: [{run: 'n=$(cat count 2>/dev/null || echo 0); echo $((n+1)) > count; [ $n -ge 2 ]'}]
`, clock)
	s := awaitAdvancing(t, clock, h.start())
	if s.Status != engine.StatusCompleted || s.Phases[0].Attempts != 3 || s.Phases[0].Retries != 2 {
		t.Fatalf("state %+v", s)
	}
	said := h.view.saidText()
	if !strings.Contains(said, "retrying in 10s (attempt 2)") || !strings.Contains(said, "retrying in 20s (attempt 3)") {
		t.Errorf("said:\n%s", said)
	}
}

// Every file the run writes is private to the user.
func TestRunFilesArePrivate(t *testing.T) {
	h := newHarness(t, "version: 1\nphases: [{name: a, steps: [{run: echo hi}]}]\n", clock.Real{})
	if s := h.await(h.start()); s.Status != engine.StatusCompleted {
		t.Fatalf("state %+v", s)
	}
	if err := h.sess.Close(); err != nil {
		t.Fatal(err)
	}
	err := filepath.Walk(filepath.Join(h.dir, ".pipeline"), func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		want := os.FileMode(0o600)
		if info.IsDir() {
			want = 0o700
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s is %v, want %v", path, info.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A plain command line runs without a shell; anything the shell would
// interpret goes through sh -c, with the same results.
func TestRunShellAndDirectCommands(t *testing.T) {
	h := newHarness(t, `version: 1
phases:
  - name: a
    steps:
      - {name: direct, run: echo plain words}
      - {name: shell, run: 'echo "$PIPELINE_STEP" | tr a-z A-Z > out.txt && cat out.txt'}
      - {name: missing, run: no-such-program-here}
`, clock.Real{})
	h.plan.Phases[0].Retry.When.Value = nil
	s := h.await(h.start())
	if got := transcript(t, h, "a", "1-direct.log"); got != "plain words\n" {
		t.Errorf("direct: %q", got)
	}
	if got := transcript(t, h, "a", "1-shell.log"); got != "SHELL\n" {
		t.Errorf("shell: %q", got)
	}
	if s.Status != engine.StatusFailed || s.Steps["missing"].ExitCode != 127 {
		t.Errorf("a missing program: %+v", s)
	}
}

// In a git work tree, a phase records HEAD before and after and the files
// its steps changed.
func TestRunRecordsGitChanges(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed for this test")
	}
	h := newHarness(t, `version: 1
phases:
  - name: edit
    steps: [{run: 'echo new > added.txt && echo changed >> tracked.txt && git add -A && git -c user.email=t@t -c user.name=t commit -qm edit && echo more >> tracked.txt'}]
`, clock.Real{})
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init", "--allow-empty"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = h.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(h.dir, "tracked.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := h.await(h.start())
	rec := s.Phases[0]
	if s.Status != engine.StatusCompleted || rec.HeadBefore == "" || rec.HeadAfter == "" || rec.HeadBefore == rec.HeadAfter {
		t.Fatalf("record %+v", rec)
	}
	if got := strings.Join(rec.Files, ","); got != "added.txt,tracked.txt" {
		t.Errorf("files changed %q", got)
	}
}

// jsonAgent is an adapter for a test agent that prints JSON lines:
// {"text": ...}, {"usage": [in, out, context, cost]}, {"session": id}.
type jsonAgent struct{}

func (jsonAgent) Prepare(r steps.Request) (steps.Turn, error) {
	args := append([]string(nil), r.Command...)
	if r.SessionID != "" {
		args = append(args, "--resume", r.SessionID)
	}
	return steps.Turn{Args: args, Stdin: r.Prompt, Parser: &jsonParser{}}, nil
}

func (jsonAgent) SessionGone(stderr []byte, exitCode int) bool {
	return exitCode == 1 && bytes.Contains(stderr, []byte("no such session"))
}

func (jsonAgent) Recover(feature string, _ steps.Request, _ []string) (string, bool) {
	return "recovered-" + feature, feature == "lost"
}

type jsonParser struct{}

func (*jsonParser) Line(line []byte) []steps.Event {
	var msg struct {
		Text        *string
		Usage       []float64
		Session     string
		Error       string
		RateLimited bool      `json:"rate_limited"`
		ResumeAfter time.Time `json:"resume_after"`
	}
	if json.Unmarshal(line, &msg) != nil {
		return nil
	}
	switch {
	case msg.Error != "":
		return []steps.Event{{Kind: steps.EventError, Text: msg.Error, RateLimited: msg.RateLimited, ResumeAfter: msg.ResumeAfter}}
	case msg.Text != nil:
		return []steps.Event{{Kind: steps.EventText, Text: *msg.Text}}
	case len(msg.Usage) == 4:
		return []steps.Event{{Kind: steps.EventUsage, InputTokens: int(msg.Usage[0]), OutputTokens: int(msg.Usage[1]),
			ContextTokens: int(msg.Usage[2]), CostUSD: msg.Usage[3]}}
	case msg.Session != "":
		return []steps.Event{{Kind: steps.EventSession, SessionID: msg.Session}}
	}
	return nil
}

// An agent CLI's machine output: its text is shown and scanned (a
// checkpoint split across two text deltas still pauses the turn), its
// usage and session id are recorded, and the raw lines are kept.
func TestRunParsesAgentOutput(t *testing.T) {
	steps.Register("test-json", jsonAgent{})
	h := newHarness(t, `version: 1
agent: {kind: command, command: [sh, agent.sh]}
defaults:
  restart_when: {context: context_tokens > 350000}
phases: [{name: design}]
`, clock.Real{})
	h.plan.Phases[0].Steps[0].Agent.Value.Kind = "test-json"
	script := "cat <<'EOF'\n" + `{"session": "native-7"}
{"usage": [1200, 300, 401000, 0.25]}
{"text": "working [CHECK"}
{"text": "POINT] api drafted\n"}
` + "EOF\nsleep 30\n"
	if err := os.WriteFile(filepath.Join(h.dir, "agent.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	h.driver.Grace = 200 * time.Millisecond
	s := h.await(h.start())
	if s.Status != engine.StatusPaused || s.Pause.Reason != "checkpoint" || s.Pause.Note != "api drafted" {
		t.Fatalf("state %+v, pause %+v", s, s.Pause)
	}
	rec := s.Phases[0]
	if rec.Tokens != 1500 || rec.CostUSD != 0.25 || rec.NativeSession != "native-7" || s.NativeSessions["design/agent"] != "native-7" {
		t.Errorf("record %+v, sessions %v", rec, s.NativeSessions)
	}
	if got := transcript(t, h, "design", "1-agent.log"); !strings.Contains(got, `{"usage": [1200, 300, 401000, 0.25]}`) {
		t.Errorf("the transcript keeps the raw lines: %q", got)
	}
	if shown := h.view.output.String(); shown != "working [CHECKPOINT] api drafted\n" {
		t.Errorf("shown %q", shown)
	}
}

// jsonScript is a test agent: it keeps its arguments and prompt, and prints
// the JSON lines of the file named after its phase, or fails as told.
const jsonScript = `args="$*"
prompt=$(cat)
n=$(ls calls 2>/dev/null | wc -l)
mkdir -p calls
printf '%s\n---\n%s\n' "$args" "$prompt" > "calls/$n-$PIPELINE_PHASE"
case "$args" in *--resume\ gone*) echo "no such session: gone" >&2; exit 1;; esac
cat "$PIPELINE_PHASE.jsonl"
`

func jsonHarness(t *testing.T, yamlText string, outputs map[string]string) *harness {
	t.Helper()
	h := newHarness(t, yamlText, clock.Real{})
	steps.Register("test-json", jsonAgent{})
	for i := range h.plan.Phases {
		h.plan.Phases[i].Steps[0].Agent.Value.Kind = "test-json"
	}
	os.WriteFile(filepath.Join(h.dir, "agent.sh"), []byte(jsonScript), 0o644)
	for phase, out := range outputs {
		os.WriteFile(filepath.Join(h.dir, phase+".jsonl"), []byte(out), 0o644)
	}
	return h
}

func calls(t *testing.T, h *harness) []string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(h.dir, "calls", "*"))
	sort.Slice(paths, func(i, j int) bool {
		a, _ := strconv.Atoi(strings.SplitN(filepath.Base(paths[i]), "-", 2)[0])
		b, _ := strconv.Atoi(strings.SplitN(filepath.Base(paths[j]), "-", 2)[0])
		return a < b
	})
	var out []string
	for _, p := range paths {
		b, _ := os.ReadFile(p)
		out = append(out, string(b))
	}
	return out
}

// Steps of one feature share the native session; its first prompt names
// the feature; a session the CLI no longer has is replaced by a fresh one
// with the resume context, and that is recorded.
func TestRunNativeSessionsAndTheirLoss(t *testing.T) {
	h := jsonHarness(t, `version: 1
agent: {kind: command, command: [sh, agent.sh], feature: f}
phases: [{name: one}, {name: two}, {name: three}]
`, map[string]string{
		"one":   `{"session": "s-1"}` + "\n",
		"two":   `{"session": "gone"}` + "\n",
		"three": `{"session": "s-3"}` + "\n",
	})
	s := h.await(h.start())
	if s.Status != engine.StatusCompleted {
		t.Fatalf("state %+v", s)
	}
	c := calls(t, h)
	if len(c) != 4 {
		t.Fatalf("%d calls: %q", len(c), c)
	}
	if !strings.HasPrefix(strings.SplitN(c[0], "---\n", 2)[1], "[Feature: f]") {
		t.Errorf("the first prompt lacks the feature header: %q", c[0])
	}
	if !strings.HasPrefix(c[1], "--resume s-1") {
		t.Errorf("phase two did not resume s-1: %q", c[1])
	}
	// Phase three was asked to resume "gone", which the CLI lost.
	if !strings.HasPrefix(c[2], "--resume gone") || strings.Contains(c[3], "--resume") ||
		!strings.Contains(c[3], "[Resume context]") || !strings.Contains(c[3], "[Feature: f]") {
		t.Errorf("the lost session was not replaced by a fresh one with the resume context:\n%q\n%q", c[2], c[3])
	}
	if fired := s.Phases[2].Fired; len(fired) != 1 || fired[0].Reason != engine.ReasonSessionLost {
		t.Errorf("phase three fired %+v", fired)
	}
	if s.Phases[2].Attempts != 1 || s.NativeSessions["feature:f"] != "s-3" {
		t.Errorf("record %+v, sessions %v", s.Phases[2], s.NativeSessions)
	}
}

// With no session of its feature in the store, the adapter's own sessions
// are searched and a match adopted.
func TestRunRecoversANativeSession(t *testing.T) {
	h := jsonHarness(t, `version: 1
agent: {kind: command, command: [sh, agent.sh], feature: lost}
phases: [{name: one}]
`, map[string]string{"one": `{"session": "recovered-lost"}` + "\n"})
	if s := h.await(h.start()); s.Status != engine.StatusCompleted {
		t.Fatalf("state %+v", s)
	}
	if c := calls(t, h); len(c) != 1 || !strings.HasPrefix(c[0], "--resume recovered-lost") || strings.Contains(c[0], "[Feature:") {
		t.Fatalf("calls %q", c)
	}
	if !strings.Contains(h.view.saidText(), "adopting the test-json session recovered-lost") {
		t.Errorf("said %s", h.view.saidText())
	}
}

// A rate limit pauses with reason rate-limit and the time to come back.
func TestRunRateLimitPauses(t *testing.T) {
	h := jsonHarness(t, `version: 1
agent: {kind: command, command: [sh, agent.sh]}
phases: [{name: one}]
`, map[string]string{"one": `{"error": "usage limit reached", "rate_limited": true, "resume_after": "2026-11-25T18:00:00Z"}` + "\n"})
	s := h.await(h.start())
	if s.Status != engine.StatusPaused || s.Pause.Reason != engine.ReasonRateLimit || s.Pause.ResumeAfter == nil ||
		!s.Pause.ResumeAfter.Equal(time.Date(2026, 11, 25, 18, 0, 0, 0, time.UTC)) || s.Pause.Note != "usage limit reached" {
		t.Fatalf("pause %+v", s.Pause)
	}
}

// lineList is every line of output shown so far.
func (v *testView) lineList() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return strings.Split(strings.TrimRight(v.output.String(), "\n"), "\n")
}

// Regression: a second interrupt said "killing the step now" and then
// waited out the whole grace, because the process's Stop ran only once. A
// step that ignores SIGINT, with an hour of grace, is killed at the second
// interrupt.
func TestSecondInterruptKillsAtOnce(t *testing.T) {
	h := newHarness(t, `version: 1
phases:
  - name: build
    steps: [{run: 'trap "" INT; echo ready; while :; do sleep 1; done'}]
`, clock.Real{})
	h.driver.Grace = time.Hour
	done := h.start()
	h.view.awaitLine(t, "ready")
	h.interrupts <- local.Interrupt{}
	h.interrupts <- local.Interrupt{}
	s := h.await(done)
	if s.Status != engine.StatusPaused || s.Pause.Reason != engine.ReasonInterrupted {
		t.Fatalf("state %+v, pause %+v", s, s.Pause)
	}
	if codes := s.Phases[0].ExitCodes; len(codes) != 1 || codes[0] != -1 {
		t.Errorf("exit codes %v; want -1, killed", codes)
	}
	if said := h.view.saidText(); !strings.Contains(said, "interrupted again: killing the step now") {
		t.Errorf("said %q", said)
	}
}

// A checkpoint is decided where its line is read (steps.CheckpointDecider):
// the step is interrupted from there, and the firing reaches the record
// once, with its note, however many markers follow it.
func TestRunCheckpointDecidedOnTheReadPathFiresOnce(t *testing.T) {
	h := newHarness(t, `version: 1
agent: {kind: command, command: [sh, -c, 'trap "echo interrupted; exit 0" INT; echo "[CHECKPOINT] first"; echo "[CHECKPOINT] second"; while :; do sleep 0.01; done']}
phases: [{name: design}]
`, clock.Real{})
	s := h.await(h.start())
	if s.Status != engine.StatusPaused || s.Pause.Reason != "checkpoint" {
		t.Fatalf("state %+v, pause %+v", s, s.Pause)
	}
	if fired := s.Phases[0].Fired; len(fired) != 1 || fired[0].Reason != "checkpoint" || fired[0].Note == "" {
		t.Errorf("fired %+v: want one checkpoint firing with its note", fired)
	}
	if got := transcript(t, h, "design", "1-agent.log"); !strings.Contains(got, "interrupted") {
		t.Errorf("transcript %q: the step's trap did not run", got)
	}
}
