package cireport

import (
	"bufio"
	"fmt"
	"strings"
	"time"

	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/internal/osrand"
	"github.com/pipeline-dev/pipeline/internal/termview"
)

// NewLogMarkers is the CI system's markers in a termview.Plain's lines:
// GitHub Actions' groups, GitLab CI's sections; nil elsewhere.
func NewLogMarkers(s Settings, now func() time.Time) termview.LogMarkers {
	switch s.Platform {
	case GitHub:
		return &githubMarkers{token: randomToken()}
	case GitLab:
		return &gitlabMarkers{now: now, phase: -1}
	}
	return nil
}

// randomToken is 128 random bits in hex.
func randomToken() string {
	return osrand.Hex(16)
}

// githubMarkers puts each step in a ::group:: and keeps every other
// workflow command out of the log.
//
// The GitHub runner obeys a workflow command in any line of a step's log:
// "::name::data" at the start of a line, and the older "##[name]data"
// anywhere in it (actions/runner, ActionCommand.TryParse). A step's
// output, a checkpoint note or an agent's error could so forge an error
// annotation, end a group, mask text or set an output. A prefix does not
// help against the second form, and escaping would change the text; so
// commands are stopped (::stop-commands::TOKEN, with a random token no
// step sees) for the whole run, and resumed only around the markers
// pipeline writes itself.
type githubMarkers struct {
	token   string
	stopped bool
	group   bool
}

func (g *githubMarkers) Begin(w *bufio.Writer) { g.stop(w) }

func (g *githubMarkers) stop(w *bufio.Writer) {
	fmt.Fprintf(w, "::stop-commands::%s\n", g.token)
	g.stopped = true
}

func (g *githubMarkers) resume(w *bufio.Writer) {
	if g.stopped {
		fmt.Fprintf(w, "::%s::\n", g.token)
		g.stopped = false
	}
}

func (g *githubMarkers) StepStarted(w *bufio.Writer, _ local.StepInfo, title string) {
	g.resume(w)
	if g.group {
		w.WriteString("::endgroup::\n")
	}
	fmt.Fprintf(w, "::group::%s\n", githubData(title))
	g.group = true
	g.stop(w)
}

func (g *githubMarkers) StepFinished(w *bufio.Writer) {
	if !g.group {
		return
	}
	g.resume(w)
	w.WriteString("::endgroup::\n")
	g.group = false
	g.stop(w)
}

func (g *githubMarkers) End(w *bufio.Writer) {
	g.resume(w)
	if g.group {
		w.WriteString("::endgroup::\n")
		g.group = false
	}
}

// gitlabMarkers puts each phase in a section and each step, collapsed, in
// a section inside it. A step cannot forge a section: GitLab reads one
// only where "\r\e[0K" follows its name, and the terminal filter removes
// a step's escape sequences and shows its carriage returns as ^M.
type gitlabMarkers struct {
	now   func() time.Time
	phase int // the index of the phase whose section is open, -1: none
	open  []string
	seq   int
}

func (g *gitlabMarkers) Begin(*bufio.Writer) {}

func (g *gitlabMarkers) start(w *bufio.Writer, name, options, header string) {
	fmt.Fprintf(w, "\x1b[0Ksection_start:%d:%s%s\r\x1b[0K%s\n", g.now().Unix(), name, options, header)
	g.open = append(g.open, name)
}

func (g *gitlabMarkers) close(w *bufio.Writer) {
	name := g.open[len(g.open)-1]
	g.open = g.open[:len(g.open)-1]
	fmt.Fprintf(w, "\x1b[0Ksection_end:%d:%s\r\x1b[0K\n", g.now().Unix(), name)
}

func (g *gitlabMarkers) StepStarted(w *bufio.Writer, info local.StepInfo, title string) {
	if info.PhaseIndex != g.phase {
		for len(g.open) > 0 {
			g.close(w)
		}
		g.phase = info.PhaseIndex
		g.seq++
		g.start(w, fmt.Sprintf("pipeline_phase_%d_%d", info.PhaseIndex+1, g.seq), "",
			fmt.Sprintf("phase %d/%d %s", info.PhaseIndex+1, info.Phases, info.Phase))
	}
	for len(g.open) > 1 {
		g.close(w)
	}
	g.seq++
	g.start(w, fmt.Sprintf("pipeline_step_%d", g.seq), "[collapsed=true]", title)
}

func (g *gitlabMarkers) StepFinished(w *bufio.Writer) {
	if len(g.open) > 1 {
		g.close(w)
	}
}

func (g *gitlabMarkers) End(w *bufio.Writer) {
	for len(g.open) > 0 {
		g.close(w)
	}
}

// githubData escapes the data of a workflow command.
func githubData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// githubProperty escapes the value of a workflow command's property.
func githubProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
