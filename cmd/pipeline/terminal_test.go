package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
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
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/internal/redact"
)

// terminalCases are texts with what the terminal is to get of them.
var terminalCases = []struct{ name, in, want string }{
	{"plain", "hello, wörld · 10€\n\tindented\n", "hello, wörld · 10€\n\tindented\n"},
	{"colours", "\x1b[1;31merror\x1b[0m: failed\n", "error: failed\n"},
	{"cursor moves and clear", "a\x1b[2J\x1b[H\x1b[3Ab\x1b[?25l", "ab"},
	{"title, OSC with BEL", "\x1b]0;pwned\x07text", "text"},
	{"hyperlink, OSC with ST", "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\", "click"},
	{"clipboard write", "\x1b]52;c;c2VjcmV0\x07after", "after"},
	{"unterminated OSC ends at the line", "\x1b]0;never ends\nnext line\n", "\nnext line\n"},
	{"DCS, PM, APC, SOS", "a\x1bPq#0;2;0;0;0\x1b\\b\x1b^pm\x1b\\c\x1b_apc\x07d\x1bXsos\x1b\\e", "abcde"},
	{"reset and two-byte sequences", "\x1bcreset \x1b7saved\x1b8 \x1bM", "reset saved "},
	{"charset sequence", "\x1b(Bascii \x1b#8", "ascii "},
	{"lone ESC", "esc \x1b\x01 end\x1b", "esc ^[^A end^["},
	{"ESC ESC", "\x1b\x1b[31mred", "^[red"},
	{"CSI cut by a control", "\x1b[31\x07m", "^Gm"},
	{"bell, backspace, DEL, NUL", "ding\x07 over\x08\x08 del\x7f nul\x00", "ding^G over^H^H del^? nul^@"},
	{"CRLF", "one\r\ntwo\r\n", "one\ntwo\n"},
	{"lone CR overwrites no more", "rm -rf /\rls -l\n", "rm -rf /^Mls -l\n"},
	{"C1 controls", "a\u009b31mred\u009d0;t\u0007 \u0085", "a\\u009b31mred\\u009d0;t^G \\u0085"},
	{"0xC2 of a character stays", "\u00a0\u00b7\u00e9\u00c2", "\u00a0\u00b7\u00e9\u00c2"},
	{"invalid UTF-8 as it is, but 0xC2", "\xff\xfe \xc2x \xc2", "\xff\xfe \ufffdx \ufffd"},
	{"0xC2 and a C1 byte apart", "\xc2\x1b[0m\x9b", "\ufffd\x9b"},
}

func filterAll(chunks ...string) string {
	var f terminalFilter
	var out []byte
	for _, c := range chunks {
		out = append(out, f.Filter([]byte(c))...)
	}
	return string(append(out, f.End()...))
}

func TestTerminalFilter(t *testing.T) {
	for _, tc := range terminalCases {
		if got := filterAll(tc.in); got != tc.want {
			t.Errorf("%s: %q\n got %q\nwant %q", tc.name, tc.in, got, tc.want)
		}
		if got := terminalText(tc.in); got != tc.want {
			t.Errorf("%s: terminalText(%q) = %q", tc.name, tc.in, got)
		}
		// Cut in two and three anywhere: a sequence split across
		// chunks is removed whole.
		for i := 0; i <= len(tc.in); i++ {
			for j := i; j <= len(tc.in); j++ {
				if got := filterAll(tc.in[:i], tc.in[i:j], tc.in[j:]); got != tc.want {
					t.Fatalf("%s: cut at %d and %d of %q\n got %q\nwant %q", tc.name, i, j, tc.in, got, tc.want)
				}
			}
		}
	}
	// A chunk that needs nothing is passed as it is.
	var f terminalFilter
	chunk := []byte("plain output line\n")
	if got := f.Filter(chunk); &got[0] != &chunk[0] {
		t.Error("a clean chunk was copied")
	}
}

// Random texts of escape sequences, controls and text, cut at random: no
// ESC, no C1 control, no control other than a line feed or a tab comes
// out, and the cuts do not change the result.
func TestTerminalFilterRandom(t *testing.T) {
	pieces := []string{"\x1b", "[", "]", "31", ";", "m", "0", "\x07", "\\", "P", "text", " ", "\n", "\t", "\r", "\x08",
		"\xc2", "\x9b", "\x85", "é", "·", "\x7f", "(", "B", "#", "c", "_", "^", "X", "\x00"}
	unsafe := regexp.MustCompile("[\x00-\x08\x0b-\x1f\x7f]|\u0080|\u0085|\u009b|\u009d")
	rnd := rand.New(rand.NewPCG(4, 4))
	for iter := range 5000 {
		var b strings.Builder
		for range rnd.IntN(40) {
			b.WriteString(pieces[rnd.IntN(len(pieces))])
		}
		text := b.String()
		want := filterAll(text)
		if loc := unsafe.FindStringIndex(want); loc != nil {
			t.Fatalf("iteration %d: %q gave %q, with %q at %d", iter, text, want, want[loc[0]:loc[1]], loc[0])
		}
		var chunks []string
		for rest := text; len(rest) > 0; {
			n := min(len(rest), rnd.IntN(6))
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		if got := filterAll(chunks...); got != want {
			t.Fatalf("iteration %d: %q in chunks %q\n got %q\nwant %q", iter, text, chunks, got, want)
		}
	}
}

// nextTermSpecial looks at eight bytes at a time: it finds what a byte by
// byte look finds, wherever the byte is.
func TestNextTermSpecial(t *testing.T) {
	rnd := rand.New(rand.NewPCG(6, 6))
	for range 20000 {
		b := make([]byte, rnd.IntN(40))
		for i := range b {
			b[i] = "abc \n\txyz0é€·"[rnd.IntN(17)]
		}
		if len(b) > 0 && rnd.IntN(2) == 0 {
			b[rnd.IntN(len(b))] = byte(rnd.IntN(256))
		}
		want := len(b)
		for i := 0; i < len(b); i++ {
			if i+1 < len(b) && b[i] == 0xc2 && b[i+1] >= 0xa0 && b[i+1] <= 0xbf {
				i++ // "·": a character, not a C1 control
				continue
			}
			if termSpecial[b[i]] {
				want = i
				break
			}
		}
		if got := nextTermSpecial(b); got != want {
			t.Fatalf("nextTermSpecial(%q) = %d, want %d", b, got, want)
		}
	}
}

func TestTerminalLine(t *testing.T) {
	if got, want := terminalLine("fix the tests\nthen\tthe docs\x1b[2J"), `fix the tests\nthen the docs`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestJSONOutputEscapesDELAndC1(t *testing.T) {
	var b bytes.Buffer
	value := "a\x7fb\u009bc\u0085d\x1b[31m é·"
	if err := writeJSON(&b, map[string]string{"note": value}); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(b.String(), "\x7f\u009b\u0085\x1b") {
		t.Errorf("raw controls in %q", b.String())
	}
	var back map[string]string
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back["note"] != value {
		t.Errorf("JSON %q reads back as %q (%v)", b.String(), back["note"], err)
	}
}

// The views' own escape sequences, which the text they show is wrapped in.
var viewSequences = regexp.MustCompile(`\x1b\[(\d+A\x1b\[J|[012]m)`)

// stepOutput is what a step might print: colours, a title, a screen clear,
// a reset, a line overwritten by a carriage return, and a secret split by
// a colour.
const stepOutput = "\x1b[32mok\x1b[0m build\n\x1b]0;owned\x07title\n\x1b[2J\x1b[Hcleared\nreset\x1bc!\nsafe\roverwritten\r\nkey abc123\x1b[1mxyz789secret\x1b[0m end\n"

func TestPlainViewMakesTextSafe(t *testing.T) {
	var out bytes.Buffer
	v := NewPlainView(&out, func() time.Time { return time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC) })
	r := redact.New([]string{"MY_API_KEY=abc123xyz789secret"})
	withRedactor(v, r)
	info := local.StepInfo{Phase: "impl\x1b[2J", Phases: 1, Step: "test", Attempt: 1, What: "run: deploy --key abc123xyz789secret\x1b]0;t\x07"}
	v.StepStarted(info)
	for i := 0; i < len(stepOutput); i += 5 { // sequences cut across chunks
		v.Output([]byte(stepOutput[i:min(i+5, len(stepOutput))]))
	}
	v.StepFinished(info, engine.StepResult{ExitCode: 0})
	v.Say("paused: %s — %s", "checkpoint", "note \x1b]52;c;Zm9v\x07with\x1b[31m colour\nand a line")
	v.Close()
	got := out.String()
	if strings.ContainsAny(got, "\x1b\x07") {
		t.Errorf("a raw escape sequence in plain output:\n%q", got)
	}
	for _, want := range []string{
		"09:00:00 == phase 1/1 impl · step test · attempt 1 · run: deploy --key [REDACTED:MY_API_KEY]\n",
		"09:00:00 | ok build\n", "09:00:00 | title\n", "09:00:00 | cleared\n", "09:00:00 | reset!\n",
		"09:00:00 | safe^Moverwritten\n", "09:00:00 | key [REDACTED:MY_API_KEY] end\n",
		`09:00:00 paused: checkpoint — note with colour\nand a line` + "\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
}

func TestLiveViewMakesTextSafe(t *testing.T) {
	var out bytes.Buffer
	v := NewLiveView(&out, 200, true)
	withRedactor(v, redact.New([]string{"MY_API_KEY=abc123xyz789secret"}))
	info := local.StepInfo{Phase: "impl", Phases: 1, Step: "agent\x1b[2J", Attempt: 1, What: "agent command"}
	v.StepStarted(info)
	for i := 0; i < len(stepOutput); i += 7 {
		v.Output([]byte(stepOutput[i:min(i+7, len(stepOutput))]))
	}
	v.Progress(local.Progress{Elapsed: time.Second})
	v.Say("paused: checkpoint — %s", "note \x1b]0;t\x07\x1b[31mred")
	v.StepFinished(info, engine.StepResult{ExitCode: 1})
	v.Close()
	got := out.String()
	if rest := viewSequences.ReplaceAllString(got, ""); strings.ContainsAny(rest, "\x1b\x07") {
		t.Errorf("an escape sequence of the step's reached the terminal:\n%q", rest)
	}
	for _, want := range []string{"ok build", "cleared", "reset!", "safe^Moverwritten\x1b", "key [REDACTED:MY_API_KEY] end",
		"paused: checkpoint — note red\n", "step agent exited 1"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%q", want, got)
		}
	}
	if strings.Contains(got, "xyz789secret") {
		t.Errorf("the secret split by a colour is shown whole: %q", got)
	}
}

func TestPrintStatusMakesTextSafe(t *testing.T) {
	var out bytes.Buffer
	r := engine.StatusReport{ID: "s1", Pipeline: "p\x1b]0;t\x07", Status: "paused", PauseReason: "checkpoint",
		PauseNote: "look \x1b[2Jhere\nnow", Phase: "design", Step: "agent", Attempt: 1,
		Phases: []engine.PhaseReport{{Name: "design", Status: "paused", Notes: []string{"human \x1b[31mnote\x1b[0m"}}}}
	if err := printStatus(&out, liveStatus{StatusReport: r}, true); err != nil {
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

// BenchmarkTerminalFilter: the plain view filters every byte of a step's
// output; here log lines of 100 bytes, and lines with a tab and a "·".
func BenchmarkTerminalFilter(b *testing.B) {
	for _, format := range []string{
		"2026-11-26T04:26:15.%03dZ INFO [worker] job %08x done, 45%% of disk used, 12 keys cached, status ok\n",
		"2026-11-26T04:26:15.%03dZ INFO [worker] job %08x done · 45%% of disk, 12 keys\tok\n",
	} {
		var data bytes.Buffer
		for data.Len() < 16<<20 {
			fmt.Fprintf(&data, format, data.Len()%1000, data.Len())
		}
		name := "log"
		if strings.Contains(format, "\t") {
			name = "tab-and-middle-dot"
		}
		b.Run(name, func(b *testing.B) {
			var f terminalFilter
			b.SetBytes(int64(data.Len()))
			for b.Loop() {
				for p := data.Bytes(); len(p) > 0; {
					k := min(256<<10, len(p))
					if out := f.Filter(p[:k]); !sameBytes(out, p[:k]) {
						b.Fatal("the text was changed")
					}
					p = p[k:]
				}
			}
		})
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
	cmd := exec.Command(binary, "run")
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

// logs filters what it prints to a terminal, and only there: a file or a
// pipe gets the transcript's bytes.
func TestTerminalOutputOnlyOnATerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	w := terminalOutput(tty)
	if _, ok := w.(*terminalWriter); !ok {
		t.Fatalf("on a terminal: %T", w)
	}
	var b bytes.Buffer
	w = &terminalWriter{w: &b}
	for _, chunk := range []string{"red \x1b[3", "1mtext\x1b", "]0;title\x07 done\n"} {
		if n, err := w.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write: %d, %v", n, err)
		}
	}
	if b.String() != "red text done\n" {
		t.Errorf("got %q", b.String())
	}
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if w := terminalOutput(file); w != io.Writer(file) {
		t.Errorf("a file is filtered: %T", w)
	}
}
