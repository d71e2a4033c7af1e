package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"
)

// screenOf is what a terminal width columns wide shows after out: text
// (wrapped at the width), carriage return, line feed, the cursor up (CSI
// n A), erase below (CSI J) and to the end of the line (CSI K); colours
// and other sequences change nothing shown.
func screenOf(out string, width int) []string {
	var (
		screen   = [][]rune{nil}
		row, col int
	)
	put := func(r rune) {
		if col >= width {
			row, col = row+1, 0
		}
		for row >= len(screen) {
			screen = append(screen, nil)
		}
		line := screen[row]
		for len(line) <= col {
			line = append(line, ' ')
		}
		line[col] = r
		screen[row] = line
		col++
	}
	csi := regexp.MustCompile(`^\x1b\[([0-9;?]*)([A-Za-z])`)
	for i := 0; i < len(out); {
		if m := csi.FindStringSubmatch(out[i:]); m != nil {
			n, _ := strconv.Atoi(m[1])
			switch m[2] {
			case "A":
				row = max(0, row-max(1, n))
			case "J":
				if row < len(screen) {
					screen[row] = screen[row][:min(col, len(screen[row]))]
					screen = screen[:row+1]
				}
			case "K":
				if row < len(screen) {
					screen[row] = screen[row][:min(col, len(screen[row]))]
				}
			}
			i += len(m[0])
			continue
		}
		r, size := utf8.DecodeRuneInString(out[i:])
		i += size
		switch r {
		case '\r':
			col = 0
		case '\n':
			row++
			for row >= len(screen) {
				screen = append(screen, nil)
			}
		default:
			put(r)
		}
	}
	lines := make([]string, len(screen))
	for i, l := range screen {
		lines[i] = strings.TrimRight(string(l), " ")
	}
	return lines
}

func TestRender(t *testing.T) {
	got := screenOf("one\r\ntwo\r\n\x1b[1mblock\x1b[0m\r\n^C\r\x1b[1A\x1b[Jnext\r\n", 80)
	if want := []string{"one", "two", "next", ""}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
	// Without the carriage return the erase starts after the "^C".
	if got := screenOf("block\r\n^C\x1b[1A\x1b[Jnext\r\n", 80); got[0] != "blnext" {
		t.Errorf("got %q", got)
	}
}

// Regression: Ctrl+C at a terminal echoes "^C" where the cursor is, below
// the block; the block was erased from there and the line after it began
// at the third column, leaving "[1[1/2 design]". The grace period is
// shown on the block; the screen keeps no stray character.
func TestCtrlCLeavesNoStrayCharacters(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", stubbornStep)
	term := startOnTerminal(t, dir, "run", "--no-prompt", "--grace", "1h")
	term.await(t, "child")
	term.await(t, "[1/1 work] step run · attempt 1")
	io.WriteString(term.pty, "\x03")
	term.await(t, "stopping (Ctrl+C again to kill)")
	io.WriteString(term.pty, "\x03")
	if code := term.exit(t); code != exitPaused {
		t.Fatalf("exit %d, want %d (paused)", code, exitPaused)
	}
	screen := screenOf(term.shown(), 120)
	var said bool
	for _, line := range screen {
		if strings.Contains(line, "^C") || strings.Contains(line, "[1[") {
			t.Errorf("a stray character on the line %q; the screen:\n%s", line, strings.Join(screen, "\n"))
		}
		if strings.Contains(line, "interrupted (SIGINT): stopping the step") {
			said = true
			if !strings.HasPrefix(line, "interrupted (SIGINT): ") {
				t.Errorf("the line does not start at the first column: %q", line)
			}
		}
	}
	if !said {
		t.Errorf("no interrupt line on the screen:\n%s", strings.Join(screen, "\n"))
	}
}

