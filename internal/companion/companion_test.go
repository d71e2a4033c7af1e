package companion

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/internal/buildinfo"
	"github.com/pipeline-dev/pipeline/internal/render"
	"github.com/pipeline-dev/pipeline/steps"
)

var self = buildinfo.Info{Version: "v1.2.3", Revision: "abc", Go: "go1.24", Platform: "linux/amd64", Backends: []string{"local"}}

// fakeCompanion writes a program that answers version -o json with info
// (or with text that is no JSON when info is nil), and is found by Find.
func fakeCompanion(t *testing.T, info *buildinfo.Info) func() (string, []string) {
	t.Helper()
	answer := "not json"
	if info != nil {
		b, err := json.Marshal(info)
		if err != nil {
			t.Fatal(err)
		}
		answer = string(b)
	}
	path := filepath.Join(t.TempDir(), "pipeline-temporal")
	script := "#!/bin/sh\ncat <<'EOF'\n" + answer + "\nEOF\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return func() (string, []string) { return path, []string{path} }
}

func check(find func() (string, []string), needed bool) render.ProgramCheck {
	return Check(context.Background(), Checked{Name: "pipeline-temporal", Needed: needed, Self: self, Find: find})
}

// TestCheckFindsEachState: the companion is missing (where it looked,
// and how to build it), broken (no version, or no Temporal backend),
// of another build (a warning: OK) or of this build.
func TestCheckFindsEachState(t *testing.T) {
	missing := check(func() (string, []string) { return "", []string{"/opt/bin/pipeline-temporal", "PATH"} }, true)
	if missing.Status != steps.CheckMissing || missing.OK() || !strings.Contains(missing.Problem, "/opt/bin/pipeline-temporal, PATH") ||
		!strings.Contains(missing.Hint, "go build -tags temporal") {
		t.Errorf("missing: %+v", missing)
	}
	if c := check(fakeCompanion(t, nil), true); c.Status != steps.CheckBroken || !strings.Contains(c.Problem, "version -o json") {
		t.Errorf("no JSON version: %+v", c)
	}
	lean := self
	if c := check(fakeCompanion(t, &lean), true); c.Status != steps.CheckBroken || !strings.Contains(c.Problem, "has no Temporal backend") {
		t.Errorf("no Temporal backend: %+v", c)
	}
	full := self
	full.Backends = []string{"local", "temporal"}
	same := check(fakeCompanion(t, &full), true)
	if same.Status != steps.CheckOK || !same.OK() || !strings.HasSuffix(same.Version, "with the Temporal backend") || same.Path == "" {
		t.Errorf("same build: %+v", same)
	}
	other := full
	other.Revision = "def"
	if c := check(fakeCompanion(t, &other), true); c.Status != render.OtherVersion || !c.OK() || !strings.Contains(c.Problem, "this pipeline") {
		t.Errorf("other build: %+v", c)
	}
}

// TestCheckNotNeeded: a companion that is missing fails no doctor of a
// pipeline that runs here.
func TestCheckNotNeeded(t *testing.T) {
	c := check(func() (string, []string) { return "", []string{"PATH"} }, false)
	if c.Status != steps.CheckMissing || !c.OK() {
		t.Errorf("%+v", c)
	}
}

// TestCheckSelf: pipeline-temporal checks itself without running
// anything: its own path and version.
func TestCheckSelf(t *testing.T) {
	c := Check(context.Background(), Checked{Name: "pipeline-temporal", Needed: true, Self: self, IsSelf: true,
		Find: func() (string, []string) { t.Error("looked for itself"); return "", nil }})
	exe, _ := os.Executable()
	if c.Status != steps.CheckOK || c.Path != exe || c.Version != self.String() {
		t.Errorf("%+v", c)
	}
}
