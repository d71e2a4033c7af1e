package spec_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

// seedFiles adds every example and starter file matching the globs to the
// fuzz corpus, so the fuzzers start from real inputs.
func seedFiles(f *testing.F, globs ...string) {
	f.Helper()
	for _, glob := range globs {
		paths, err := filepath.Glob(glob)
		if err != nil {
			f.Fatal(err)
		}
		for _, path := range paths {
			content, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(content)
		}
	}
}

// checkProblems fails when err is a *spec.Error whose problems do not each
// name a file, a line and a column.
func checkProblems(t *testing.T, err error) {
	var specErr *spec.Error
	if err == nil || !errors.As(err, &specErr) {
		return
	}
	if len(specErr.Problems) == 0 {
		t.Fatal("a *spec.Error with no problems")
	}
	for _, p := range specErr.Problems {
		if p.File == "" || p.Line < 1 || p.Column < 1 || p.Message == "" {
			t.Fatalf("problem without a place or a message: %+v", p)
		}
	}
}

func FuzzParsePipeline(f *testing.F) {
	seedFiles(f, "../../examples/*/phases.yaml", "../../cmd/pipeline/starter/phases.yaml")
	for _, seed := range []string{
		"",
		"version: 1\nphases: []\n",
		"version: 1\nphases:\n  - name: a\n    steps: [{run: x}, {run: y}]\n",
		"version: 1\nphases:\n  - name: a\n    done_when: steps.x.exit_code == 0\n",
		"version: 1\ndefaults:\n  pause_when:\n    t: |\n      tokens >\n        1 +\n",
		"version: 1\nphases:\n  - &p {name: a}\n  - *p\n",
		"version: 1\nphases: [{name: a, agent: {kind: command}}]\n",
		"a: [1, 2\n",
		"--- \n---\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		doc, err := spec.Parse("phases.yaml", content)
		checkProblems(t, err)
		if doc == nil {
			if err == nil {
				t.Fatal("no document and no error")
			}
			return
		}
		plan, resolveErr := spec.Resolve(doc, nil)
		checkProblems(t, resolveErr)
		if err == nil && resolveErr == nil && len(plan.Phases) == 0 {
			t.Fatal("a valid plan with no phases")
		}
	})
}

func FuzzParseSpec(f *testing.F) {
	seedFiles(f, "../../examples/*/spec.md", "../../examples/*/specs/*/README.md", "../../cmd/pipeline/starter/spec.md")
	for _, seed := range []string{
		"# no frontmatter\n",
		"---\n",
		"---\nstatus: x\n",
		"---\nagent_phases: [{design: a}, backend]\n---\n",
		"---\nagent_phases: [{a: 1, b: 2}]\npipeline: {phases: [{name: x}]}\n---\n",
		"\ufeff---\r\ntags: [a]\r\n---\r\nbody\n",
		"---\npipeline: {defaults: {pause_when: {x: ~}}}\n...\n",
	} {
		f.Add([]byte(seed))
	}
	doc, err := spec.Parse("phases.yaml", []byte("version: 1\nagent: {kind: claude}\nphases: [{name: design}, {name: review}]\n"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		fm, err := spec.ParseSpec("spec.md", content)
		checkProblems(t, err)
		if fm == nil {
			t.Fatal("no frontmatter value returned")
		}
		_, resolveErr := spec.Resolve(doc, fm)
		checkProblems(t, resolveErr)
	})
}
