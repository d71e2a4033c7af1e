package cireport

import (
	"bufio"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine/local"
)

// markerLog drives markers through a run of two phases (build: one step;
// review: two) and returns what they wrote.
func markerLog(m interface {
	Begin(*bufio.Writer)
	StepStarted(*bufio.Writer, local.StepInfo, string)
	StepFinished(*bufio.Writer)
	End(*bufio.Writer)
}) string {
	var b strings.Builder
	w := bufio.NewWriter(&b)
	m.Begin(w)
	for _, s := range []struct {
		phase int
		title string
	}{{0, "build: test"}, {1, "review: agent"}, {1, "review: lint 100%"}} {
		m.StepStarted(w, local.StepInfo{Phase: []string{"build", "review"}[s.phase], PhaseIndex: s.phase, Phases: 2}, s.title)
		w.WriteString("output\n")
		m.StepFinished(w)
	}
	m.End(w)
	w.Flush()
	return b.String()
}

// On GitHub, workflow commands are stopped everywhere but around the
// groups pipeline writes, and a title is escaped as a command's data.
func TestGitHubMarkersStopCommandsButTheirOwn(t *testing.T) {
	want := `::stop-commands::T
::T::
::group::build: test
::stop-commands::T
output
::T::
::endgroup::
::stop-commands::T
::T::
::group::review: agent
::stop-commands::T
output
::T::
::endgroup::
::stop-commands::T
::T::
::group::review: lint 100%25
::stop-commands::T
output
::T::
::endgroup::
::stop-commands::T
::T::
`
	if got := markerLog(&githubMarkers{token: "T"}); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// On GitLab, each phase is a section and each step a collapsed section
// inside it, all closed at the end.
func TestGitLabMarkersNestStepsInPhases(t *testing.T) {
	now := func() time.Time { return time.Unix(1700000000, 0) }
	want := strings.NewReplacer("E", "\x1b[0K", "R", "\r").Replace(`Esection_start:1700000000:pipeline_phase_1_1REphase 1/2 build
Esection_start:1700000000:pipeline_step_2[collapsed=true]REbuild: test
output
Esection_end:1700000000:pipeline_step_2RE
Esection_end:1700000000:pipeline_phase_1_1RE
Esection_start:1700000000:pipeline_phase_2_3REphase 2/2 review
Esection_start:1700000000:pipeline_step_4[collapsed=true]REreview: agent
output
Esection_end:1700000000:pipeline_step_4RE
Esection_start:1700000000:pipeline_step_5[collapsed=true]REreview: lint 100%
output
Esection_end:1700000000:pipeline_step_5RE
Esection_end:1700000000:pipeline_phase_2_3RE
`)
	if got := markerLog(&gitlabMarkers{now: now, phase: -1}); got != want {
		t.Errorf("got:\n%q\nwant:\n%q", got, want)
	}
}

// Elsewhere, and outside CI mode, there are no markers.
func TestNoLogMarkersOutsideGitHubAndGitLab(t *testing.T) {
	if m := NewLogMarkers(Settings{Enabled: true}, time.Now); m != nil {
		t.Errorf("markers on another CI: %T", m)
	}
	if _, ok := NewLogMarkers(Settings{Enabled: true, Platform: GitHub}, time.Now).(*githubMarkers); !ok {
		t.Error("no GitHub markers on GitHub Actions")
	}
	if _, ok := NewLogMarkers(Settings{Enabled: true, Platform: GitLab}, time.Now).(*gitlabMarkers); !ok {
		t.Error("no GitLab sections on GitLab CI")
	}
}
