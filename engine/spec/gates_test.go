package spec_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

// --no-human-gates runs a copy of the plan whose phases all advance by
// themselves; the plan loaded from the files is left as it was, and the
// copy names another plan, the same for the same files.
func TestWithoutHumanGates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "phases.yaml")
	content := "version: 1\nagent: {kind: claude}\nphases:\n  - name: design\n    auto_advance: false\n  - name: build\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Load(path, "")
	if err != nil {
		t.Fatal(err)
	}
	open := plan.WithoutHumanGates()
	if plan.Phases[0].AutoAdvance.Value || plan.Phases[0].AutoAdvance.From.Line != 5 {
		t.Errorf("the loaded plan changed: %+v", plan.Phases[0].AutoAdvance)
	}
	if got := open.Phases[0].AutoAdvance; !got.Value || got.From.Layer != spec.LayerFlag || got.From.String() != "command-line flag" {
		t.Errorf("design's auto_advance without human gates: %+v", got)
	}
	if got := open.Phases[1].AutoAdvance; !got.Value || got.From.Layer != spec.LayerDefault {
		t.Errorf("build's auto_advance, true already, should keep its origin: %+v", got)
	}
	if open.Digest == plan.Digest || len(open.Digest) != 64 {
		t.Errorf("digest without human gates %q, of the files %q: want another plan's", open.Digest, plan.Digest)
	}
	again, err := spec.Load(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if again.WithoutHumanGates().Digest != open.Digest {
		t.Errorf("the same files and flag name another plan")
	}
}

// A replay's --model replaces the model of every agent step, and its
// --agent the kind, from scratch but for the feature; the plan loaded
// is left as it was, and the copy names another plan.
func TestReplayPlanWithAgent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "phases.yaml")
	content := "version: 1\nagent: {kind: claude, model: sonnet, args: [--verbose], feature: f}\nphases:\n  - name: design\n  - name: build\n    steps: [{agent: {model: opus}}, {name: test, run: 'true'}]\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Load(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if plan.WithAgent("", "") != plan {
		t.Error("no change is not the same plan")
	}
	haiku := plan.WithAgent("", "haiku")
	for _, p := range haiku.Phases {
		if a := p.Steps[0].Agent.Value; a.Kind != "claude" || a.Model != "haiku" || len(a.Args) != 1 {
			t.Errorf("--model haiku: phase %s runs %+v", p.Name, a)
		}
	}
	if plan.Phases[1].Steps[0].Agent.Value.Model != "opus" || haiku.Digest == plan.Digest || plan.WithAgent("", "haiku").Digest != haiku.Digest {
		t.Errorf("the loaded plan changed (%s), or the digests are not told apart", plan.Phases[1].Steps[0].Agent.Value.Model)
	}
	gemini := plan.WithAgent("gemini", "")
	if a := gemini.Phases[1].Steps[0].Agent.Value; a.Kind != "gemini" || a.Model != "" || a.Args != nil || a.Feature != "f" {
		t.Errorf("--agent gemini: %+v, want gemini with the feature alone", a)
	}
	if gemini.Phases[1].Steps[1].Agent != nil {
		t.Error("a run step got an agent")
	}
}
