package termview

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
)

// lastDraw is the table's last block: what follows the last cursor move
// up, its line clears removed.
func lastDraw(out string) []string {
	if i := strings.LastIndex(out, "A\r"); i >= 0 {
		out = out[i+1:]
	}
	out = strings.ReplaceAll(out, "\r\x1b[2K", "")
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

// The table has a row per spec, redrawn in place: phase n of N, step,
// status, the elapsed time frozen at the end.
func TestTableShowsARowPerSession(t *testing.T) {
	var out bytes.Buffer
	now := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	table := NewTable(&out, 120, func() time.Time { return now })
	a, b := table.Row("specs/a/README.md"), table.Row("specs/b/README.md")
	table.Draw()
	if got := lastDraw(out.String()); len(got) != 3 || !strings.Contains(got[2], "waiting") {
		t.Fatalf("first draw: %q", got)
	}
	a.StepStarted(local.StepInfo{Phase: "build", PhaseIndex: 1, Phases: 3, Step: "compile", Attempt: 1})
	b.StepStarted(local.StepInfo{Phase: "design", PhaseIndex: 0, Phases: 2, Step: "agent", Attempt: 1})
	now = now.Add(3 * time.Second)
	b.StepFinished(local.StepInfo{}, engine.StepResult{ExitCode: 1})
	a.Finish("completed")
	now = now.Add(time.Minute)
	a.Progress(local.Progress{})
	got := lastDraw(out.String())
	if len(got) != 3 {
		t.Fatalf("the table is not redrawn in place: %q", out.String())
	}
	rowA := regexp.MustCompile(`^specs/a/README\.md\s+2/3 build\s+compile\s+completed\s+3s$`)
	rowB := regexp.MustCompile(`^specs/b/README\.md\s+1/2 design\s+agent\s+step failed\s+1m3s$`)
	if !rowA.MatchString(got[1]) || !rowB.MatchString(got[2]) {
		t.Errorf("rows:\n%s\n%s", got[1], got[2])
	}
	if n := strings.Count(out.String(), "\x1b[3A"); n < 4 {
		t.Errorf("the table moved up over its rows %d times, want one per redraw", n)
	}
}
