package steps

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// Issue 12: every line of standard error came before every line of
// standard output. A plain step writes both into one pipe: the transcript
// and the view keep the order the step wrote them in.
func TestPlainStepKeepsTheOrderOfStdoutAndStderr(t *testing.T) {
	var transcript strings.Builder
	obs := newRecorder()
	script := `for i in 1 2 3 4 5; do echo "out $i"; echo "err $i" >&2; done`
	res, err := (&Executor{}).Execute(context.Background(),
		Step{Command: Command{Args: []string{"sh", "-c", script}}, Transcript: &transcript}, obs)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exit %d, %v", res.ExitCode, err)
	}
	want := "out 1\nerr 1\nout 2\nerr 2\nout 3\nerr 3\nout 4\nerr 4\nout 5\nerr 5\n"
	if transcript.String() != want {
		t.Errorf("transcript %q, want %q", transcript.String(), want)
	}
	if got := obs.output.String(); got != want {
		t.Errorf("view %q, want %q", got, want)
	}
}

// textParser takes every line of standard output as the agent's text.
type textParser struct{}

func (textParser) Line(line []byte) []Event {
	return []Event{{Kind: EventText, Text: string(line) + "\n"}}
}

// A parsed agent's standard error is read apart from its output: each of
// its lines is kept whole in the transcript, marked as standard error,
// however the two streams' pieces arrive.
func TestParsedAgentMarksItsStderrLinesWhole(t *testing.T) {
	var transcript strings.Builder
	script := `printf 'a warn' >&2; echo '{"n":1}'; printf 'ing\n' >&2; echo '{"n":2}'; printf 'no newline' >&2`
	res, err := (&Executor{}).Execute(context.Background(),
		Step{Command: Command{Args: []string{"sh", "-c", script}}, Parser: textParser{}, Transcript: &transcript}, newRecorder())
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exit %d, %v", res.ExitCode, err)
	}
	lines := strings.Split(strings.TrimSuffix(transcript.String(), "\n"), "\n")
	slices.Sort(lines)
	want := []string{`[stderr] a warning`, `[stderr] no newline`, `{"n":1}`, `{"n":2}`}
	if !slices.Equal(lines, want) {
		t.Errorf("transcript lines %q, want %q (in any order)", lines, want)
	}
	if i, j := strings.Index(transcript.String(), `{"n":1}`), strings.Index(transcript.String(), `{"n":2}`); i > j {
		t.Errorf("standard output out of order:\n%s", transcript.String())
	}
}
