package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/internal/render"
)

// The views' own escape sequences, which the text they show is wrapped in.
var viewSequences = regexp.MustCompile(`\x1b\[(\d+A\x1b\[J|[012]m)`)

func TestPrintStatusMakesTextSafe(t *testing.T) {
	var out bytes.Buffer
	r := engine.StatusReport{ID: "s1", Pipeline: "p\x1b]0;t\x07", Status: "paused", PauseReason: "checkpoint",
		PauseNote: "look \x1b[2Jhere\nnow", Phase: "design", Step: "agent", Attempt: 1,
		Phases: []engine.PhaseReport{{Name: "design", Status: "paused", Notes: []string{"human \x1b[31mnote\x1b[0m"}}}}
	if err := render.Status(&out, liveStatus{StatusReport: r}, true); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if strings.ContainsAny(got, "\x1b\x07") {
		t.Errorf("raw escapes in status:\n%q", got)
	}
	for _, want := range []string{"paused: checkpoint — look here\\nnow\n", "note (design): human note\n", "s1 (p)"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
}

// escapingAgent is a step that prints escape sequences: a window title, a
// screen clear, a terminal reset, and a checkpoint whose note writes the
// clipboard and changes colour. GATE, when set, is a FIFO it waits on
// between the two.
const escapingAgent = `printf '\033]0;owned\007title\n\033[2J\033[Hcleared\n\033c reset\n'
if [ -n "$GATE" ]; then read go < "$GATE"; fi
printf '[CHECKPOINT] look \033]52;c;c2VjcmV0\007here \033[31mred\033[0m\n'
`

func escapingProject(t *testing.T, gate string) string {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
agent:
  kind: command
  command: [sh, ./agent.sh]
  env: {GATE: '`+gate+`'}
phases: [{name: design}]
`)
	write(t, dir, "agent.sh", escapingAgent)
	return dir
}

// withoutCI is this process's environment without CI, so that the run
// picks its view by its output alone.
func withoutCI() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CI=") {
			env = append(env, kv)
		}
	}
	return append(env, "TERM=xterm-256color")
}

// The live view on a terminal (a pty) shows the step's output and the
// checkpoint's note, and passes none of their escape sequences: only its
// own bold, dim and redraws reach the terminal.
func TestStepEscapeSequencesNeverReachTheTerminal(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := escapingProject(t, gate)
	cmd := exec.Command(binary, "run", "--no-prompt")
	cmd.Dir, cmd.Env = dir, withoutCI()
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunks := make(chan []byte, 64)
	go func() {
		// Read until the run's side closes: EIO on Linux.
		for {
			buf := make([]byte, 4096)
			n, err := f.Read(buf)
			if n > 0 {
				chunks <- buf[:n]
			}
			if err != nil {
				close(chunks)
				return
			}
		}
	}()
	deadline := time.After(failsafe)
	var out []byte
	// The step waits at the gate until the live view has drawn its
	// output; then it checkpoints, and the run pauses.
	gated := false
	for chunks != nil {
		select {
		case chunk, ok := <-chunks:
			if !ok {
				chunks = nil
				continue
			}
			out = append(out, chunk...)
			if !gated && bytes.Contains(out, []byte("cleared")) {
				gated = true
				if err := os.WriteFile(gate, []byte("go\n"), 0); err != nil {
					t.Fatal(err)
				}
			}
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("the run did not end; output:\n%q", out)
		}
	}
	if err := cmd.Wait(); cmd.ProcessState.ExitCode() != exitPaused {
		t.Fatalf("run: %v, want exit 3; output:\n%q", err, out)
	}
	if !bytes.Contains(out, []byte("\x1b[1m")) {
		t.Fatalf("not the live view on a terminal:\n%q", out)
	}
	rest := viewSequences.ReplaceAll(out, nil)
	if i := bytes.IndexAny(rest, "\x1b\x07"); i >= 0 {
		t.Errorf("an escape sequence of the step reached the terminal at %d: %q", i, rest[max(0, i-40):min(len(rest), i+40)])
	}
	for _, want := range []string{"title", "cleared", " reset", "paused: checkpoint: look here red"} {
		if !bytes.Contains(rest, []byte(want)) {
			t.Errorf("no %q in:\n%q", want, rest)
		}
	}
}

// Without a terminal (CI logs, a pipe) the lines carry no escape sequence
// either, and neither does status, whose pause note is the checkpoint's.
func TestStepEscapeSequencesNeverReachPlainOutputOrStatus(t *testing.T) {
	dir := escapingProject(t, "")
	r := pipelineEnv(t, dir, append(os.Environ(), "CI=true"), "run")
	if r.code != exitPaused {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	status := pipeline(t, dir, "status", "-v")
	for name, out := range map[string]string{"run": r.stdout + r.stderr, "status": status.stdout + status.stderr} {
		if strings.ContainsAny(out, "\x1b\x07") {
			t.Errorf("%s printed an escape sequence:\n%q", name, out)
		}
		if !strings.Contains(out, "look here red") {
			t.Errorf("%s does not show the note:\n%s", name, out)
		}
	}
	// JSON keeps the note as it was, escaped.
	if s := decodeStatus(t, pipeline(t, dir, "status", "-o", "json")); s.PauseNote != "look \x1b]52;c;c2VjcmV0\x07here \x1b[31mred\x1b[0m" {
		t.Errorf("status -o json: the note is %q", s.PauseNote)
	}
}
