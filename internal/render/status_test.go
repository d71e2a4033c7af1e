package render

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
)

// pausedAfterFirst is the report of a session of n phases paused after
// its first.
func pausedAfterFirst(n int) app.StatusResponse {
	r := engine.StatusReport{Status: "paused", Phase: "p1"}
	for i := range n {
		p := engine.PhaseReport{Name: fmt.Sprintf("p%d", i), Status: "pending"}
		if i == 0 {
			p.Status, p.Attempts = "completed", 1
		}
		r.Phases = append(r.Phases, p)
	}
	return app.StatusResponse{StatusReport: r}
}

func TestStatusHistoryCountsALongPendingTailInALine(t *testing.T) {
	for _, c := range []struct {
		phases, rows int
		line         string
	}{
		{3, 3, ""},
		{21, 21, ""},
		{22, 4, "… 18 more phases pending, p4 to p21 (status -o json lists every phase)\n"},
		{1000, 4, "… 996 more phases pending, p4 to p999 (status -o json lists every phase)\n"},
	} {
		var b bytes.Buffer
		if err := Status(&b, pausedAfterFirst(c.phases), true); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if rows := strings.Count(out, " pending ") + strings.Count(out, " completed "); rows != c.rows {
			t.Errorf("%d phases: %d rows, want %d:\n%s", c.phases, rows, c.rows, out)
		}
		if got := strings.Contains(out, "more phases pending"); got != (c.line != "") || c.line != "" && !strings.Contains(out, c.line) {
			t.Errorf("%d phases: want the line %q in:\n%s", c.phases, c.line, out)
		}
	}
}
