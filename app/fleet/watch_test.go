//go:build temporal

package fleet

import (
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/engine/temporal"
)

// What a resume by the watch tells the agent of a change: nothing when
// the files are as the session had them; the spec's diff when the spec
// changed; that phases.yaml changed when only it did.
func TestChangeNotes(t *testing.T) {
	old := temporal.PlanSource{File: "/p/phases.yaml", YAML: []byte("version: 1\n"), Spec: "/p/spec.md", SpecText: []byte("# Client\n\nCall the endpoint.\n")}
	if notes, changed := changeNotes(old, old); changed || notes != "" {
		t.Fatalf("unchanged files: %q, %v", notes, changed)
	}
	spec := old
	spec.SpecText = []byte("# Client\n\nCall the endpoint v2.\n")
	notes, changed := changeNotes(old, spec)
	if !changed || !strings.Contains(notes, "The spec changed while the session was paused") || !strings.Contains(notes, "+Call the endpoint v2.") {
		t.Fatalf("a spec edit: %q, %v", notes, changed)
	}
	yaml := old
	yaml.YAML = []byte("version: 1\n# edited\n")
	if notes, changed := changeNotes(old, yaml); !changed || notes != "phases.yaml changed while the session was paused." {
		t.Fatalf("a phases.yaml edit: %q, %v", notes, changed)
	}
}
