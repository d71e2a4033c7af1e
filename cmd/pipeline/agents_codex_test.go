//go:build agentclis

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/internal/mockapi"
)

// The codex adapter end to end: the built pipeline runs the real Codex CLI
// (installed by make test) against the OpenAI mock on 127.0.0.1.

// codexProject starts the mock and gives the test a project folder, and
// HOME and CODEX_HOME folders whose config.toml points Codex at the mock.
// They are set in this process's environment, which pipeline and its
// agent steps inherit (the adapter reads Codex's session files under
// CODEX_HOME), with the CLIs' folder first on PATH.
func codexProject(t *testing.T) (*mockapi.OpenAI, string) {
	t.Helper()
	_, clis := mockapi.AgentCLI(t, "codex")
	mock := mockapi.NewOpenAI()
	t.Cleanup(mock.Close)
	home, codexHome := t.TempDir(), t.TempDir()
	write(t, codexHome, "config.toml", mock.CodexConfig())
	t.Setenv("HOME", home)
	t.Setenv("CODEX_HOME", codexHome)
	t.Setenv("MOCK_API_KEY", "mock-key")
	t.Setenv("PATH", clis+string(os.PathListSeparator)+os.Getenv("PATH"))
	return mock, t.TempDir()
}

// codexTokens is what the mock reported for a turn, as pipeline counts it.
func codexTokens(r mockapi.OpenAIRequest) int { return r.Usage.InputTokens + r.Usage.OutputTokens }

// codexAssistantMessages counts the replies a request re-sent: its
// history.
func codexAssistantMessages(r mockapi.OpenAIRequest) int {
	n := 0
	for _, item := range r.Input() {
		if item.Role == "assistant" {
			n++
		}
	}
	return n
}

// codexFresh reports whether a request is the first turn of a thread: no
// reply re-sent, and one prompt (Codex adds its environment context as a
// user message of its own).
func codexFresh(r mockapi.OpenAIRequest) bool {
	prompts := 0
	for _, item := range r.Input() {
		if item.Role == "user" && !strings.HasPrefix(item.Text, "<environment_context>") {
			prompts++
		}
	}
	return prompts == 1 && codexAssistantMessages(r) == 0
}

// Phases of one feature: each forks the thread the one before it left
// (codex exec fork), so its request re-sends that history under a thread
// of its own; each phase's tokens are its own turn's, not the running
// total Codex prints for a forked thread (which starts from the
// original's).
func TestCodexPhasesForkTheThreadTheyInherit(t *testing.T) {
	mock, dir := codexProject(t)
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: codex, model: gpt-5.5, feature: f}
phases:
  - name: design
    prompt: Design the widget.
  - name: build
    prompt: Build the widget.
  - name: check
    prompt: Check the widget.
