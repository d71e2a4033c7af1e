package temporal_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/temporal"
)

// A plan's source read by a relative path holds absolute ones, and the
// workflow makes the same plan of it from any working directory: a
// worker's is not the client's.
func TestPlanSourceLoadsTheSameFromAnyFolder(t *testing.T) {
	project := filepath.Join(t.TempDir(), "shop")
	if err := os.MkdirAll(filepath.Join(project, "specs"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"phases.yaml": "version: 1\nspec: specs/a.md\nphases:\n  - name: build\n    steps: [{run: make}]\n",
		"specs/a.md":  "---\nstatus: planned\n---\n# A\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(project, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(project)
	src, err := temporal.ReadPlanSource("phases.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(src.File) || !filepath.IsAbs(src.Spec) {
		t.Fatalf("the source names %s and %s: want absolute paths", src.File, src.Spec)
	}
	want, err := spec.Load("phases.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	plan, err := src.Load()
	if err != nil {
		t.Fatal(err)
	}
	if plan.Name.Value != "shop" || plan.Digest != want.Digest || plan.Spec != src.Spec {
		t.Errorf("loaded elsewhere: %q, digest %s, spec %s; want shop, %s, %s",
			plan.Name.Value, plan.Digest, plan.Spec, want.Digest, src.Spec)
	}
}

// A worker parses a session's plan once: a second Load of the same
// source is the plan the first made; a source that differs in any field
// is parsed on its own, and one that does not parse to its digest is
// refused each time, never remembered.
func TestPlanSourceIsParsedOncePerSource(t *testing.T) {
	src := temporal.PlanSource{File: "/work/shop/phases.yaml",
		YAML: []byte("version: 1\nphases:\n  - name: build\n    steps: [{run: make}]\n")}
	first, err := src.Load()
	if err != nil {
		t.Fatal(err)
	}
	again, err := src.Load()
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Error("the same source was parsed again")
	}
	src.Digest = first.Digest
	withDigest, err := src.Load()
	if err != nil {
		t.Fatal(err)
	}
	other := src
	other.File = "/work/shop2/phases.yaml"
	other.Digest = ""
	moved, err := other.Load()
	if err != nil {
		t.Fatal(err)
	}
	if withDigest == first || moved == first || moved.File != other.File || moved.Name.Value != "shop2" {
		t.Errorf("sources that differ share a plan: %p %p %p (file %s, name %s)", first, withDigest, moved, moved.File, moved.Name.Value)
	}
	wrong := src
	wrong.Digest = "0000"
	for range 2 {
		if plan, err := wrong.Load(); err == nil {
			t.Fatalf("a source that parses to digest %s, not %s, was taken: %p", plan.Digest, wrong.Digest, plan)
		}
	}
}
