package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/termsafe"
	"github.com/pipeline-dev/pipeline/internal/termview"
)

// ---- CI mode ----
//
// A run in a CI job prints plain timestamped lines (never the live view,
// whatever its output is), and, on GitHub Actions or GitLab CI, puts each
// step in a collapsible group and says why the run stopped as an
// annotation that points at the trigger in phases.yaml. At the end it
// leaves a job summary and step outputs (GitHub) and a JUnit report
// (--junit) behind. See README.md, "CI".

// truthy tells whether an environment variable says yes: true, 1 or yes,
// in any case.
func truthy(value string) bool {
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "true", "1", "yes":
		return true
	}
	return false
}

// ciPlatform is the CI system whose log conventions a run follows.
type ciPlatform int

const (
	ciOther  ciPlatform = iota // any CI, or none: plain lines only
	ciGitHub                   // GITHUB_ACTIONS=true: workflow commands
	ciGitLab                   // GITLAB_CI=true: collapsible sections
)

// ciSettings is how a run shows itself in a CI job.
type ciSettings struct {
	// enabled is CI mode: plain lines, never the live view.
	enabled  bool
	platform ciPlatform
}

// ciMode decides CI mode, in this one place: --ci when it is given
// (--ci=false turns it off under CI=true), else the environment's CI.
// The platform is read only in CI mode.
func ciMode(flag *bool, getenv func(string) string) ciSettings {
	s := ciSettings{enabled: truthy(getenv("CI"))}
	if flag != nil {
		s.enabled = *flag
	}
	switch {
	case !s.enabled:
	case truthy(getenv("GITHUB_ACTIONS")):
		s.platform = ciGitHub
	case truthy(getenv("GITLAB_CI")):
		s.platform = ciGitLab
	}
	return s
}

// ciFlags are the flags run and resume share for CI jobs.
type ciFlags struct {
	cmd          *cobra.Command
	ci           bool
	junit        string
	failOnPause  bool
	noHumanGates bool
	// quiet and verbose: how much of the run is shown.
	quiet, verbose bool
}

func addCIFlags(cmd *cobra.Command) *ciFlags {
	f := &ciFlags{cmd: cmd}
	cmd.Flags().BoolVar(&f.ci, "ci", false, "CI mode: plain timestamped lines, groups and annotations on GitHub Actions and GitLab CI (default: on when CI is true, 1 or yes)")
	cmd.Flags().StringVar(&f.junit, "junit", "", "write a JUnit XML report to `FILE` at the end: one testcase per phase")
	cmd.Flags().BoolVar(&f.failOnPause, "fail-on-pause", false, "exit 1 rather than 3 when the session pauses (it stays paused and resumable)")
	cmd.Flags().BoolVar(&f.noHumanGates, "no-human-gates", false, "treat auto_advance: false as true for this run (no file changes)")
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "print only how the run ended (paused, completed or failed, and why)")
	cmd.Flags().BoolVarP(&f.verbose, "verbose", "v", false, "also print each trigger that fires, with the values it read")
	cmd.MarkFlagsMutuallyExclusive("quiet", "verbose")
	return f
}

// settings is the run's CI mode.
func (f *ciFlags) settings() ciSettings {
	var flag *bool
	if f.cmd.Flags().Changed("ci") {
		flag = &f.ci
	}
	return ciMode(flag, os.Getenv)
}

// launch sets a run's CI settings.
func (f *ciFlags) launch(l *launch) *launch {
	l.ci, l.junit, l.failOnPause = f.settings(), f.junit, f.failOnPause
	l.quiet, l.verbose = f.quiet, f.verbose
	return l
}

// refuseWithWatch refuses the flags that speak of how a run ends with run
// --watch, whose run goes on after a pause.
func (f *ciFlags) refuseWithWatch() error {
	for _, name := range []string{"junit", "fail-on-pause", "no-human-gates"} {
		if f.cmd.Flags().Changed(name) {
			return usagef("--%s cannot go with --watch: a watched run does not end at a pause (run it without --watch in CI)", name)
		}
	}
	return nil
}