`)
	if r := pipeline(t, dir, "run"); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	turns := mock.Turns()
	if len(turns) != 3 {
		t.Fatalf("the mock saw %d turns, want 3", len(turns))
	}
	s := status(t, dir)
	if s.Status != "completed" || len(s.Phases) != 3 {
		t.Fatalf("status %+v", s)
	}
	for i, phase := range s.Phases {
		thread := turns[i].Header.Get("Thread-Id")
		if thread == "" || phase.NativeSession != thread {
			t.Errorf("phase %s: native session %q, its turn's thread %q", phase.Name, phase.NativeSession, thread)
		}
		if phase.Tokens != codexTokens(turns[i]) {
			t.Errorf("phase %s: %d tokens, want its turn's %d (input %d + output %d)", phase.Name, phase.Tokens,
				codexTokens(turns[i]), turns[i].Usage.InputTokens, turns[i].Usage.OutputTokens)
		}
		if i == 0 {
			continue
		}
		before := s.Phases[i-1].NativeSession
		if thread == before || !strings.Contains(codexRolloutHead(t, thread), `"forked_from_id":"`+before+`"`) {
			t.Errorf("phase %s's thread %q is not a fork of %q", phase.Name, thread, before)
		}
		if !turns[i].HasMessage("user", "Design the widget.") || !turns[i].HasMessage("assistant", "done: ") {
			t.Errorf("phase %s's request did not re-send the design's turn:\n%s", phase.Name, turns[i].Body)
		}
	}
	if !turns[2].HasMessage("assistant", "done: Build the widget.") {
		t.Errorf("check's request did not re-send the build's turn:\n%s", turns[2].Body)
	}
	if !strings.HasPrefix(turns[1].LastUserText(), "Build the widget.") {
		t.Errorf("build's prompt %q", turns[1].LastUserText())
	}
	if want := codexTokens(turns[0]) + codexTokens(turns[1]) + codexTokens(turns[2]); s.Tokens != want {
		t.Errorf("session tokens %d, want %d", s.Tokens, want)
	}
}

// Three failed turns in a row: the first forks the design's thread (Codex
// makes the new thread before the request fails), retry resumes that one
// each time, then restart_when drops it and the next attempt starts a
// fresh thread that carries none of the earlier history.
func TestCodexConsecutiveErrorsRestartTheThread(t *testing.T) {
	mock, dir := codexProject(t)
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: codex, model: gpt-5.5, feature: f}
phases:
  - name: design
    prompt: Design the widget.
  - name: build
    prompt: Build the widget.
    retry: {when: exit_code != 0, backoff: 1ms, escalate_when: attempt > 5}
    restart_when: {errors: consecutive_errors >= 3}
`)
	mock.FailNextWith("Build the widget.", 3)
	if r := pipeline(t, dir, "run"); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	turns := mock.Turns()
	if len(turns) != 5 {
		t.Fatalf("the mock saw %d turns, want design's and build's four", len(turns))
	}
	design, forked := turns[0].Header.Get("Thread-Id"), turns[1].Header.Get("Thread-Id")
	if forked == "" || forked == design || !strings.Contains(codexRolloutHead(t, forked), `"forked_from_id":"`+design+`"`) {
		t.Errorf("the first failed attempt's thread %q is not a fork of the design's %q", forked, design)
	}
	for i, turn := range turns[1:4] {
		if turn.Status != 500 || turn.Header.Get("Thread-Id") != forked || !turn.HasMessage("user", "Design the widget.") ||
			codexAssistantMessages(turn) != 1 {
			t.Errorf("failed attempt %d: status %d, thread %q, want 500 in the fork %q of design's thread with its history",
				i+1, turn.Status, turn.Header.Get("Thread-Id"), forked)
		}
	}
	fresh := turns[4]
	if fresh.Status != 200 || fresh.Header.Get("Thread-Id") == design || fresh.Header.Get("Thread-Id") == forked || !codexFresh(fresh) {
		t.Errorf("after the restart: status %d, thread %q (design's %q); want a fresh thread:\n%s",
			fresh.Status, fresh.Header.Get("Thread-Id"), design, fresh.Body)
	}
	s := status(t, dir)
	build := s.Phases[1]
	if s.Status != "completed" || build.Attempts != 4 || build.Restarts != 1 || build.Retries != 3 {
		t.Errorf("status %s, build: %d attempts, %d restarts, %d retries; want completed, 4, 1, 3", s.Status, build.Attempts, build.Restarts, build.Retries)
	}
	if build.NativeSession != fresh.Header.Get("Thread-Id") {
		t.Errorf("build's native session %q, want the fresh thread %q", build.NativeSession, fresh.Header.Get("Thread-Id"))
	}
	if len(build.Fired) == 0 || build.Fired[0].Reason != "errors" {
		t.Errorf("build's triggers fired: %+v", build.Fired)
	}
}

// 400,000 input tokens reported for a turn fire restart_when's context
// trigger: the next phase of the feature starts a fresh thread.
func TestCodexHugeContextRestartsTheThread(t *testing.T) {
	mock, dir := codexProject(t)
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: codex, model: gpt-5.5, feature: f}
phases:
  - name: design
    prompt: Design the widget. `+mockapi.OpenAIHugeContextMarker+`
    restart_when: {context: context_tokens > 350000}
  - name: build
    prompt: Build the widget.
