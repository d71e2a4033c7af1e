package termview

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
)

// Table shows several sessions running at once on a terminal, one row
// each (spec, phase n of N, step, status, elapsed), redrawn in place: the
// output of N steps at once would be unreadable, so a row says where its
// session is and the end of the run says how each ended.
type Table struct {
	mu    sync.Mutex
	w     io.Writer
	now   func() time.Time
	width int
	rows  []*TableRow
	// drawn is how many lines the last draw wrote, to move back over.
	drawn int
}

// TableRow is one session's row, and the view its driver talks to.
type TableRow struct {
	table   *Table
	spec    string
	phase   string
	index   int
	phases  int
	step    string
	status  string
	started time.Time
	elapsed time.Duration
	ended   bool
	// text redacts with the row's session's secrets (WithRedactor).
	text ScreenText
}

var _ local.View = (*TableRow)(nil)

// NewTable draws on w, a terminal width columns wide.
func NewTable(w io.Writer, width int, now func() time.Time) *Table {
	return &Table{w: w, now: now, width: width}
}

// Row adds a row for spec, waiting to start.
func (t *Table) Row(spec string) *TableRow {
	t.mu.Lock()
	defer t.mu.Unlock()
	row := &TableRow{table: t, spec: spec, status: "waiting", text: NewScreenText()}
	t.rows = append(t.rows, row)
	return row
}

// Draw redraws every row in place.
func (t *Table) Draw() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.drawLocked()
}

func (t *Table) drawLocked() {
	var b strings.Builder
	if t.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", t.drawn)
	}
	specWidth := len("SPEC")
	for _, r := range t.rows {
		specWidth = max(specWidth, len(r.spec))
	}
	lines := []string{fmt.Sprintf("%-*s  %-12s  %-16s  %-10s  %s", specWidth, "SPEC", "PHASE", "STEP", "STATUS", "ELAPSED")}
	for _, r := range t.rows {
		lines = append(lines, r.text.Line(r.line(specWidth, t.now())))
	}
	for _, line := range lines {
		if runes := []rune(line); t.width > 1 && len(runes) >= t.width {
			line = string(runes[:t.width-1]) // the last column left free: no wrap
		}
		b.WriteString("\r\x1b[2K" + line + "\n")
	}
	t.drawn = len(lines)
	io.WriteString(t.w, b.String())
}

// line is the row as the table shows it.
func (r *TableRow) line(specWidth int, now time.Time) string {
	phase := "-"
	if r.phases > 0 {
		phase = fmt.Sprintf("%d/%d %s", r.index+1, r.phases, r.phase)
	}
	step := r.step
	if step == "" {
		step = "-"
	}
	elapsed := r.elapsed
	if !r.ended && !r.started.IsZero() {
		elapsed = now.Sub(r.started)
	}
	return fmt.Sprintf("%-*s  %-12s  %-16s  %-10s  %s", specWidth, r.spec, phase, step, r.status, elapsed.Round(time.Second))
}

// update changes the row under the table's lock and redraws.
func (r *TableRow) update(change func()) {
	r.table.mu.Lock()
	defer r.table.mu.Unlock()
	change()
	r.table.drawLocked()
}

// StepStarted shows the step running.
func (r *TableRow) StepStarted(info local.StepInfo) {
	r.update(func() {
		if r.started.IsZero() {
			r.started = r.table.now()
		}
		r.phase, r.index, r.phases, r.step, r.status = info.Phase, info.PhaseIndex, info.Phases, info.Step, "running"
	})
}

// Output is not shown: the table has a row per session, not its lines.
func (r *TableRow) Output([]byte) {}

// Progress redraws, for the elapsed time.
func (r *TableRow) Progress(local.Progress) { r.update(func() {}) }

// StepFinished shows a step that did not exit 0.
func (r *TableRow) StepFinished(_ local.StepInfo, res engine.StepResult) {
	if res.ExitCode != 0 || res.Stopped || res.TimedOut {
		r.update(func() { r.status = "step failed" })
	}
}

// Say is not shown: the end of the run says how each session ended.
func (r *TableRow) Say(string, ...any) {}

// Close is the end of the driver's run; Finish says how it ended.
func (r *TableRow) Close() error { return nil }

// Finish shows how the row's session ended (completed, paused, failed).
func (r *TableRow) Finish(status string) {
	r.update(func() {
		r.status, r.ended = status, true
		if !r.started.IsZero() {
			r.elapsed = r.table.now().Sub(r.started)
		}
	})
}
