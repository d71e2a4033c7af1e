package steps

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// markerLog keeps the markers a step reports, and hands each on as it
// comes.
type markerLog struct {
	mu   sync.Mutex
	list []Marker
	each chan Marker
}

func newMarkerLog() *markerLog { return &markerLog{each: make(chan Marker, 100)} }

func (l *markerLog) add(m Marker) {
	l.mu.Lock()
	l.list = append(l.list, m)
	l.mu.Unlock()
	select {
	case l.each <- m:
	default:
	}
}

func (l *markerLog) markers() []Marker {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.list)
}

// commandStep is a command agent's step, as the driver makes it.
func commandStep(t *testing.T, script string) Step {
	t.Helper()
	turn, err := commandAdapter{}.Prepare(Request{Kind: "command", Command: []string{"sh", "-c", script}})
	if err != nil {
		t.Fatal(err)
	}
	return Step{Command: Command{Args: turn.Args}, Parser: turn.Parser, CountTokens: true, Grace: 5 * time.Second}
}

// A command agent (plain output, standard output and error in one pipe):
// its markers in order, once each, one of them written in two pieces a
// moment apart, the last line unended.
func TestCommandAgentMarkers(t *testing.T) {
	script := `echo 'Working. Print [TODO] lines for open tasks.'
echo '- [DECISION] keep the scanner in steps'
printf '[FA'; sleep 0.2; printf 'CT] split across writes\n'
echo '[TODO] on standard error' >&2
echo '  1. **[DONE]** the scanner'
printf '[SUMMARY] the last line, unended'`
	log := newMarkerLog()
	step := commandStep(t, script)
	step.Markers = log.add
	res := execute(t, context.Background(), step, newRecorder())
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, res.Output)
	}
	want := []Marker{{MarkerDecision, "keep the scanner in steps"}, {MarkerFact, "split across writes"},
		{MarkerTodo, "on standard error"}, {MarkerDone, "the scanner"}, {MarkerSummary, "the last line, unended"}}
	if got := log.markers(); !slices.Equal(got, want) {
		t.Errorf("markers %q, want %q", got, want)
	}
}

// A marker is reported as its line ends, while the step runs on.
func TestMarkerReportedWhileTheStepRuns(t *testing.T) {
	log := newMarkerLog()
	step := commandStep(t, `echo '[TODO] now'; exec sleep 30`)
	step.Markers = log.add
	obs := newRecorder()
	done := make(chan Result, 1)
	go func() { done <- execute(t, context.Background(), step, obs) }()
	select {
	case m := <-log.each:
		if m != (Marker{MarkerTodo, "now"}) {
			t.Errorf("marker %q", m)
		}
	case <-done:
		t.Fatal("the step ended before its marker was reported")
	case <-time.After(testwait.Failsafe):
		t.Fatal("no marker while the step runs")
	}
	obs.mu.Lock()
	running := obs.running
	obs.mu.Unlock()
	running.Stop(0)
	<-done
	if got := log.markers(); len(got) != 1 {
		t.Errorf("markers %q, want the one", got)
	}
}

// A parsed agent: markers from the text it wrote, assembled across text
// events; not from its standard error, nor from an error event, which
// ends the line it breaks.
func TestParsedAgentMarkers(t *testing.T) {
	script := `echo '[TODO] from the text'
echo '[TODO] on standard error' >&2
echo '=[DEC'
echo '=ISION] split across events'
echo ''
echo '=[FACT] broken by an error'
echo '![DONE] the error'
echo '= is not part of it'
echo ''
printf '=[SUMMARY] unended'`
	log := newMarkerLog()
	step := Step{Command: Command{Args: []string{"sh", "-c", script}}, Parser: deltaParser{}, Markers: log.add}
	res := execute(t, context.Background(), step, newRecorder())
	if res.ExitCode != 0 {
		t.Fatalf("exit %d", res.ExitCode)
	}
	want := []Marker{{MarkerTodo, "from the text"}, {MarkerDecision, "split across events"}, {MarkerFact, "broken by an error"},
		{MarkerSummary, "unended"}}
	if got := log.markers(); !slices.Equal(got, want) {
		t.Errorf("markers %q, want %q", got, want)
	}
}

// deltaParser reads a made-up stream: "=TEXT" is a delta of text (no line
// end added), "!TEXT" an error, any other line (an empty one too) a line
// of text.
type deltaParser struct{}

func (deltaParser) Line(line []byte) []Event {
	switch {
	case bytes.HasPrefix(line, []byte("=")):
		return []Event{{Kind: EventText, Text: string(line[1:])}}
	case bytes.HasPrefix(line, []byte("!")):
		return []Event{{Kind: EventError, Text: string(line[1:]) + "\n"}}
	}
	return []Event{{Kind: EventText, Text: string(line) + "\n"}}
}

// Markers come from the redacted output: a secret in a marker's line is
// never handed on.
func TestMarkersAreRedacted(t *testing.T) {
	log := newMarkerLog()
	step := commandStep(t, `echo '[FACT] the key is sk-secret-123'`)
	step.Markers = log.add
	step.Redact = func() RedactStream { return replaceStream{"sk-secret-123", "[REDACTED]"} }
	execute(t, context.Background(), step, newRecorder())
	if got, want := log.markers(), []Marker{{MarkerFact, "the key is [REDACTED]"}}; !slices.Equal(got, want) {
		t.Errorf("markers %q, want %q", got, want)
	}
}

// replaceStream redacts one string that never spans two chunks.
type replaceStream struct{ secret, with string }

func (r replaceStream) Write(chunk []byte) []byte {
	return bytes.ReplaceAll(chunk, []byte(r.secret), []byte(r.with))
}
func (replaceStream) Flush() []byte { return nil }

// Past MaxMarkers, markers are dropped with one warning.
func TestMarkersCappedWithOneWarning(t *testing.T) {
	log := &markerLog{each: make(chan Marker)}
	n := MaxMarkers + 50
	step := commandStep(t, fmt.Sprintf(`i=0; while [ $i -lt %d ]; do echo "[TODO] task $i"; i=$((i+1)); done`, n))
	step.Markers = log.add
	obs := newRecorder()
	res := execute(t, context.Background(), step, obs)
	got := log.markers()
	if len(got) != MaxMarkers || got[MaxMarkers-1].Text != fmt.Sprintf("task %d", MaxMarkers-1) {
		t.Fatalf("%d markers, last %q", len(got), got[len(got)-1])
	}
	obs.mu.Lock()
	warned := slices.Clone(obs.warned)
	obs.mu.Unlock()
	if len(warned) != 1 || !strings.Contains(warned[0], "more than 10000 working-set markers") {
		t.Errorf("warnings %q", warned)
	}
	if !strings.Contains(res.Output, "pipeline: the step printed more than 10000 working-set markers") {
		t.Errorf("no warning in the transcript")
	}
}