`)
	if r := pipeline(t, dir, "run"); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	turns := mock.Turns()
	if len(turns) != 2 {
		t.Fatalf("the mock saw %d turns, want 2", len(turns))
	}
	if turns[1].Header.Get("Thread-Id") == turns[0].Header.Get("Thread-Id") || !codexFresh(turns[1]) {
		t.Errorf("build resumed design's thread %q after the context restart", turns[0].Header.Get("Thread-Id"))
	}
	s := status(t, dir)
	design := s.Phases[0]
	if design.Restarts != 1 || len(design.Fired) != 1 || design.Fired[0].Reason != "context" ||
		design.Fired[0].Values["context_tokens"] != float64(mockapi.OpenAIHugeInputTokens) {
		t.Errorf("design: %d restarts, fired %+v; want the context trigger at %d", design.Restarts, design.Fired, mockapi.OpenAIHugeInputTokens)
	}
	if design.Tokens != codexTokens(turns[0]) {
		t.Errorf("design: %d tokens, want %d", design.Tokens, codexTokens(turns[0]))
	}
}

// A [CHECKPOINT] in Codex's reply pauses the run.
func TestCodexCheckpointPauses(t *testing.T) {
	mock, dir := codexProject(t)
	mock.SetReply("Design drafted.\n[CHECKPOINT] ready for review\n")
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: codex, model: gpt-5.5, feature: f}
phases:
  - name: design
    prompt: Design the widget.
  - name: build
    prompt: Build the widget.
`)
	r := pipeline(t, dir, "run", "--grace", "1s")
	if r.code != exitPaused {
		t.Fatalf("run: exit %d, want %d: %s", r.code, exitPaused, r.stderr)
	}
	s := status(t, dir)
	if s.Status != "paused" || s.PauseReason != "checkpoint" || s.PauseNote != "ready for review" || s.Phase != "design" {
		t.Errorf("status %+v", s)
	}
	if n := len(mock.Turns()); n != 1 {
		t.Errorf("the mock saw %d turns, want 1", n)
	}
}

// The thread is gone when the run resumes it (Codex's session files
// deleted while the run was paused): "codex exec resume" fails at once,
// and the step runs again in a fresh thread with the resume context, not
// as an error; the next phase forks that thread.
func TestCodexLostThreadStartsAFreshOne(t *testing.T) {
	mock, dir := codexProject(t)
	mock.SetReply("Design drafted.\n[CHECKPOINT] look at it\n")
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: codex, model: gpt-5.5, feature: f}
phases:
  - name: design
    prompt: Design the widget.
  - name: build
    prompt: Build the widget.
`)
	if r := pipeline(t, dir, "run", "--grace", "1s"); r.code != exitPaused {
		t.Fatalf("run: exit %d, want %d: %s", r.code, exitPaused, r.stderr)
	}
	mock.SetReply("")
	if err := os.RemoveAll(filepath.Join(os.Getenv("CODEX_HOME"), "sessions")); err != nil {
		t.Fatal(err)
	}
	if r := pipeline(t, dir, "resume"); r.code != 0 {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	turns := mock.Turns()
	if len(turns) != 3 {
		t.Fatalf("the mock saw %d turns, want 3 (the failed resume asks nothing)", len(turns))
	}
	lost, fresh := turns[0].Header.Get("Thread-Id"), turns[1].Header.Get("Thread-Id")
	if fresh == lost || !codexFresh(turns[1]) || !strings.Contains(turns[1].LastUserText(), "Design the widget.") {
		t.Errorf("design after the lost thread: thread %q (lost %q), prompt %q; want a fresh thread",
			fresh, lost, turns[1].LastUserText())
	}
	if build := turns[2].Header.Get("Thread-Id"); build == "" || build == fresh || !turns[2].HasMessage("user", "Design the widget.") ||
		!strings.Contains(codexRolloutHead(t, build), `"forked_from_id":"`+fresh+`"`) {
		t.Errorf("build's thread %q is not a fork of the fresh thread %q", build, fresh)
	}
	// The checkpoint stops the first turn as its text arrives; Codex,
	// interrupted, usually never prints that turn's usage.
	s := status(t, dir)
	design := s.Phases[0]
	if s.Status != "completed" || design.NativeSession != fresh ||
		design.Tokens != codexTokens(turns[1]) && design.Tokens != codexTokens(turns[0])+codexTokens(turns[1]) {
		t.Errorf("status %s, design: native session %q, %d tokens; want completed, %q, %d (+%d)",
			s.Status, design.NativeSession, design.Tokens, fresh, codexTokens(turns[1]), codexTokens(turns[0]))
	}
	lostFired := false
	for _, f := range design.Fired {
		lostFired = lostFired || f.Reason == "session-lost"
	}
	if !lostFired {
		t.Errorf("design's triggers fired: %+v, want session-lost", design.Fired)
	}
}

// Codex's 429, after its own retries (none here), pauses the run for the
// rate limit.
func TestCodexRateLimitPauses(t *testing.T) {
	mock, dir := codexProject(t)
	mock.SetFailure(429, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`, nil)
	mock.FailNext(1)
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: codex, model: gpt-5.5}
phases:
  - name: design
    prompt: Design the widget.
    retry: {when: exit_code != 0, backoff: 1ms}
