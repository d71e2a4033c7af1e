package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/pipeline-dev/pipeline/internal/proctest"
)

// awaitPid waits for a line "<word> PID" from the run.
func (s *started) awaitPid(t *testing.T, word string) int {
	t.Helper()
	deadline := time.After(failsafe)
	for {
		select {
		case line := <-s.lines:
			if i := strings.Index(line, word+" "); i >= 0 {
				if pid, err := strconv.Atoi(strings.TrimSpace(line[i+len(word)+1:])); err == nil {
					return pid
				}
			}
		case <-deadline:
			t.Fatalf("no line %q from the run; stderr: %s", word, s.stderr.String())
		}
	}
}

// A step that leaves a child and ignores SIGINT, so that only a kill ends
// it, and prints both pids.
const stubbornStep = `version: 1
phases:
  - name: work
    steps: [{run: 'trap "" INT; sleep 600 & echo "child $!"; echo "step $$"; wait'}]
`

// Regression: SIGHUP (the terminal closed, the SSH connection dropped)
// killed the runner (exit 129) instead of pausing the session.
func TestHangUpPausesTheSession(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", stubbornStep)
	run := pipelineStart(t, dir, "run", "--grace", "100ms")
	child := run.awaitPid(t, "child")
	run.cmd.Process.Signal(syscall.SIGHUP)
	if code := run.exit(t); code != exitPaused {
		t.Fatalf("exit %d, want %d (paused); stderr: %s", code, exitPaused, run.stderr.String())
	}
	proctest.AwaitExit(t, child)
	if s := status(t, dir); s.Status != "paused" || s.PauseReason != "interrupted" {
		t.Fatalf("status %+v", s)
	}
}

// Regression: a closed standard output (pipeline run | head) killed the
// runner with SIGPIPE (exit 141) instead of pausing the session.
func TestClosedOutputPausesTheSession(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
phases:
  - name: talk
    steps: [{run: 'echo "step $$"; while :; do echo tick; sleep 0.05; done'}]
`)
	cmd := exec.Command(binary, "run")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "CI=true")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	// As head does: read the first lines, then close the pipe.
	lines := bufio.NewScanner(out)
	step := 0
	for step == 0 && lines.Scan() {
		if i := strings.Index(lines.Text(), "step "); i >= 0 {
			step, _ = strconv.Atoi(lines.Text()[i+len("step "):])
		}
	}
	out.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err = <-exited:
	case <-time.After(failsafe):
		t.Fatal("the run did not end")
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != exitPaused {
		t.Fatalf("run: %v, want exit %d (paused); stderr: %s", err, exitPaused, stderr.String())
	}
	if !strings.Contains(stderr.String(), "is paused; continue it with") {
		t.Errorf("stderr: %s", stderr.String())
	}
	proctest.AwaitExit(t, step)
	if s := status(t, dir); s.Status != "paused" || s.PauseReason != "interrupted" {
		t.Fatalf("status %+v", s)
	}
}

// Regression: SIGQUIT dumped the runner's goroutines and ended it with
// exit 2, leaving the step's child running. It kills the step at once,
// whatever its grace, records the pause, and exits.
func TestQuitKillsTheStepAndPauses(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", stubbornStep)
	run := pipelineStart(t, dir, "run", "--grace", "1h")
	child := run.awaitPid(t, "child")
	run.cmd.Process.Signal(syscall.SIGQUIT)
	if code := run.exit(t); code != exitPaused {
		t.Fatalf("exit %d, want %d (paused); stderr: %s", code, exitPaused, run.stderr.String())
	}
	proctest.AwaitExit(t, child)
	if s := status(t, dir); s.Status != "paused" {
		t.Fatalf("status %+v", s)
	}
}

func TestNegativeGraceIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nphases: [{name: a, steps: [{run: 'true'}]}]\n")
	for _, command := range []string{"run", "resume"} {
		r := pipeline(t, dir, command, "--grace", "-1s")
		if r.code != exitUsage || !strings.Contains(r.stderr, "--grace -1s is negative") {
			t.Errorf("%s --grace -1s: exit %d, %q", command, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".pipeline")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused run wrote its store: %v", err)
	}
}

// terminal is the binary running on a pseudo-terminal, as in a shell.
type terminal struct {
	cmd    *exec.Cmd
	pty    *os.File
	mu     sync.Mutex
	screen bytes.Buffer
	more   chan struct{}
	done   chan int
}

func startOnTerminal(t *testing.T, dir string, args ...string) *terminal {
	t.Helper()
	return startOnTerminalWith(t, dir, nil, &pty.Winsize{Rows: 40, Cols: 120}, args...)
}

// startOnTerminalWith starts the binary on a terminal of size, with env
// added to this process's environment.
func startOnTerminalWith(t *testing.T, dir string, env []string, size *pty.Winsize, args ...string) *terminal {
	t.Helper()
	term := &terminal{cmd: exec.Command(binary, args...), more: make(chan struct{}, 1), done: make(chan int, 1)}
	term.cmd.Dir = dir
	for _, kv := range os.Environ() {
		// The live view, as a person at a terminal sees it.
		if !strings.HasPrefix(kv, "CI=") && !strings.HasPrefix(kv, "NO_COLOR=") && !strings.HasPrefix(kv, "TERM=") {
			term.cmd.Env = append(term.cmd.Env, kv)
		}
	}
	term.cmd.Env = append(append(term.cmd.Env, "TERM=xterm-256color"), env...)
	var err error
	if term.pty, err = pty.StartWithSize(term.cmd, size); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		term.cmd.Process.Kill()
		term.pty.Close()
	})
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := term.pty.Read(buf)
			term.mu.Lock()
			term.screen.Write(buf[:n])
			term.mu.Unlock()
			select {
			case term.more <- struct{}{}:
			default:
			}
			if err != nil {
				break
			}
		}
		term.cmd.Wait()
		term.done <- term.cmd.ProcessState.ExitCode()
	}()
	return term
}

// await waits until the terminal shows want.
func (term *terminal) await(t *testing.T, want string) {
	t.Helper()
	term.awaitMatch(t, regexp.MustCompile(regexp.QuoteMeta(want)))
}

// awaitMatch waits until the terminal shows a match of re, and returns it
// and its groups.
func (term *terminal) awaitMatch(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.After(failsafe)
	for {
		term.mu.Lock()
		shown := term.screen.String()
		term.mu.Unlock()
		if m := re.FindStringSubmatch(shown); m != nil {
			return m
		}
		select {
		case <-term.more:
		case <-deadline:
			t.Fatalf("the terminal never showed %s:\n%s", re, shown)
		}
	}
}

// shown is what the terminal received so far.
func (term *terminal) shown() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.screen.String()
}

func (term *terminal) exit(t *testing.T) int {
	t.Helper()
	select {
	case code := <-term.done:
		return code
	case <-time.After(failsafe):
		term.mu.Lock()
		defer term.mu.Unlock()
		t.Fatalf("the run did not end; the terminal shows:\n%s", term.screen.String())
	}
	return 0
}

// Ctrl+C at a terminal stops the step gracefully; a second Ctrl+C kills
// it at once, though the grace is an hour.
func TestSecondCtrlCOnATerminalKillsTheStep(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", stubbornStep)
	term := startOnTerminal(t, dir, "run", "--no-prompt", "--grace", "1h")
	child, _ := strconv.Atoi(term.awaitMatch(t, regexp.MustCompile(`child (\d+)`))[1])
	io.WriteString(term.pty, "\x03")
	term.await(t, "interrupt again to kill it now")
	io.WriteString(term.pty, "\x03")
	if code := term.exit(t); code != exitPaused {
		t.Fatalf("exit %d, want %d (paused)", code, exitPaused)
	}
	proctest.AwaitExit(t, child)
}

// Regression: a step that asked on the terminal (read < /dev/tty, a git
// credential prompt) was stopped by SIGTTIN, and the run hung until the
// step's idle_timeout, or for good. Steps have no terminal: the prompt
// fails at once, and the run goes on.
func TestPromptOnTheTerminalFailsAtOnce(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
phases:
  - name: ask
    steps:
      - run: 'if read x < /dev/tty; then echo "read $x"; else echo "no terminal for the step"; fi'
      - name: git
        run: 'printf "protocol=https\nhost=example.invalid\n\n" | git credential fill; echo "git exited $?"'
`)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", home)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	for _, name := range []string{"GIT_ASKPASS", "SSH_ASKPASS", "GIT_TERMINAL_PROMPT", "GIT_CONFIG_GLOBAL"} {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
	term := startOnTerminal(t, dir, "run", "--no-prompt")
	if code := term.exit(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
	logs := pipeline(t, dir, "logs")
	for _, want := range []string{"no terminal for the step", "could not read Username", "git exited 128"} {
		if !strings.Contains(logs.stdout, want) {
			t.Errorf("the logs lack %q:\n%s", want, logs.stdout)
		}
	}
}