// ---- Groups and sections ----

// newLogMarkers is the CI system's markers in a termview.Plain's lines:
// GitHub Actions' groups, GitLab CI's sections; nil elsewhere.
func newLogMarkers(s ciSettings, now func() time.Time) termview.LogMarkers {
	switch s.platform {
	case ciGitHub:
		return &githubMarkers{token: randomToken()}
	case ciGitLab:
		return &gitlabMarkers{now: now, phase: -1}
	}
	return nil
}

// randomToken is 128 random bits in hex.
func randomToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
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

// ---- Annotations ----

// stopPlace says where a run stopped: the phase, and the place in the
// files of the trigger or policy that stopped it (the phase's own place
// when that was a built-in default, or no trigger at all).
type stopPlace struct {
	phase int
	at    spec.Position
	what  string // "trigger review", "retry.escalate_when", …
}

// whereStopped finds the trigger that paused s, or the step that failed.
func whereStopped(plan *spec.Plan, s engine.State) stopPlace {
	p := stopPlace{phase: min(s.Phase, len(plan.Phases)-1)}
	if s.Status == engine.StatusPaused && s.Pause != nil && s.Pause.Reason == engine.ReasonPhaseComplete && p.phase > 0 &&
		s.Phase < len(s.Phases) && s.Phases[s.Phase].Status == "" {
		// The gate is the phase that completed; the state is at the next.
		p.phase--
	}
	if p.phase < 0 {
		return p
	}
	phase := &plan.Phases[p.phase]
	place := func(what string, from spec.Origin, at spec.Position) {
		if at.Line == 0 {
			at = from.Position
		}
		if from.Layer == spec.LayerDefault || from.Layer == spec.LayerFlag || at.Line == 0 {
			p.what, p.at = what+" (built-in), in phase "+phase.Name, phase.From.Position
			return
		}
		p.what, p.at = what, at
	}
	switch {
	case s.Status == engine.StatusFailed:
		if s.Step < len(phase.Steps) {
			place("step "+phase.Steps[s.Step].Name, phase.Steps[s.Step].From, spec.Position{})
		}
	case s.Pause == nil:
	case s.Pause.Reason == engine.ReasonNeedsHuman:
		when := phase.Retry.EscalateWhen
		var at spec.Position
		if when.Value != nil {
			at = when.Value.At
		}
		place("retry.escalate_when", when.From, at)
	case s.Pause.Reason == engine.ReasonPhaseComplete:
		place("auto_advance", phase.AutoAdvance.From, spec.Position{})
	default:
		for _, t := range phase.PauseWhen {
			if t.Name == s.Pause.Reason && t.Expr != nil && t.Expr.Source == s.Pause.Expression {
				place("pause_when."+t.Name, t.From, t.Expr.At)
				return p
			}
		}
	}
	if p.at.Line == 0 {
		p.at = phase.From.Position
	}
	return p
}