`)
	if r := pipeline(t, dir, "run"); r.code != exitPaused {
		t.Fatalf("run: exit %d, want %d: %s", r.code, exitPaused, r.stderr)
	}
	if s := status(t, dir); s.PauseReason != "rate-limit" || !strings.Contains(s.PauseNote, "429") {
		t.Errorf("status %+v, want paused for the rate limit", s)
	}
	if n := len(mock.Turns()); n != 1 {
		t.Errorf("the mock saw %d turns, want 1", n)
	}
}

// A new session of the pipeline, its store holding no thread for the
// feature, adopts Codex's own thread of it (found by the feature header of
// its first prompt) and goes on with its history.
func TestCodexNewSessionAdoptsTheFeaturesThread(t *testing.T) {
	mock, dir := codexProject(t)
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: codex, model: gpt-5.5, feature: f}
phases:
  - name: design
    prompt: Design the widget.
`)
	if r := pipeline(t, dir, "run"); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	r := pipeline(t, dir, "run")
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "adopting the codex session") {
		t.Fatalf("second run: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	turns := mock.Turns()
	if len(turns) != 2 {
		t.Fatalf("the mock saw %d turns, want 2", len(turns))
	}
	thread := turns[0].Header.Get("Thread-Id")
	if turns[1].Header.Get("Thread-Id") != thread || codexAssistantMessages(turns[1]) != 1 ||
		!strings.HasPrefix(turns[0].LastUserText(), "[Feature: f]") {
		t.Errorf("the new session did not resume the feature's thread %q: %q, %d replies re-sent",
			thread, turns[1].Header.Get("Thread-Id"), codexAssistantMessages(turns[1]))
	}
	if s := status(t, dir); s.Status != "completed" || s.Phases[0].NativeSession != thread || s.Phases[0].Tokens != codexTokens(turns[1]) {
		t.Errorf("status %+v, want completed in thread %s with %d tokens", s, thread, codexTokens(turns[1]))
	}
}

// Codex's --json output has no text deltas: a [CHECKPOINT] in the middle
// of a long reply pauses the run when that message completes, not when
// the model streamed it.
func TestCodexMidTurnCheckpointSeenWhenTheMessageCompletes(t *testing.T) {
	mock, dir := codexProject(t)
	const slow = 1500 * time.Millisecond
	mock.SetSlowFor(slow)
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: codex, model: gpt-5.5}
phases:
  - name: design
    prompt: Design the widget. `+mockapi.OpenAISlowCheckpointMarker+`
`)
	start := time.Now()
	r := pipeline(t, dir, "run", "--grace", "1s")
	if r.code != exitPaused {
		t.Fatalf("run: exit %d, want %d: %s", r.code, exitPaused, r.stderr)
	}
	if took := time.Since(start); took < slow {
		t.Errorf("paused after %v, before the reply ended (%v): Codex streams text now; revisit the adapter", took, slow)
	}
	if s := status(t, dir); s.PauseReason != "checkpoint" || s.PauseNote != "mid-turn note" {
		t.Errorf("status %+v", s)
	}
}

// CODEX_HOME given in the agent's env (not pipeline's): the resumed turn's
// tokens are still the turn's own, not the thread's running total.
func TestCodexHomeFromAgentEnv(t *testing.T) {
	mock, dir := codexProject(t)
	agentHome := os.Getenv("CODEX_HOME")
	t.Setenv("CODEX_HOME", t.TempDir()) // pipeline's own: empty, wrong
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: codex, model: gpt-5.5, feature: f, env: {CODEX_HOME: `+agentHome+`}}
phases:
  - {name: design, prompt: Design the widget.}
  - {name: build, prompt: Build the widget.}
`)
	if r := pipeline(t, dir, "run"); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	turns := mock.Turns()
	s := status(t, dir)
	if len(turns) != 2 || s.Status != "completed" || s.Phases[1].Tokens != codexTokens(turns[1]) {
		t.Fatalf("%d turns; build counted %d tokens, want its turn's %d", len(turns), s.Phases[1].Tokens, codexTokens(turns[1]))
	}
}

// codexRolloutPath is a thread's session file under CODEX_HOME.
func codexRolloutPath(t *testing.T, thread string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(os.Getenv("CODEX_HOME"), "sessions", "*", "*", "*", "rollout-*-"+thread+".jsonl"))
	if err != nil || len(files) != 1 {
		t.Fatalf("the session file of %s: %v %v", thread, files, err)
	}
	return files[0]
}

// codexRolloutHead is the first line of a thread's session file: its
// session_meta, which names the thread it was forked from.
func codexRolloutHead(t *testing.T, thread string) string {
	t.Helper()
	data, err := os.ReadFile(codexRolloutPath(t, thread))
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(string(data), "\n")
	return head
}

