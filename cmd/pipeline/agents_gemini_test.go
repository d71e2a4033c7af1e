//go:build agentclis

package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/internal/mockapi"
)

// The gemini adapter end to end: the built pipeline runs the real Gemini
// CLI (installed by make test, found through PIPELINE_AGENT_CLIS) against
// the mock of the Gemini API on 127.0.0.1. A turn costs a few seconds of
// the CLI's start-up: each test keeps to a handful.

// geminiSetup puts the real Gemini CLI on PATH, starts the mock, and
// points the CLI at it with a HOME (and TMPDIR) of its own
// (~/.gemini/settings.json: API-key auth, no telemetry, no retries of a
// failed request); it returns the mock and the project folder.
func geminiSetup(t *testing.T) (*mockapi.Gemini, string) {
	t.Helper()
	_, clis := mockapi.AgentCLI(t, "gemini")
	mock := mockapi.NewGemini()
	t.Cleanup(mock.Close)
	// The project first: TMPDIR changes below.
	dir, home := t.TempDir(), t.TempDir()
	if err := mockapi.WriteGeminiHome(home); err != nil {
		t.Fatal(err)
	}
	for _, kv := range mock.Env(home) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("PATH", clis+string(os.PathListSeparator)+os.Getenv("PATH"))
	return mock, dir
}

// fresh reports whether a turn started a session: its conversation is the
// one user content, with nothing the model said before.
func geminiFresh(turn mockapi.GeminiRequest) bool {
	return len(turn.Contents) == 1 && turn.Contents[0].Role == "user"
}

// Two phases of one feature: the second resumes the first's session (its
// request carries the first phase's exchange), and the tokens are what the
// mock reported.
func TestGeminiTwoPhasesShareTheFeatureSession(t *testing.T) {
	mock, dir := geminiSetup(t)
	mock.SetUsage(1000, 25)
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: gemini, model: gemini-2.5-flash, feature: f}
phases:
  - name: design
    prompt: Design the greeting.
  - name: build
    prompt: Build the greeting.
`)
	r := pipeline(t, dir, "run")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "done: [Feature: f]") {
		t.Errorf("the agent's text is not shown:\n%s", r.stdout)
	}
	turns := mock.Turns()
	if len(turns) != 2 {
		t.Fatalf("%d turns, want 2", len(turns))
	}
	for _, turn := range turns {
		if turn.Model != "gemini-2.5-flash" {
			t.Errorf("turn to model %q", turn.Model)
		}
	}
	// The first prompt of the session names the feature: the mock's reply
	// echoes that first line.
	if !geminiFresh(turns[0]) || !strings.HasPrefix(turns[0].LastUserText(), "[Feature: f]\n") {
		t.Errorf("the first phase did not start a session of feature f: %+v", turns[0].Contents)
	}
	if !turns[1].HasMessage("user", "Design the greeting.") || !turns[1].HasMessage("model", "done: [Feature: f]") ||
		!strings.HasPrefix(turns[1].LastUserText(), "Build the greeting.") {
		t.Errorf("the second phase did not resume the first's session: %+v", turns[1].Contents)
	}
	s := status(t, dir)
	if s.Status != "completed" || s.Tokens != 2*(1000+25) {
		t.Errorf("status %s, tokens %d; want completed, %d", s.Status, s.Tokens, 2*(1000+25))
	}
	if len(s.Phases) != 2 || s.Phases[0].Tokens != 1025 || s.Phases[1].Tokens != 1025 ||
		s.Phases[0].NativeSession == "" || s.Phases[1].NativeSession != s.Phases[0].NativeSession {
		t.Errorf("phases %+v", s.Phases)
	}
}

// Three failed turns in a row trigger restart_when: the session is
// dropped, and the next attempt starts afresh.
func TestGeminiErrorsRestartTheSession(t *testing.T) {
	mock, dir := geminiSetup(t)
	mock.FailNextContaining("Build the greeting.", 3)
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: gemini, model: gemini-2.5-flash, feature: f}
phases:
  - name: design
    prompt: Design the greeting.
  - name: build
    prompt: Build the greeting.
    restart_when: {errors: consecutive_errors >= 3}
    retry: {when: exit_code != 0, backoff: 1ms, escalate_when: attempt > 5}
`)
	r := pipeline(t, dir, "run")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	turns := mock.Turns()
	var codes []int
	for _, turn := range turns {
		codes = append(codes, turn.Status)
	}
	if !slices.Equal(codes, []int{200, 500, 500, 500, 200}) {
		t.Fatalf("turns answered %v, want design, three failures, the fresh attempt", codes)
	}
	for i, turn := range turns[1:4] {
		if !turn.HasMessage("model", "done: [Feature: f]") {
			t.Errorf("failed attempt %d did not resume the design session: %+v", i+1, turn.Contents)
		}
	}
	if last := turns[4]; !geminiFresh(last) || last.HasMessage("model", "done: [Feature: f]") {
		t.Errorf("the attempt after the restart did not start afresh: %+v", last.Contents)
	}
	s := status(t, dir)
	build := s.Phases[1]
	if s.Status != "completed" || build.Attempts != 4 || build.Restarts != 1 || !slices.Equal(build.ExitCodes[:3], []int{244, 244, 244}) ||
		build.NativeSession == "" || build.NativeSession == s.Phases[0].NativeSession {
		t.Errorf("status %s, build %+v, design session %s", s.Status, build, s.Phases[0].NativeSession)
	}
}