// A failed step's last ten lines stay on screen above its summary; a
// done_when that is false says so, and the phase runs again.
func TestLiveViewKeepsTheLastLinesOfAFailedTest(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
phases:
  - name: build
    steps:
      - run: echo building
      - name: test
        run: 'for i in $(seq 1 15); do echo "test line $i"; done; test -f passed || { touch passed; exit 1; }'
    done_when: steps.test.exit_code == 0
`)
	term := startOnTerminal(t, dir, "run", "--no-prompt")
	if code := term.exit(t); code != exitCompleted {
		t.Fatalf("exit %d; the terminal shows:\n%s", code, term.shown())
	}
	screen := strings.Join(screenOf(term.shown(), 120), "\n")
	kept := "  test line 6\n"
	for i := 7; i <= 15; i++ {
		kept += fmt.Sprintf("  test line %d\n", i)
	}
	kept += "[1/1 build] step test exited 1"
	if !strings.Contains(screen, kept) {
		t.Errorf("the last ten lines of the failed test are not on screen above its summary:\n%s", screen)
	}
	if strings.Contains(screen, "test line 5\n") {
		t.Errorf("more than ten lines kept:\n%s", screen)
	}
	if !strings.Contains(screen, "\ndone_when is false (steps.test.exit_code == 0): phase build runs again (attempt 2)\n") {
		t.Errorf("no line for the done_when that was false:\n%s", screen)
	}
	// The test that passed leaves only its summary.
	if strings.Count(screen, "test line 15") != 1 {
		t.Errorf("the lines of a step that passed are kept:\n%s", screen)
	}
}

// A back-off counts down to the next attempt on the live view.
func TestLiveViewCountsDownTheBackoff(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
defaults:
  retry: {when: exit_code != 0, backoff: duration("2s")}
phases:
  - name: build
    steps: [{run: 'test -f tried || { touch tried; exit 1; }'}]
`)
	term := startOnTerminal(t, dir, "run", "--no-prompt")
	term.await(t, "retrying in 2s (attempt 2)")
	term.await(t, "[1/1 build] retrying: attempt 2 starts in 1s")
	if code := term.exit(t); code != exitCompleted {
		t.Fatalf("exit %d; the terminal shows:\n%s", code, term.shown())
	}
	screen := strings.Join(screenOf(term.shown(), 120), "\n")
	if strings.Contains(screen, "starts in") {
		t.Errorf("the countdown stays on screen:\n%s", screen)
	}
}

