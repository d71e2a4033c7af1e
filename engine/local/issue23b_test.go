package local_test

import (
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