// A turn reporting 400,000 prompt tokens triggers restart_when on the
// context: the next phase of the feature starts a new session.
func TestGeminiContextRestartsTheSession(t *testing.T) {
	mock, dir := geminiSetup(t)
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: gemini, model: gemini-2.5-flash, feature: f}
defaults:
  restart_when: {context: context_tokens > 350000}
phases:
  - name: design
    prompt: "`+mockapi.GeminiHugeContextMarker+` Design the greeting."
  - name: build
    prompt: Build the greeting.
`)
	r := pipeline(t, dir, "run")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	turns := mock.Turns()
	if len(turns) != 2 || !geminiFresh(turns[1]) {
		t.Fatalf("the build phase did not start afresh: %d turns, %+v", len(turns), turns[len(turns)-1].Contents)
	}
	s := status(t, dir)
	design := s.Phases[0]
	if design.Restarts != 1 || len(design.Fired) == 0 || design.Fired[0].Reason != "context" {
		t.Errorf("design %+v", design)
	}
	if want := mockapi.GeminiHugePromptTokens + 30 + 1200 + 30; s.Tokens != want {
		t.Errorf("tokens %d, want %d", s.Tokens, want)
	}
	if s.Phases[1].NativeSession == design.NativeSession {
		t.Errorf("build kept the design's session %s", design.NativeSession)
	}
}

// A [CHECKPOINT] streamed in the middle of a long reply pauses the run
// there: the CLI is stopped, not waited for (the mock would stream for
// minutes more, and sees the CLI go away).
func TestGeminiCheckpointMidTurnPauses(t *testing.T) {
	mock, dir := geminiSetup(t)
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: gemini, model: gemini-2.5-flash, feature: f}
phases:
  - name: design
    prompt: "`+mockapi.GeminiSlowCheckpointMarker+` Design the greeting."
`)
	mock.SetSlow(failsafe, 200*time.Millisecond)
	r := pipeline(t, dir, "run", "--grace", "2s")
	if r.code != exitPaused {
		t.Fatalf("run: exit %d, want %d\n%s\n%s", r.code, exitPaused, r.stdout, r.stderr)
	}
	s := status(t, dir)
	if s.Status != "paused" || s.PauseReason != "checkpoint" || s.PauseNote != "mid-turn note" {
		t.Errorf("status %s, reason %q, note %q", s.Status, s.PauseReason, s.PauseNote)
	}
	// The interrupted turn keeps its prompt in the session: it is the one
	// to resume.
	if s.Phases[0].NativeSession == "" {
		t.Errorf("no native session recorded: %+v", s.Phases[0])
	}
	mock.AwaitDisconnected(1, failsafe)
	if n := mock.Disconnected(); n != 1 {
		t.Errorf("the CLI left %d slow replies before their end, want 1", n)
	}

	// The CLI loses its sessions: resume finds the recorded one gone
	// (exit 42) and goes on in a fresh one, which checkpoints again.
	chats, _ := filepath.Glob(filepath.Join(os.Getenv("HOME"), ".gemini", "tmp", "*", "chats"))
	if len(chats) != 1 {
		t.Fatalf("the CLI's chats folders: %v", chats)
	}
	if err := os.RemoveAll(chats[0]); err != nil {
		t.Fatal(err)
	}
	r = pipeline(t, dir, "resume", "--grace", "2s")
	if r.code != exitPaused {
		t.Fatalf("resume: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	turns := mock.Turns()
	if len(turns) != 2 || !geminiFresh(turns[1]) {
		t.Fatalf("%d turns; the last did not start afresh: %+v", len(turns), turns[len(turns)-1].Contents)
	}
	after := status(t, dir)
	var reasons []string
	for _, f := range after.Phases[0].Fired {
		reasons = append(reasons, f.Reason)
	}
	if !slices.Contains(reasons, "session-lost") || after.Phases[0].NativeSession == s.Phases[0].NativeSession {
		t.Errorf("triggers %v, session %s (was %s)", reasons, after.Phases[0].NativeSession, s.Phases[0].NativeSession)
	}
}

// With the session store deleted, a new pipeline session of a feature adopts the CLI's own session of it,
// found by the [Feature: f] header of its first prompt in gemini
// --list-sessions. Listing would have the model retitle the latest session
// with a summary (here one without the header): the adapter keeps that
// request from reaching the API.
func TestGeminiRecoversTheFeatureSession(t *testing.T) {
	mock, dir := geminiSetup(t)
	mock.SetTitle("Design the greeting")
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: gemini, model: gemini-2.5-flash, feature: f}
phases:
  - name: design
    prompt: Design the greeting.
`)
	if r := pipeline(t, dir, "run"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	first := status(t, dir).Phases[0].NativeSession
	// The session store is lost.
	if err := os.RemoveAll(filepath.Join(dir, ".pipeline")); err != nil {
		t.Fatal(err)
	}
	r := pipeline(t, dir, "run")
	if r.code != 0 {
		t.Fatalf("run after the store was deleted: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout+r.stderr, "adopting the gemini session "+first) {
		t.Errorf("no adoption of %s:\n%s\n%s", first, r.stdout, r.stderr)
	}
	turns := mock.Turns()
	if len(turns) != 2 || !turns[1].HasMessage("model", "done: [Feature: f]") {
		t.Fatalf("%d turns; the second did not resume the first's session: %+v", len(turns), turns[len(turns)-1].Contents)
	}
	if requests := mock.Requests(); len(requests) != len(turns) {
		t.Errorf("%d requests besides the turns: %+v", len(requests)-len(turns), requests)
	}
	if s := status(t, dir); s.Phases[0].NativeSession != first {
		t.Errorf("native session %s, want %s", s.Phases[0].NativeSession, first)
	}
}

// A rewind to the build phase cannot take Gemini CLI's session back to
// where the build started (-r resumes a session as it is now): the turn
// after it starts a fresh session, with the resume context, and never
// resumes the session that holds the first build.
func TestGeminiRewindStartsAFreshSession(t *testing.T) {
	mock, dir := geminiSetup(t)
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: gemini, model: gemini-2.5-flash, feature: f}
phases:
  - name: design
    prompt: Design the greeting.
  - name: build
    prompt: Build the greeting.
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
	session := status(t, dir).Phases[0].NativeSession
	if r := pipeline(t, dir, "rewind", "--to", "build"); r.code != 0 {
		t.Fatalf("rewind: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	r := pipeline(t, dir, "resume")
	if r.code != 0 || !strings.Contains(r.stdout, "the gemini CLI cannot fork its session "+session+" back to where phase build started: a fresh session starts") {
		t.Fatalf("resume: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	turns := mock.Turns()
	if len(turns) != 3 {
		t.Fatalf("the mock saw %d turns, want 3", len(turns))
	}
	if !geminiFresh(turns[2]) || !strings.Contains(turns[2].LastUserText(), "[Resume context]") {
		t.Errorf("the turn after the rewind did not start a fresh session with the resume context: %+v", turns[2].Contents)
	}
	if s := status(t, dir); s.Status != "completed" || s.Phases[1].NativeSession == "" || s.Phases[1].NativeSession == session {
		t.Errorf("after the rewind: %s, build's session %q (design's %q)", s.Status, s.Phases[1].NativeSession, session)
	}
}
