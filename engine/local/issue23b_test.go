package local_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/internal/clock"
)

// Issue 23, item 10: attempts 2 and 3 of a failing agent step got the
// same prompt as attempt 1. A retry's prompt carries what failed (the
// step, its exit code, its last lines, redacted), as a resume does; so
// does the next attempt of a phase whose done_when was false.
func TestIssue23RetryPromptSaysWhatFailed(t *testing.T) {
	secret := "sk-ant-api03-" + strings.Repeat("x", 30)
	fake := clock.NewFake(time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC))
	h := newHarness(t, `version: 1
agent: {kind: command, command: [sh, -c, 'cat > prompt-$PIPELINE_ATTEMPT.txt; echo "importing with `+secret+`"; echo "error: cannot import module tokenize2"; exit 7']}
defaults: {retry: {backoff: 1s, escalate_when: attempt > 2}}
phases: [{name: build, prompt: Build the parser.}]
`, fake)
	s := awaitAdvancing(t, fake, h.start())
	if s.Status != engine.StatusPaused || s.Pause.Reason != engine.ReasonNeedsHuman {
		t.Fatalf("status %s, pause %+v", s.Status, s.Pause)
	}
	first := readIn(t, h.dir, "prompt-1.txt")
	if strings.Contains(first, "exit code") {
		t.Errorf("the first attempt is told of a failure:\n%s", first)
	}
	for _, name := range []string{"prompt-2.txt", "prompt-3.txt"} {
		prompt := readIn(t, h.dir, name)
		for _, want := range []string{"## What failed", "step agent: exit code 7", "error: cannot import module tokenize2", "retry", "Build the parser."} {
			if !strings.Contains(prompt, want) {
				t.Errorf("%s does not say %q:\n%s", name, want, prompt)
			}
		}
		if strings.Contains(prompt, secret) {
			t.Errorf("%s carries the secret the step printed:\n%s", name, prompt)
		}
	}

	// done_when false: the next attempt of the phase is told which check
	// failed, and how.
	h = newHarness(t, `version: 1
agent: {kind: command, command: [sh, -c, 'cat > prompt-$PIPELINE_ATTEMPT.txt']}
phases:
  - name: build
    steps:
      - agent: {}
      - name: test
        run: 'test -f passed || { touch passed; echo "--- FAIL: TestParse"; exit 1; }'
    done_when: steps.test.exit_code == 0
`, fake)
	if s := awaitAdvancing(t, fake, h.start()); s.Status != engine.StatusCompleted {
		t.Fatalf("status %s", s.Status)
	}
	prompt := readIn(t, h.dir, "prompt-2.txt")
	for _, want := range []string{"## What failed", "step test: exit code 1", "--- FAIL: TestParse", "done_when"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("attempt 2 after done_when was false does not say %q:\n%s", want, prompt)
		}
	}
}

func readIn(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Issue 23, item 14: a resume after needs-human ran the failed attempt
// again and appended to its transcript with no separator. It starts a new
// attempt, with a transcript of its own; a resume that runs the same
// attempt again (after a checkpoint) marks where it starts in the
// transcript, with the human's notes.
func TestIssue23ResumeAfterNeedsHumanStartsANewAttempt(t *testing.T) {
	h := newHarness(t, `version: 1
defaults: {retry: {when: exit_code != 0, backoff: 0s, escalate_when: attempt > 1}}
phases:
  - name: build
    steps: [{name: lint, run: 'echo "lint attempt $PIPELINE_ATTEMPT"; test -f fixed'}]
  - name: review
    steps: [{name: look, run: 'echo "look attempt $PIPELINE_ATTEMPT"; test -f looked || { touch looked; echo "[CHECKPOINT] half way"; sleep 30; }'}]
`, clock.Real{})
	h.driver.Grace = 200 * time.Millisecond
	s := h.await(h.start())
	if s.Status != engine.StatusPaused || s.Pause.Reason != engine.ReasonNeedsHuman || s.Attempt != 2 {
		t.Fatalf("status %s at attempt %d, pause %+v", s.Status, s.Attempt, s.Pause)
	}
	if err := os.WriteFile(filepath.Join(h.dir, "fixed"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	resume := func(notes string) engine.State {
		t.Helper()
		events, err := h.sess.Resume(time.Now(), notes, "")
		if err != nil {
			t.Fatal(err)
		}
		s, err := h.driver.Run(context.Background(), h.sess, events...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s = resume("the config was wrong")
	if s.Status != engine.StatusPaused || s.Pause.Reason != "checkpoint" || s.Phases[0].Attempts != 3 {
		t.Fatalf("after the resume: %s, %+v, build's attempts %d (want 3)", s.Status, s.Pause, s.Phases[0].Attempts)
	}
	if got := transcript(t, h, "build", "2-lint.log"); strings.Count(got, "lint attempt") != 1 {
		t.Errorf("the transcript of the attempt that escalated was appended to:\n%s", got)
	}
	if got := transcript(t, h, "build", "3-lint.log"); !strings.Contains(got, "lint attempt 3") {
		t.Errorf("the resume's attempt 3 has no transcript of its own:\n%s", got)
	}

	// A checkpoint pauses mid-step: its resume runs the same attempt, and
	// says so in the transcript.
	if s = resume("go on with the rest"); s.Status != engine.StatusCompleted {
		t.Fatalf("after the second resume: %s, %+v", s.Status, s.Pause)
	}
	got := transcript(t, h, "review", "1-look.log")
	i := strings.Index(got, "--- resumed at ")
	if i < 0 || !strings.Contains(got[i:], "after checkpoint (notes: go on with the rest) ---\n") ||
		strings.Count(got[:i], "look attempt 1") != 1 || !strings.Contains(got[i:], "look attempt 1") {
		t.Errorf("no line marks where the resumed run starts in the transcript:\n%s", got)
	}
}