// A fork at the build phase, and a rewind to it, take Codex's thread back
// to where the build started: the first turn forks the design's thread
// (codex exec fork ID), so the mock sees the design's exchange and not
// the first build's, and the new thread has an id of its own; the
// design's thread stays as it was.
func TestCodexRewindForksTheThreadAsThePhaseStarted(t *testing.T) {
	mock, dir := codexProject(t)
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: codex, model: gpt-5.5, feature: f}
phases:
  - name: design
    prompt: Design the widget.
  - name: build
    prompt: Build the widget.
`)
	gitOut(t, dir, nil, "init", "-q", "-b", "main")
	gitOut(t, dir, nil, "config", "user.name", "t")
	gitOut(t, dir, nil, "config", "user.email", "t@example.com")
	gitOut(t, dir, nil, "config", "commit.gpgsign", "false")
	gitOut(t, dir, nil, "add", ".")
	gitOut(t, dir, nil, "commit", "-qm", "start")
	if r := pipeline(t, dir, "run"); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	before := status(t, dir)
	design, build := before.Phases[0].NativeSession, before.Phases[1].NativeSession
	if design == "" || build == "" || design == build {
		t.Fatalf("threads %q then %q", design, build)
	}
	// fromDesign checks that turn n forked the design's thread as the
	// build started, under an id of its own.
	fromDesign := func(what string, n int, thread string) {
		t.Helper()
		turns := mock.Turns()
		if len(turns) != n+1 {
			t.Fatalf("%s: the mock saw %d turns, want %d", what, len(turns), n+1)
		}
		turn := turns[n]
		if !turn.HasMessage("assistant", "done: [Feature: f]") || turn.HasMessage("assistant", "done: Build the widget.") {
			t.Errorf("%s: the turn does not start from the design's conversation:\n%s", what, turn.Body)
		}
		if thread == "" || thread == design || thread == build || turn.Header.Get("Thread-Id") != thread {
			t.Errorf("%s: thread %q (turn's %q; design %q, first build %q)", what, thread, turn.Header.Get("Thread-Id"), design, build)
		}
		if head := codexRolloutHead(t, thread); !strings.Contains(head, `"forked_from_id":"`+design+`"`) {
			t.Errorf("%s: the thread %s is not a fork of the design's %s: %.300s", what, thread, design, head)
		}
	}

	tree := filepath.Join(t.TempDir(), "fork")
	out := pipeline(t, dir, "fork", "--at", "build", "--worktree", tree)
	if out.code != 0 || !strings.Contains(out.stdout, "the codex session "+design+", as phase build started, is resumed as a fork") {
		t.Fatalf("fork: exit %d\n%s%s", out.code, out.stdout, out.stderr)
	}
	fork := status(t, tree)
	if fork.Status != "completed" {
		t.Errorf("the fork: %s", fork.Status)
	}
	fromDesign("the fork", 2, fork.Phases[1].NativeSession)

	if r := pipeline(t, dir, "rewind", "--to", "build"); r.code != 0 {
		t.Fatalf("rewind: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	r := pipeline(t, dir, "resume")
	if r.code != 0 || !strings.Contains(r.stdout, "the codex session "+design+", as phase build started, is resumed as a fork") {
		t.Fatalf("resume: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	after := status(t, dir)
	if after.Status != "completed" {
		t.Errorf("after the rewind: %s", after.Status)
	}
	rebuilt := after.Phases[1].NativeSession
	fromDesign("the rewind", 3, rebuilt)
	if text := mock.Turns()[3].LastUserText(); !strings.Contains(text, "[Resume context]") {
		t.Errorf("the rewind: no resume context in %q", text)
	}
	if rebuilt == fork.Phases[1].NativeSession {
		t.Errorf("the rewind's thread %s is the fork's", rebuilt)
	}
	if tokens := codexTokens(mock.Turns()[3]); after.Phases[1].Tokens != codexTokens(mock.Turns()[1])+tokens {
		t.Errorf("build counted %d tokens, want its two turns' %d + %d", after.Phases[1].Tokens, codexTokens(mock.Turns()[1]), tokens)
	}
	// The design's thread was not altered by the forks.
	if data, err := os.ReadFile(codexRolloutPath(t, design)); err != nil || strings.Contains(string(data), "Build the widget.") {
		t.Errorf("the design's session file (%d bytes, %v) holds the build phase", len(data), err)
	}
}
