package termview

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/internal/redact"
)

// The views' own escape sequences, which the text they show is wrapped in.
var viewSequences = regexp.MustCompile(`\x1b\[(\d+A\x1b\[J|[012]m)`)

// stepOutput is what a step might print: colours, a title, a screen clear,
// a reset, a line overwritten by a carriage return, and a secret split by
// a colour.
const stepOutput = "\x1b[32mok\x1b[0m build\n\x1b]0;owned\x07title\n\x1b[2J\x1b[Hcleared\nreset\x1bc!\nsafe\roverwritten\r\nkey abc123\x1b[1mxyz789secret\x1b[0m end\n"

func TestPlainMakesTextSafe(t *testing.T) {
	var out bytes.Buffer
	v := NewPlain(&out, func() time.Time { return time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC) })
	r := redact.New([]string{"MY_API_KEY=abc123xyz789secret"})
	WithRedactor(v, r)
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

// Each line of output gets its time once, at its start, however the
// output is cut into chunks: a line split across chunks, a chunk ending at
// a line's end, lines longer than the block the view gathers, a chunk of
// many lines; lines the filter passes as they are (a tab, a "·") and
// lines it changes (coloured) among them.
func TestPlainStampsEachLineOnceWhateverTheChunks(t *testing.T) {
	rnd := rand.New(rand.NewPCG(28, 28))
	var text, want strings.Builder
	for range 3000 {
		line := strings.Repeat(string(rune('a'+rnd.IntN(26))), rnd.IntN(200))
		if rnd.IntN(100) == 0 {
			line = strings.Repeat("long ", plainBlock/4)
		}
		shown := line
		switch rnd.IntN(10) {
		case 0:
			line = "\x1b[32m" + line + "\x1b[0m"
		case 1:
			line += " ·\tok"
			shown = line
		}
		text.WriteString(line + "\n")
		want.WriteString("09:00:00 | " + shown + "\n")
	}
	var out bytes.Buffer
	v := NewPlain(&out, func() time.Time { return time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC) })
	for rest := text.String(); len(rest) > 0; {
		n := min(len(rest), 1+rnd.IntN(3*plainBlock))
		v.Output([]byte(rest[:n]))
		rest = rest[n:]
	}
	v.Close()
	if got := out.String(); got != want.String() {
		t.Fatalf("the output differs from the lines stamped, first at byte %d of %d", firstDifference(got, want.String()), len(got))
	}
}

