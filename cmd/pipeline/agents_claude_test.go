//go:build agentclis

package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/internal/mockapi"
)

// The claude adapter end to end: the built pipeline runs the real Claude
// Code (installed by make test into PIPELINE_AGENT_CLIS) against the mock
// of the Anthropic API on 127.0.0.1, with a HOME of its own.

// claudeRun is a folder with a phases.yaml, the mock, and the environment
// pipeline runs with.
type claudeRun struct {
	dir  string
	home string
	mock *mockapi.Anthropic
	env  []string
}

func newClaudeRun(t *testing.T, phasesYAML string) *claudeRun {
	t.Helper()
	_, clis := mockapi.AgentCLI(t, "claude")
	mock := mockapi.NewAnthropic()
	t.Cleanup(mock.Close)
	r := &claudeRun{dir: t.TempDir(), home: t.TempDir(), mock: mock}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "PATH=") &&
			!strings.HasPrefix(kv, "ANTHROPIC_") && !strings.HasPrefix(kv, "CLAUDE_") {
			r.env = append(r.env, kv)
		}
	}
	r.env = append(r.env, "CI=true", "HOME="+r.home, "PATH="+clis+string(os.PathListSeparator)+os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL="+mock.URL, "ANTHROPIC_API_KEY=test", "DISABLE_TELEMETRY=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_MAX_RETRIES=0")
	write(t, r.dir, "phases.yaml", phasesYAML)
	return r
}

// pipeline runs the built command in the run's folder with its
// environment.
func (r *claudeRun) pipeline(t *testing.T, args ...string) result {
	t.Helper()
	return pipelineEnv(t, r.dir, r.env, args...)
}

func (r *claudeRun) status(t *testing.T) statusJSON {
	t.Helper()
	return decodeStatus(t, r.pipeline(t, "status", "-o", "json"))
}

// run runs the pipeline and wants the exit code.
func (r *claudeRun) run(t *testing.T, want int) result {
	t.Helper()
	res := r.pipeline(t, "run")
	if res.code != want {
		t.Fatalf("run: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", res.code, want, res.stdout, res.stderr)
	}
	return res
}

// claudeFresh reports whether a turn started a conversation: no earlier user
// prompt, no assistant reply.
func claudeFresh(turn mockapi.AnthropicRequest) bool {
	users := 0
	for _, m := range turn.Messages {
		switch m.Role {
		case "assistant":
			return false
		case "user":
			users++
		}
	}
	return users == 1
}

func claudeTurns(t *testing.T, mock *mockapi.Anthropic, want int) []mockapi.AnthropicRequest {
	t.Helper()
	turns := mock.Turns()
	if len(turns) != want {
		for i, turn := range turns {
			t.Logf("turn %d: status %d, %d messages, last user %q", i, turn.Status, len(turn.Messages), turn.LastUserText())
		}
		t.Fatalf("%d turns reached the mock, want %d", len(turns), want)
	}
	return turns
}

// Two phases of one feature: the second resumes the first's native session
// (its request carries the first turn), and the usage the mock reported is
// what the session records, the cost of each turn counted once.
func TestClaudeTwoPhasesResumeTheSessionAndCountUsage(t *testing.T) {
	r := newClaudeRun(t, `version: 1
agent: {kind: claude, model: sonnet, feature: f}
phases:
  - name: design
    prompt: Draft the design of the greeting.
  - name: build
    prompt: Build the greeting.
`)
	r.mock.SetUsage(1000, 50)
	r.mock.SetCacheUsage(200, 100)
	out := r.run(t, 0)
	if !strings.Contains(out.stdout, "done: Draft the design of the greeting.") || !strings.Contains(out.stdout, "done: Build the greeting.") {
		t.Errorf("the agent's text is not shown:\n%s", out.stdout)
	}
	turns := claudeTurns(t, r.mock, 2)
	if !claudeFresh(turns[0]) {
		t.Errorf("the first turn is not a new conversation: %+v", turns[0].Messages)
	}
	second := turns[1]
	if !second.HasMessage("user", "Draft the design of the greeting.") || !second.HasMessage("assistant", "done: Draft the design of the greeting.") ||
		!strings.HasPrefix(second.LastUserText(), "Build the greeting.") {
		t.Errorf("the second phase did not resume the first's conversation: %+v", second.Messages)
	}

	s := r.status(t)
	if s.Status != "completed" || len(s.Phases) != 2 {
		t.Fatalf("status %+v", s)
	}
	design, build := s.Phases[0], s.Phases[1]
	// The build phase forked the design's session: its conversation
	// goes on under a new id, the design's stays as the phase found it.
	if design.NativeSession == "" || build.NativeSession == "" || build.NativeSession == design.NativeSession {
		t.Errorf("native sessions %q and %q: the build phase did not fork the design's", design.NativeSession, build.NativeSession)
	}
	if transcript := claudeTranscript(t, r.home, design.NativeSession); strings.Contains(transcript, "Build the greeting.") {
		t.Errorf("the design's transcript (%d bytes) went on into the build phase", len(transcript))
	}
	// Per turn: 1000 input + 200 cache read + 100 cache creation + 50 output.
	if design.Tokens != 1350 || build.Tokens != 1350 || s.Tokens != 2700 {
		t.Errorf("tokens %d + %d = %d, want 1350 + 1350 = 2700", design.Tokens, build.Tokens, s.Tokens)
	}
	// The same usage costs the same: the resumed turn is not charged the
	// session's total_cost_usd, which counts the first turn again.
	if design.CostUSD <= 0 || math.Abs(build.CostUSD-design.CostUSD) > 1e-9 || math.Abs(s.CostUSD-2*design.CostUSD) > 1e-9 {
		t.Errorf("cost %v + %v = %v, want twice the same positive cost", design.CostUSD, build.CostUSD, s.CostUSD)
	}
}