// annotation says why a run stopped, for the CI's log: a GitHub workflow
// command (an error, warning or notice on the run's page, at the place in
// phases.yaml), or elsewhere a marked line. Nothing for a completed run.
// annotation: resume is the command that continues the session.
func annotation(w io.Writer, ci ciSettings, plan *spec.Plan, s engine.State, resume string, failOnPause bool, text termview.ScreenText) {
	if s.Status != engine.StatusPaused && s.Status != engine.StatusFailed {
		return
	}
	place := whereStopped(plan, s)
	phaseName := ""
	if place.phase >= 0 {
		phaseName = plan.Phases[place.phase].Name
	}
	level := "error"
	var title, message string
	if s.Status == engine.StatusFailed {
		title = fmt.Sprintf("phase %s failed", phaseName)
		message = s.FailReason
	} else {
		title = fmt.Sprintf("paused in phase %s", phaseName)
		message = local.DescribeFiring(*s.Pause) + "; continue with: " + resume
		switch {
		case failOnPause:
			message += " (--fail-on-pause)"
		case s.Pause.Reason == engine.ReasonPhaseComplete || s.Pause.Reason == "checkpoint":
			level = "notice"
		default:
			level = "warning"
		}
	}
	if place.what != "" {
		message += " [" + place.what + "]"
	}
	message = text.Line(message)
	if runes := []rune(message); len(runes) > 4000 {
		message = string(runes[:4000]) + "…"
	}
	file := ciPath(place.at.File)
	if ci.platform == ciGitHub {
		props := "file=" + githubProperty(file)
		if place.at.Line > 0 {
			props += fmt.Sprintf(",line=%d,col=%d", place.at.Line, place.at.Column)
		}
		fmt.Fprintf(w, "::%s %s,title=%s::%s\n", level, props, githubProperty(text.Line("pipeline: "+title)), githubData(message))
		return
	}
	where := file
	if place.at.Line > 0 {
		where = fmt.Sprintf("%s:%d:%d", file, place.at.Line, place.at.Column)
	}
	// GitLab has no annotations: a line that stands out in the job log.
	label := fmt.Sprintf("[pipeline %s]", level)
	if ci.platform == ciGitLab && os.Getenv("NO_COLOR") == "" {
		colour := map[string]string{"error": "31", "warning": "33", "notice": "36"}[level]
		label = "\x1b[1;" + colour + "m" + label + "\x1b[0m"
	}
	fmt.Fprintf(w, "%s %s: %s: %s\n", label, text.Line(where), text.Line(title), message)
}

// ciPath is a file's path as a CI shows it: relative to the workspace
// (GITHUB_WORKSPACE, CI_PROJECT_DIR, or else the working folder) when it
// is inside it.
func ciPath(path string) string {
	if path == "" {
		return path
	}
	base := os.Getenv("GITHUB_WORKSPACE")
	if base == "" {
		base = os.Getenv("CI_PROJECT_DIR")
	}
	if base == "" {
		base, _ = os.Getwd()
	}
	abs, err := filepath.Abs(path)
	if err != nil || base == "" {
		return filepath.ToSlash(path)
	}
	if rel, err := filepath.Rel(base, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return filepath.ToSlash(rel)
	}
	return filepath.ToSlash(abs)
}

// ---- GitHub's environment files ----

// appendEnvFile appends content to the file an environment variable
// names, when it is set, in one write: GitHub gives each step such files
// ($GITHUB_STEP_SUMMARY, $GITHUB_OUTPUT) and other steps may have written
// to them. One that cannot be written is a warning: the run itself went
// as its exit status says.
func appendEnvFile(stderr io.Writer, variable string, content []byte) {
	path := os.Getenv(variable)
	if path == "" || len(content) == 0 {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		_, err = f.Write(content)
		if closeErr := f.Close(); err == nil {
			err = closeErr
		}
	}
	if err != nil {
		printError(stderr, fmt.Sprintf("pipeline: warning: $%s: %v\n", variable, err))
	}
}

// githubOutputs are the step outputs a run leaves in $GITHUB_OUTPUT:
// session_id, status, phase, pause_reason and pause_note (empty unless
// paused). A value from outside (a name, a reason, a note) is written in
// the delimiter form, name<<DELIMITER, whose delimiter is random and not
// in the value; it may hold line breaks.
func githubOutputs(r engine.StatusReport, text termview.ScreenText) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "session_id=%s\nstatus=%s\n", r.ID, r.Status)
	for _, kv := range [][2]string{{"phase", r.Phase}, {"pause_reason", r.PauseReason}, {"pause_note", r.PauseNote}} {
		value := termsafe.Text(text.Redactor.String(kv[1]))
		delimiter := "ghadelimiter_" + randomToken()
		for strings.Contains(value, delimiter) {
			delimiter = "ghadelimiter_" + randomToken()
		}
		fmt.Fprintf(&b, "%s<<%s\n%s\n%s\n", kv[0], delimiter, value, delimiter)
	}
	return []byte(b.String())
}
