package main

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// answerAgent checkpoints the first time, and says what it was told the
// second.
const answerAgent = `if [ ! -f seen ]; then
  touch seen
  echo "edited" >> spec.md
  echo "[CHECKPOINT] check the design"
else
  echo "going on"
fi
`

const answerPhases = `version: 1
spec: spec.md
agent: {kind: command, command: [sh, ./agent.sh]}
phases:
  - name: design
    prompt: Draft the design.
  - name: build
    prompt: Build it.
`

// awaitNth waits until the terminal shows want n times.
func (term *terminal) awaitNth(t *testing.T, want string, n int) {
	t.Helper()
	term.awaitMatch(t, regexp.MustCompile(fmt.Sprintf(`(?s)(%s.*){%d}`, regexp.QuoteMeta(want), n)))
}

// A pause on a terminal asks what to do, one key at a time: l shows the
// step's last lines, d what changed since the phase began (the spec's
// diff too), n takes notes, and the session resumes in the same process,
// to completion, the notes in the agent's resume context.
func TestAPauseOnATerminalIsAnsweredWhereItHappens(t *testing.T) {
	dir, env := gitRepo(t)
	write(t, dir, "agent.sh", answerAgent)
	write(t, dir, "phases.yaml", answerPhases)
	write(t, dir, "spec.md", "# The spec\n")
	gitOut(t, dir, env, "add", "-A")
	gitOut(t, dir, env, "commit", "-qm", "start")
	term := startOnTerminalWith(t, dir, env[len(os.Environ()):], nil, "run")
	const menu = "[q] leave it paused"
	term.await(t, "paused: checkpoint: check the design")
	term.awaitNth(t, menu, 1)
	io.WriteString(term.pty, "l")
	term.await(t, "==> design/1-agent.log <==")
	term.awaitNth(t, menu, 2)
	io.WriteString(term.pty, "d")
	term.await(t, "files changed since phase design began")
	term.await(t, "+edited")
	term.awaitNth(t, menu, 3)
	io.WriteString(term.pty, "n")
	term.await(t, "notes for the agent")
	io.WriteString(term.pty, "mind the edge case\r")
	if code := term.exit(t); code != exitCompleted {
		t.Fatalf("exit %d, want 0: the terminal shows:\n%s", code, term.shown())
	}
	if s := status(t, dir); s.Status != "completed" {
		t.Errorf("status %s, want completed", s.Status)
	}
	if logs := pipeline(t, dir, "logs", "--prompts"); !strings.Contains(logs.stdout, "mind the edge case") {
		t.Errorf("the notes are not in the resume context:\n%s", logs.stdout)
	}
}

// q (or Enter) leaves the session paused: exit 3, and how to go on.
func TestAPauseLeftPausedAtTheTerminal(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "agent.sh", answerAgent)
	write(t, dir, "phases.yaml", answerPhases)
	write(t, dir, "spec.md", "# The spec\n")
	term := startOnTerminal(t, dir, "run")
	term.await(t, "[q] leave it paused")
	io.WriteString(term.pty, "d")
	term.await(t, "git cannot say what changed")
	term.awaitNth(t, "[q] leave it paused", 2)
	io.WriteString(term.pty, "q")
	if code := term.exit(t); code != exitPaused {
		t.Fatalf("exit %d, want 3:\n%s", code, term.shown())
	}
	if !strings.Contains(term.shown(), "continue it with: pipeline resume") {
		t.Errorf("no word of how to go on:\n%s", term.shown())
	}
}

// r resumes the paused session in the same process, to completion.
func TestAPauseResumedWithR(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "agent.sh", answerAgent)
	write(t, dir, "phases.yaml", answerPhases)
	write(t, dir, "spec.md", "# The spec\n")
	term := startOnTerminal(t, dir, "run")
	term.await(t, "[q] leave it paused")
	io.WriteString(term.pty, "r")
	if code := term.exit(t); code != exitCompleted {
		t.Fatalf("exit %d, want 0:\n%s", code, term.shown())
	}
	if s := status(t, dir); s.Status != "completed" || !strings.Contains(term.shown(), "resuming session "+s.ID) {
		t.Errorf("status %s; the terminal:\n%s", s.Status, term.shown())
	}
}
