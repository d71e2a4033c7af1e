//go:build agentclis

package steps

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/internal/mockapi"
)

// Working-set markers through each real agent CLI (installed by make
// test, in PIPELINE_AGENT_CLIS) against its vendor's mock, read by the
// executor as a step runs: each marker once, in order, one of them split
// across two deltas of the stream, none from the prompt (which holds a
// marker line of its own, and which Gemini CLI echoes), none from mid-line.

// markersPrompt mentions the markers as a prompt would, and holds a
// marker line that is the prompt's, not the agent's.
const markersPrompt = "Work on the plan. Print [DECISION], [FACT], [TODO], [DONE] and [SUMMARY] lines as you go.\n" +
	"[TODO] this line is the prompt's, not the agent's"

// markersReply is what the mock answers the task: "[DECISION]" and the
// text of "[TODO]" are cut in two deltas; the last line has no newline.
var markersReply = "Working on it.\n" +
	"[DECI" + mockapi.DeltaBreak + "SION] use the mock\n" +
	"- [FACT] the mock streams\n" +
	"**[TODO]** write the" + mockapi.DeltaBreak + " tests\n" +
	"This is not a [DONE] line.\n" +
	"[SUMMARY] all done"

var markersWant = []Marker{{MarkerDecision, "use the mock"}, {MarkerFact, "the mock streams"},
	{MarkerTodo, "write the tests"}, {MarkerSummary, "all done"}}

// markersReplyFunc answers the task with the markers, any other request
// (a CLI's own side calls) as the mock does by default.
func markersReplyFunc(prompt string) string {
	if strings.Contains(prompt, "Work on the plan.") {
		return markersReply
	}
	return ""
}

// runAgentMarkers runs one turn of an agent CLI through the executor and
// returns the markers it reported.
func runAgentMarkers(t *testing.T, kind, cli, dir string, env []string) ([]Marker, Result) {
	t.Helper()
	a, err := AdapterFor(kind)
	if err != nil {
		t.Fatal(err)
	}
	turn, err := a.Prepare(Request{Kind: kind, Prompt: markersPrompt, Dir: dir, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{cli}, turn.Args[1:]...)
	step := Step{Command: Command{Args: args, Dir: dir, Env: env}, Parser: turn.Parser, Grace: 5 * time.Second}
	if turn.Stdin != "" {
		step.Command.Stdin = strings.NewReader(turn.Stdin)
	}
	if checker, ok := a.(SessionChecker); ok {
		step.SessionChecker = checker
	}
	log := newMarkerLog()
	step.Markers = log.add
	res := execute(t, context.Background(), step, newRecorder())
	if res.ExitCode != 0 {
		t.Fatalf("%s: exit %d: %s", kind, res.ExitCode, res.Output)
	}
	return log.markers(), res
}

func TestClaudeMarkers(t *testing.T) {
	cli := claudeCLI(t)
	mock := mockapi.NewAnthropic()
	defer mock.Close()
	mock.SetReplyFunc(markersReplyFunc)
	got, res := runAgentMarkers(t, "claude", cli, t.TempDir(), claudeEnv(t.TempDir(), mock.URL))
	if !slices.Equal(got, markersWant) {
		t.Errorf("markers %q, want %q\n%s", got, markersWant, res.Output)
	}
	if !streamedInDeltas(t, res.Output, `[DECI"`) {
		t.Errorf("the reply did not stream in the deltas the test asked for:\n%s", res.Output)
	}
}

func TestGeminiMarkers(t *testing.T) {
	cli := geminiCLI(t)
	mock := mockapi.NewGemini()
	defer mock.Close()
	mock.SetReplyFunc(markersReplyFunc)
	home := t.TempDir()
	if err := mockapi.WriteGeminiHome(home); err != nil {
		t.Fatal(err)
	}
	got, res := runAgentMarkers(t, "gemini", cli, t.TempDir(), append(os.Environ(), mock.Env(home)...))
	if !slices.Equal(got, markersWant) {
		t.Errorf("markers %q, want %q\n%s", got, markersWant, res.Output)
	}
	// The CLI echoes the prompt, its marker line with it: not counted.
	if !streamedInDeltas(t, res.Output, `"role":"user","content":"Work on the plan.`) ||
		!streamedInDeltas(t, res.Output, `[DECI"`) {
		t.Errorf("the CLI no longer echoes the prompt, or did not stream the reply in the chunks the test asked for:\n%s", res.Output)
	}
}

func TestCodexMarkers(t *testing.T) {
	cli := codexCLI(t)
	mock := mockapi.NewOpenAI()
	defer mock.Close()
	mock.SetReplyFunc(markersReplyFunc)
	codexHomeDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(codexHomeDir, "config.toml"), []byte(mock.CodexConfig()), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "HOME="+t.TempDir(), "CODEX_HOME="+codexHomeDir, "MOCK_API_KEY=mock-key")
	got, res := runAgentMarkers(t, "codex", cli, t.TempDir(), env)
	if !slices.Equal(got, markersWant) {
		t.Errorf("markers %q, want %q\n%s", got, markersWant, res.Output)
	}
	// Codex puts the deltas together itself: its --json output has the
	// whole message.
	if turns := mock.Turns(); len(turns) != 1 || turns[0].Reply != strings.ReplaceAll(markersReply, mockapi.DeltaBreak, "") {
		t.Errorf("turns %d", len(turns))
	}
}

// streamedInDeltas reports whether the step's transcript (in res.Output,
// after the tail) holds want: `[DECI"` is a delta (a JSON string) that
// ends within the marker.
func streamedInDeltas(t *testing.T, output, want string) bool {
	t.Helper()
	_, transcript, _ := strings.Cut(output, "\n--- transcript\n")
	return strings.Contains(transcript, want)
}