// Regression: a step whose daemon (setsid) kept standard output open hung
// the run until the daemon exited; the step's timeout could not end it.
// The run goes on when the step's own process ends, the timeout works,
// and the daemons die with their steps.
func TestDaemonHoldingTheOutputDoesNotHangTheRun(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
defaults:
  retry: {when: "false"}
  pause_when: {stuck: timed_out}
phases:
  - name: serve
    steps: [{run: 'setsid sh -c "echo daemon \$\$; : > ready1; exec sleep 600" & until [ -e ready1 ]; do sleep 0.01; done'}]
  - name: hold
    steps:
      - run: 'setsid sh -c "echo daemon \$\$; : > ready2; exec sleep 600" & until [ -e ready2 ]; do sleep 0.01; done; trap "" INT; while :; do sleep 1; done'
        timeout: 1s
`)
	run := pipelineStart(t, dir, "run", "--grace", "100ms")
	first, second := run.awaitPid(t, "daemon"), run.awaitPid(t, "daemon")
	if code := run.exit(t); code != exitPaused {
		t.Fatalf("exit %d, want %d (paused); stderr: %s", code, exitPaused, run.stderr.String())
	}
	proctest.AwaitExit(t, first)
	proctest.AwaitExit(t, second)
	if s := status(t, dir); s.Status != "paused" || s.PauseReason != "stuck" || s.Phase != "hold" {
		t.Fatalf("status %+v", s)
	}
	logs := pipeline(t, dir, "logs").stdout
	for _, pid := range []int{first, second} {
		if want := "killed then: " + strconv.Itoa(pid) + " (sleep)"; !strings.Contains(logs, want) {
			t.Errorf("the logs lack %q:\n%s", want, logs)
		}
	}
}
