package cireport

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/redact"
	"github.com/pipeline-dev/pipeline/internal/termview"
)

const annotatedYAML = `version: 1
name: ci-demo
agent: {kind: command, command: [sh, ./review.sh]}
phases:
  - name: build
    steps:
      - name: test
        run: go test ./...
  - name: review
    pause_when:
      review: checkpoint
`

// at is where text stands in annotatedYAML, in the line that holds line.
func at(t *testing.T, line, text string) string {
	t.Helper()
	for i, l := range strings.Split(annotatedYAML, "\n") {
		if strings.Contains(l, line) {
			return fmt.Sprintf("%d:%d", i+1, strings.Index(l, text)+1)
		}
	}
	t.Fatalf("no %q", line)
	return ""
}

// An annotation says why a run stopped and points at what stopped it in
// phases.yaml: a trigger, a step, or the phase of a built-in policy; a
// GitHub workflow command on GitHub Actions, a marked line elsewhere.
func TestAnnotationPointsAtWhatStoppedTheRun(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GITHUB_WORKSPACE", dir)
	t.Setenv("NO_COLOR", "1")
	doc, err := spec.Parse(filepath.Join(dir, "phases.yaml"), []byte(annotatedYAML))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Resolve(doc, nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	review := func(reason, expression string) engine.State {
		return engine.State{Status: engine.StatusPaused, Phase: 1,
			Phases: []engine.PhaseRecord{{Name: "build", Status: engine.StatusCompleted}, {Name: "review"}},
			Pause:  &engine.Firing{Reason: reason, Expression: expression, Note: "look | here"}}
	}
	github, gitlab := Settings{Enabled: true, Platform: GitHub}, Settings{Enabled: true, Platform: GitLab}
	trigger, step, phase := strings.Split(at(t, "review: checkpoint", "checkpoint"), ":"), at(t, "- name: test", "name"), at(t, "- name: review", "name")
	for _, c := range []struct {
		ci          Settings
		state       engine.State
		failOnPause bool
		want        string
	}{
		{github, review("review", "checkpoint"), false, "::warning file=phases.yaml,line=" + trigger[0] + ",col=" + trigger[1] +
			",title=pipeline%3A paused in phase review::review (checkpoint): look | here; continue with: pipeline resume [pause_when.review]\n"},
		{github, review("review", "checkpoint"), true, "::error file=phases.yaml,line=" + trigger[0] + ",col=" + trigger[1] +
			",title=pipeline%3A paused in phase review::review (checkpoint): look | here; continue with: pipeline resume (--fail-on-pause) [pause_when.review]\n"},
		{gitlab, review(engine.ReasonNeedsHuman, "attempt > 3"), false, "[pipeline warning] phases.yaml:" + phase +
			": paused in phase review: needs-human (attempt > 3): look | here; continue with: pipeline resume [retry.escalate_when (built-in), in phase review]\n"},
		{Settings{Enabled: true}, engine.State{Status: engine.StatusFailed, Phase: 0, Step: 0, FailReason: "step test exited 1",
			Phases: []engine.PhaseRecord{{Name: "build", Status: engine.StatusFailed}, {Name: "review"}}}, false,
			"[pipeline error] phases.yaml:" + step + ": phase build failed: step test exited 1 [step test]\n"},
		{github, engine.State{Status: engine.StatusCompleted, Phase: 2}, false, ""},
	} {
		var b strings.Builder
		Annotation(&b, c.ci, plan, c.state, "pipeline resume", c.failOnPause, termview.ScreenText{Redactor: redact.New(nil)})
		if b.String() != c.want {
			t.Errorf("%v, %s:\n got %q\nwant %q", c.ci, c.state.Status, b.String(), c.want)
		}
	}
}