// widePhaseProject is a step that prints a long line, then waits on the FIFO
// gate before it ends.
func widePhaseProject(t *testing.T) (dir, gate string) {
	t.Helper()
	dir = t.TempDir()
	gate = filepath.Join(t.TempDir(), "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "phases.yaml", `version: 1
phases:
  - name: implementation-of-the-dashboard
    steps:
      - run: |
          echo "start $(printf "%0150d" 0) end"
          read go < `+gate+`
          echo done
`)
	return dir, gate
}

// liveBlock is a block of the live view as drawn: its status line and
// its output line.
var liveBlock = regexp.MustCompile(`\x1b\[J(?:\x1b\[1m)?(\[1/1 [^\n]*)\n(?:\x1b\[2m)?(  start [^\n]*)\n`)

// fittingBlock tells whether shown holds a block whose lines are all
// narrower than cols; tooWide says those of the last block that are not.
func fittingBlock(shown string, cols int) (fits bool, tooWide []string) {
	for _, m := range liveBlock.FindAllStringSubmatch(shown, -1) {
		tooWide = nil
		for _, line := range m[1:] {
			line = viewSequences.ReplaceAllString(strings.TrimRight(line, "\r"), "")
			if n := utf8.RuneCountInString(line); n >= cols {
				tooWide = append(tooWide, fmt.Sprintf("a line of %d columns on a terminal of %d: %q", n, cols, line))
			}
		}
		if len(tooWide) == 0 {
			return true, nil
		}
	}
	return false, tooWide
}

// After a resize (SIGWINCH) the block is drawn to the new width.
func TestLiveViewFitsTheTerminalWhenResized(t *testing.T) {
	dir, gate := widePhaseProject(t)
	term := startOnTerminalWith(t, dir, nil, &pty.Winsize{Rows: 40, Cols: 120}, "run", "--no-prompt")
	term.await(t, "start 000")
	from := len(term.shown())
	if err := pty.Setsize(term.pty, &pty.Winsize{Rows: 40, Cols: 40}); err != nil {
		t.Fatal(err)
	}
	// A block drawn at the old width may still come after the resize, before
	// the view hears of it (the clock's redraw): the view must draw one
	// that fits, and the test fails when none comes.
	deadline := time.After(failsafe)
	for {
		fits, tooWide := fittingBlock(term.shown()[from:], 40)
		if fits {
			break
		}
		select {
		case <-term.more:
		case <-deadline:
			t.Fatalf("no block drawn to the terminal's new width after the resize (%s):\n%q", strings.Join(tooWide, "; "), term.shown()[from:])
		}
	}
	if err := os.WriteFile(gate, []byte("go\n"), 0); err != nil {
		t.Fatal(err)
	}
	if code := term.exit(t); code != exitCompleted {
		t.Fatalf("exit %d", code)
	}
}

// NO_COLOR keeps the live view and drops its bold and dim; TERM=dumb, a
// terminal that cannot move its cursor, gets plain lines.
func TestNoColorAndDumbTerminal(t *testing.T) {
	for _, tc := range []struct {
		env   string
		live  bool
		shows string
	}{
		{"NO_COLOR=1", true, "[1/1 build] step run exited 0"},
		{"TERM=dumb", false, "| red\r\n"},
	} {
		dir := t.TempDir()
		write(t, dir, "phases.yaml", `version: 1
phases:
  - name: build
    steps: [{run: 'printf "\033[31mred\033[0m\n"; echo built'}]
`)
		term := startOnTerminalWith(t, dir, []string{tc.env}, &pty.Winsize{Rows: 40, Cols: 120}, "run", "--no-prompt")
		if code := term.exit(t); code != exitCompleted {
			t.Fatalf("%s: exit %d", tc.env, code)
		}
		out := term.shown()
		for _, colour := range []string{"\x1b[1m", "\x1b[2m", "\x1b[0m", "\x1b[31m"} {
			if strings.Contains(out, colour) {
				t.Errorf("%s: colour %q in:\n%q", tc.env, colour, out)
			}
		}
		if live := strings.Contains(out, "\x1b[J"); live != tc.live {
			t.Errorf("%s: live view %v, want %v:\n%q", tc.env, live, tc.live, out)
		}
		if !tc.live && strings.Contains(out, "\x1b") {
			t.Errorf("%s: an escape sequence on a dumb terminal:\n%q", tc.env, out)
		}
		if !strings.Contains(out, tc.shows) {
			t.Errorf("%s: not the run's output:\n%q", tc.env, out)
		}
	}
}

// --quiet prints only how the run ended; --verbose adds each trigger that
// fired with its values; the two together are a usage error.
func TestQuietAndVerbose(t *testing.T) {
	project := func() string {
		dir := t.TempDir()
		write(t, dir, "phases.yaml", `version: 1
defaults:
  pause_when: {failure: exit_code != 0}
  retry: {when: "false"}
phases:
  - name: build
    steps: [{run: 'echo noisy output; exit 4'}]
`)
		return dir
	}
	quiet := pipeline(t, project(), "run", "--quiet")
	if quiet.code != exitPaused || quiet.stdout != "paused: failure (exit_code != 0) with exit_code=4\n" {
		t.Errorf("run --quiet: exit %d, stdout %q", quiet.code, quiet.stdout)
	}
	if strings.Contains(quiet.stdout+quiet.stderr, "noisy") {
		t.Errorf("run --quiet shows the step's output: %q %q", quiet.stdout, quiet.stderr)
	}
	plain := pipeline(t, project(), "run")
	verbose := pipeline(t, project(), "run", "--verbose")
	fired := "trigger fired: failure (exit_code != 0) with exit_code=4\n"
	if verbose.code != exitPaused || !strings.Contains(verbose.stdout, fired) || !strings.Contains(verbose.stdout, "noisy output") {
		t.Errorf("run --verbose: exit %d, stdout:\n%s", verbose.code, verbose.stdout)
	}
	if strings.Contains(plain.stdout, "trigger fired") {
		t.Errorf("run without --verbose says the triggers:\n%s", plain.stdout)
	}
	if r := pipeline(t, project(), "run", "-q", "-v"); r.code != exitUsage {
		t.Errorf("run -q -v: exit %d, %s", r.code, r.stderr)
	}
}