// firstDifference is where a and b first differ.
func firstDifference(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

func TestLiveMakesTextSafe(t *testing.T) {
	var out bytes.Buffer
	v := NewLive(&out, 200, true)
	WithRedactor(v, redact.New([]string{"MY_API_KEY=abc123xyz789secret"}))
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

func TestLiveWithoutColour(t *testing.T) {
	var out bytes.Buffer
	v := NewLive(&out, 80, false)
	info := local.StepInfo{Phase: "build", Phases: 1, Step: "test", Attempt: 1}
	v.StepStarted(info)
	v.Output([]byte("one\n"))
	v.Progress(local.Progress{Elapsed: time.Second})
	v.Stopping()
	v.StepFinished(info, engine.StepResult{ExitCode: 2})
	v.Close()
	got := out.String()
	if strings.Contains(got, "m") && regexp.MustCompile(`\x1b\[\d*m`).MatchString(got) {
		t.Errorf("colour without colour: %q", got)
	}
	for _, want := range []string{"stopping (Ctrl+C again to kill)", "  one\n[1/1 build] step test exited 2"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in %q", want, got)
		}
	}
}

// BenchmarkPlainView: the plain view (CI logs, pipes) filters and stamps
// every line of a step's output; here log lines of 100 bytes, plain and
// coloured (the filter changes every line, which is redacted again).
func BenchmarkPlainView(b *testing.B) {
	for _, format := range []string{
		"2026-11-26T04:26:15.%03dZ INFO [worker] job %08x done, 45%% of disk used, 12 keys cached, status ok\n",
		"2026-11-26T04:26:15.%03dZ \x1b[32mINFO\x1b[0m [worker] job %08x done, 45%% of disk used, 12 keys, ok\n",
	} {
		var data bytes.Buffer
		for data.Len() < 16<<20 {
			fmt.Fprintf(&data, format, data.Len()%1000, data.Len())
		}
		name := "log"
		if strings.Contains(format, "\x1b") {
			name = "coloured"
		}
		b.Run(name, func(b *testing.B) {
			at := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
			v := NewPlain(io.Discard, func() time.Time { return at })
			WithRedactor(v, redact.New([]string{"MY_API_KEY=abc123xyz789secret"}))
			b.SetBytes(int64(data.Len()))
			for b.Loop() {
				for p := data.Bytes(); len(p) > 0; {
					k := min(256<<10, len(p))
					v.Output(p[:k])
					p = p[k:]
				}
			}
			v.Close()
		})
	}
}

// recordingView keeps every call, in order.
type recordingView struct{ calls []string }

func (v *recordingView) StepStarted(info local.StepInfo) {
	v.calls = append(v.calls, "started "+info.Step)
}
func (v *recordingView) Output(chunk []byte) { v.calls = append(v.calls, "output "+string(chunk)) }
func (v *recordingView) Progress(p local.Progress) {
	v.calls = append(v.calls, fmt.Sprint("progress ", p.Tokens))
}
func (v *recordingView) StepFinished(info local.StepInfo, r engine.StepResult) {
	v.calls = append(v.calls, fmt.Sprint("finished ", info.Step, " ", r.ExitCode))
}
func (v *recordingView) Say(format string, args ...any) {
	v.calls = append(v.calls, "say "+fmt.Sprintf(format, args...))
}
func (v *recordingView) Close() error { v.calls = append(v.calls, "closed"); return nil }

// The queued view shows everything in the order it was given, copies
// output the caller reuses, formats Say at once, and Close shows what is
// still queued before it closes the view.
func TestQueuedKeepsOrderAndCopies(t *testing.T) {
	inner := &recordingView{}
	q := NewQueued(inner)
	buf := []byte("first chunk")
	q.StepStarted(local.StepInfo{Step: "build"})
	q.Output(buf)
	copy(buf, "XXXXX")
	args := []any{"a note"}
	q.Say("%s", args...)
	args[0] = "changed"
	for i := 0; i < 3*queuedChunks; i++ {
		q.Output([]byte(fmt.Sprint("chunk ", i)))
	}
	q.Progress(local.Progress{Tokens: 7})
	q.StepFinished(local.StepInfo{Step: "build"}, engine.StepResult{ExitCode: 3})
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{"started build", "output first chunk", "say a note"}
	for i := 0; i < 3*queuedChunks; i++ {
		want = append(want, fmt.Sprint("output chunk ", i))
	}
	want = append(want, "progress 7", "finished build 3", "closed")
	if got := strings.Join(inner.calls, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("calls:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

// Until a step prints something, the queued view writes in its caller
// and starts no goroutine (no queue made; a goroutine count would see
// the one of the test before, which may still be ending after its Close): a step's start and the engine's lines are shown
// when their call returns, from callers that may run at once (the race
// detector sees an unordered pair); the first chunk of output starts the
// goroutine, and what comes after it is shown after it.
func TestQueuedWritesInlineUntilTheFirstOutput(t *testing.T) {
	inner := &recordingView{}
	q := NewQueued(inner)
	q.StepStarted(local.StepInfo{Step: "build"})
	if len(inner.calls) != 1 || q.queued() {
		t.Fatalf("after StepStarted: calls %q, queue started %v; want it shown, none started", inner.calls, q.queued())
	}
	said := make(chan struct{})
	go func() {
		defer close(said)
		q.Say("from the loop")
	}()
	q.Progress(local.Progress{Tokens: 1})
	<-said
	if len(inner.calls) != 3 || q.queued() {
		t.Fatalf("after Say and Progress: calls %q, queue started %v; want both shown, none started", inner.calls, q.queued())
	}
	q.Output([]byte("printed"))
	if !q.queued() {
		t.Error("after the first output: no queue, want its goroutine started")
	}
	q.StepFinished(local.StepInfo{Step: "build"}, engine.StepResult{})
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(inner.calls[3:], "|"); got != "output printed|finished build 0|closed" {
		t.Errorf("after the output: %q, want it, then the step's end, then the close", got)
	}
}

// queued tells whether the view started its queue and its goroutine.
func (q *Queued) queued() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ops != nil
}

// bracketMarkers writes its markers as lines of their own.
type bracketMarkers struct{}

func (bracketMarkers) Begin(w *bufio.Writer) { w.WriteString("[begin]\n") }
func (bracketMarkers) StepStarted(w *bufio.Writer, info local.StepInfo, title string) {
	w.WriteString("[start " + title + "]\n")
}
func (bracketMarkers) StepFinished(w *bufio.Writer) { w.WriteString("[finish]\n") }
func (bracketMarkers) End(w *bufio.Writer)          { w.WriteString("[end]\n") }

// A CI system's markers go around each step, each at the start of a line,
// the step's title made safe; the last is written at Close.
func TestPlainWritesLogMarkersAroundEachStep(t *testing.T) {
	var out bytes.Buffer
	v := NewPlain(&out, func() time.Time { return time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC) }).WithMarks(bracketMarkers{})
	info := local.StepInfo{Phase: "build\x1b[2J", Phases: 2, Step: "test", Attempt: 1, What: "run: go test"}
	v.StepStarted(info)
	v.Output([]byte("ok\nno line feed"))
	v.StepFinished(info, engine.StepResult{ExitCode: 0, Elapsed: 2 * time.Second})
	v.Close()
	want := "[begin]\n" +
		"[start phase 1/2 build · step test · attempt 1]\n" +
		"09:00:00 == phase 1/2 build · step test · attempt 1 · run: go test\n" +
		"09:00:00 | ok\n09:00:00 | no line feed\n" +
		"[finish]\n" +
		"09:00:00 == step test exited 0 after 2s\n" +
		"[end]\n"
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}
