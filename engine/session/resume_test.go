package session

import (
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
)

// Issue 9: a resume_context.template that failed at run time gave an empty
// resume context, so the agent lost the human notes, and nobody was told.
// The built-in template takes over, and a warning says so.
func TestIssue9FailingResumeTemplateFallsBackWithAWarning(t *testing.T) {
	// index past the end of the list: the loader cannot know the length.
	doc, err := spec.Parse("phases.yaml", []byte("version: 1\nresume_context:\n  template: 'first change: {{index .FilesChanged 3}}'\n"+
		"phases: [{name: build, steps: [{run: make}]}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Resolve(doc, nil, "/project")
	if err != nil {
		t.Fatal(err)
	}
	state := engine.State{Phases: []engine.PhaseRecord{{Name: "build", Notes: []string{"keep the money type"}}},
		Pause: &engine.Firing{Reason: engine.ReasonHuman}}
	text, warning := ResumeContextWithWarning(plan, nil, nil)(state, engine.StartStep{Phase: 0, Step: 0, Attempt: 1})
	if !strings.Contains(text, "## Human notes") || !strings.Contains(text, "keep the money type") {
		t.Errorf("the resume context is\n%s\nwant the built-in one, with the human notes", text)
	}
	if !strings.HasPrefix(warning, "phases.yaml: resume_context.template failed (") || !strings.Contains(warning, "index out of range") ||
		!strings.HasSuffix(warning, "the built-in resume context is used instead") {
		t.Errorf("warning %q", warning)
	}
	if got := ResumeContextFor(plan, nil, nil)(state, engine.StartStep{Attempt: 1}); got != text {
		t.Errorf("ResumeContextFor gave %q, want the same text %q", got, text)
	}
}