// claudeTranscript is what Claude Code keeps of a native session:
// ~/.claude/projects/<the working directory, mangled>/<id>.jsonl.
func claudeTranscript(t *testing.T, home, id string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", id+".jsonl"))
	if err != nil || len(files) != 1 {
		t.Fatalf("the transcript of %s: %v %v", id, files, err)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// A fork at the build phase, and a rewind to it, take the agent's
// conversation back to where the build started: the first turn forks the
// design's session (--resume ID --fork-session), so the mock sees the
// design's exchange and not the first build's, and the new session has an
// id of its own.
func TestClaudeRewindForksTheSessionAsThePhaseStarted(t *testing.T) {
	r := newClaudeRun(t, `version: 1
agent: {kind: claude, model: sonnet, feature: f}
phases:
  - name: design
    prompt: Draft the design of the greeting.
  - name: build
    prompt: Build the greeting.
`)
	gitOut(t, r.dir, r.env, "init", "-q", "-b", "main")
	gitOut(t, r.dir, r.env, "config", "user.name", "t")
	gitOut(t, r.dir, r.env, "config", "user.email", "t@example.com")
	gitOut(t, r.dir, r.env, "config", "commit.gpgsign", "false")
	gitOut(t, r.dir, r.env, "add", ".")
	gitOut(t, r.dir, r.env, "commit", "-qm", "start")
	r.run(t, 0)
	before := r.status(t)
	design, build := before.Phases[0].NativeSession, before.Phases[1].NativeSession
	if design == "" || build == "" || design == build {
		t.Fatalf("native sessions %q then %q", design, build)
	}

	// A fork at the build phase, in a worktree, starts from the same point.
	tree := filepath.Join(t.TempDir(), "fork")
	out := r.pipeline(t, "fork", "--at", "build", "--worktree", tree)
	if out.code != 0 || !strings.Contains(out.stdout, "the claude session "+design+", as phase build started, is resumed as a fork") {
		t.Fatalf("fork: exit %d\n%s%s", out.code, out.stdout, out.stderr)
	}
	forked := claudeTurns(t, r.mock, 3)[2]
	if !forked.HasMessage("assistant", "done: Draft the design of the greeting.") || forked.HasMessage("assistant", "done: Build the greeting.") {
		t.Errorf("the fork's turn does not start from the design's conversation: %+v", forked.Messages)
	}
	fork := decodeStatus(t, pipelineEnv(t, tree, r.env, "status", "-o", "json"))
	if own := fork.Phases[1].NativeSession; fork.Status != "completed" || own == "" || own == design || own == build {
		t.Errorf("the fork: %s, build's native session %q (design %q, parent's build %q)", fork.Status, own, design, build)
	}

	if out := r.pipeline(t, "rewind", "--to", "build"); out.code != 0 {
		t.Fatalf("rewind: exit %d\n%s%s", out.code, out.stdout, out.stderr)
	}
	out = r.pipeline(t, "resume")
	if out.code != 0 || !strings.Contains(out.stdout, "the claude session "+design+", as phase build started, is resumed as a fork") {
		t.Fatalf("resume: exit %d\n%s%s", out.code, out.stdout, out.stderr)
	}
	again := claudeTurns(t, r.mock, 4)[3]
	if !again.HasMessage("assistant", "done: Draft the design of the greeting.") || again.HasMessage("assistant", "done: Build the greeting.") {
		t.Errorf("the turn after the rewind does not start from the design's conversation: %+v", again.Messages)
	}
	after := r.status(t)
	rebuilt := after.Phases[1].NativeSession
	if after.Status != "completed" || rebuilt == "" || rebuilt == design || rebuilt == build {
		t.Errorf("after the rewind: %s, build's native session %q (design %q, first build %q)", after.Status, rebuilt, design, build)
	}
	// Neither earlier conversation was altered by the fork.
	if transcript := claudeTranscript(t, r.home, design); strings.Contains(transcript, "Build the greeting.") {
		t.Errorf("the design's transcript (%d bytes) holds the build phase", len(transcript))
	}
	// The new session starts from the design's conversation, without the
	// first build's turn.
	if transcript := claudeTranscript(t, r.home, rebuilt); !strings.Contains(transcript, "done: Draft the design of the greeting.") ||
		strings.Contains(transcript, "done: Build the greeting.") {
		t.Errorf("the new session's transcript (%d bytes) is not the design's conversation and the turn after the rewind", len(transcript))
	}
}

// Three API errors in a row: the retry policy retries (resuming the
// session), restart_when drops the native session, and the next attempt
// starts a fresh conversation that completes.
func TestClaudeThreeErrorsRestartAFreshSession(t *testing.T) {
	r := newClaudeRun(t, `version: 1
agent: {kind: claude, model: sonnet, feature: f}
defaults:
  retry: {when: exit_code != 0, backoff: 1ms, escalate_when: attempt > 5}
  restart_when: {errors: consecutive_errors >= 3}
phases:
  - name: design
    prompt: Draft the design.
  - name: build
    prompt: Build it.
`)
	r.mock.FailAfter(1, 3, 500)
	out := r.run(t, 0)
	if !strings.Contains(out.stdout, "API Error: 500") {
		t.Errorf("the API error is not shown:\n%s", out.stdout)
	}
	turns := claudeTurns(t, r.mock, 5)
	for i, turn := range turns[1:4] {
		if turn.Status != 500 || !turn.HasMessage("assistant", "done: Draft the design.") {
			t.Errorf("failed attempt %d: status %d, resumed %v", i+1, turn.Status, turn.HasMessage("assistant", "done: Draft the design."))
		}
	}
	last := turns[4]
	if last.Status != 200 || !claudeFresh(last) || !strings.Contains(last.LastUserText(), "Build it.") {
		t.Errorf("the attempt after the restart: status %d, messages %+v; want a fresh conversation", last.Status, last.Messages)
	}
	s := r.status(t)
	build := s.Phases[1]
	if s.Status != "completed" || build.Attempts != 4 || build.Retries != 3 || build.Restarts != 1 ||
		!slices.Equal(build.ExitCodes, []int{1, 1, 1, 0}) {
		t.Errorf("build phase: status %s, attempts %d, retries %d, restarts %d, exit codes %v", s.Status,
			build.Attempts, build.Retries, build.Restarts, build.ExitCodes)
	}
	if len(build.Fired) == 0 || build.Fired[0].Reason != "errors" {
		t.Errorf("triggers fired %+v, want errors", build.Fired)
	}
	if build.NativeSession == "" || build.NativeSession == s.Phases[0].NativeSession {
		t.Errorf("build's native session %q, design's %q: want a new one", build.NativeSession, s.Phases[0].NativeSession)
	}
}

// A turn that reports 400,000 input tokens fills the context: restart_when
// fires after it, and the next phase of the feature starts fresh.
func TestClaudeHugeContextRestarts(t *testing.T) {
	r := newClaudeRun(t, `version: 1
agent: {kind: claude, model: sonnet, feature: f}
defaults:
  restart_when: {context: context_tokens > 350000}
phases:
  - name: design
    prompt: Read everything `+mockapi.AnthropicHugeMarker+`
  - name: build
    prompt: Build it.
`)
	r.run(t, 0)
	turns := claudeTurns(t, r.mock, 2)
	if !claudeFresh(turns[1]) {
		t.Errorf("the build phase resumed the full context: %+v", turns[1].Messages)
	}
	s := r.status(t)
	design := s.Phases[0]
	if design.Restarts != 1 || len(design.Fired) != 1 || design.Fired[0].Reason != "context" {
		t.Fatalf("design phase: restarts %d, fired %+v", design.Restarts, design.Fired)
	}
	if got := design.Fired[0].Values["context_tokens"]; got != float64(mockapi.AnthropicHugeInput) {
		t.Errorf("context_tokens read %v, want %d", got, mockapi.AnthropicHugeInput)
	}
	if s.Phases[1].NativeSession == design.NativeSession {
		t.Error("the build phase kept the dropped session")
	}
}

// A [CHECKPOINT] streamed in the middle of a long turn pauses the run
// before the turn ends: the mock would stream for minutes more, and sees
// the CLI go away.
func TestClaudeCheckpointMidTurnPauses(t *testing.T) {
	r := newClaudeRun(t, `version: 1
agent: {kind: claude, model: sonnet, feature: f}
defaults:
  pause_when: {checkpoint: checkpoint}
phases:
  - name: design
    prompt: Think it through `+mockapi.AnthropicSlowMarker+`
`)
	r.mock.SetSlow(failsafe, 200*time.Millisecond)
	out := r.run(t, 3)
	if !strings.Contains(out.stdout, "[CHECKPOINT] mid-turn note") || strings.Contains(out.stdout, "done: Think it through") {
		t.Errorf("output:\n%s", out.stdout)
	}
	s := r.status(t)
	if s.Status != "paused" || s.PauseReason != "checkpoint" || s.PauseNote != "mid-turn note" {
		t.Errorf("status %s, pause %q %q", s.Status, s.PauseReason, s.PauseNote)
	}
	// The CLI went away mid-stream when the step was stopped.
	r.mock.AwaitDisconnected(1, failsafe)
	if r.mock.Disconnected() != 1 {
		t.Errorf("the slow reply was not cut short (%d disconnects)", r.mock.Disconnected())
	}
}

// The session store lost (its folder deleted): the next run finds the
// CLI's own session of the feature by the header of its first prompt and
// resumes it.
func TestClaudeLostStoreRecoversTheFeatureSession(t *testing.T) {
	r := newClaudeRun(t, `version: 1
agent: {kind: claude, model: sonnet, feature: greeting}
phases:
  - name: design
    prompt: Draft the design.
`)
	r.run(t, 0)
	first := r.status(t).Phases[0].NativeSession
	turns := claudeTurns(t, r.mock, 1)
	if !strings.HasPrefix(turns[0].LastUserText(), "[Feature: greeting]") {
		t.Errorf("the first prompt of the session lacks the feature header: %q", turns[0].LastUserText())
	}
	if err := os.RemoveAll(filepath.Join(r.dir, ".pipeline")); err != nil {
		t.Fatal(err)
	}
	out := r.run(t, 0)
	if !strings.Contains(out.stdout, "adopting the claude session "+first) {
		t.Errorf("no adoption of %s:\n%s", first, out.stdout)
	}
	turns = claudeTurns(t, r.mock, 2)
	if !turns[1].HasMessage("assistant", "done: Draft the design.") || r.status(t).Phases[0].NativeSession != first {
		t.Errorf("the second run did not resume %s: %+v", first, turns[1].Messages)
	}
}

// The CLI lost the session the store names (its transcripts deleted
// between the phases): --resume fails with "No conversation found with
// session ID", and the turn runs again in a fresh session with the resume
// context.
func TestClaudeGoneSessionStartsFresh(t *testing.T) {
	r := newClaudeRun(t, `version: 1
agent: {kind: claude, model: sonnet, feature: f}
phases:
  - name: design
    prompt: Draft the design.
    steps:
      - agent: {}
      - name: forget
        run: rm -rf "$HOME/.claude/projects"
  - name: build
    prompt: Build it.
`)
	out := r.run(t, 0)
	if !strings.Contains(out.stdout, "No conversation found with session ID") {
		t.Errorf("the failed resume is not shown:\n%s", out.stdout)
	}
	turns := claudeTurns(t, r.mock, 2)
	if !claudeFresh(turns[1]) || !strings.Contains(turns[1].LastUserText(), "Build it.") {
		t.Errorf("the build phase did not start a fresh conversation: %+v", turns[1].Messages)
	}
	s := r.status(t)
	build := s.Phases[1]
	lost := false
	for _, f := range build.Fired {
		lost = lost || f.Reason == "session-lost"
	}
	if s.Status != "completed" || !lost || build.NativeSession == "" || build.NativeSession == s.Phases[0].NativeSession {
		t.Errorf("status %s, build fired %+v, sessions %q then %q", s.Status, build.Fired, s.Phases[0].NativeSession, build.NativeSession)
	}
}
