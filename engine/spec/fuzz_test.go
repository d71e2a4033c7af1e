package spec_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

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
	seedFiles(f, "../../examples/*/phases.yaml", "../../app/starter/phases.yaml")
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
		// Aliases, tags and nesting: the shapes that once cost minutes.
		"version: 1\nagent: {kind: claude, args: &a [x, x]}\nphases:\n  - {name: p0, steps: &s [{agent: {args: *a}}, {agent: {args: *a}}]}\n  - {name: p1, steps: *s}\n",
		"version: 1\nphases: [[[[[[[[[[[[]]]]]]]]]]]]\n",
		"version: 1\nphases:\n- - - - - - x\n",
		"version: 1\nphases:\n  - &k name: a\n  - *k\n",
		"version: !!int 1\nphases: [{name: !include a.yaml}]\n",
		"version: 99999999999999999999\nphases: [{name: a, timeout: 999999999d, retry: {backoff: -10s}}]\n",
		"version: 1\nphases: [{name: a, pause_when: {x: tokens % 0 > 1}, done_when: 'int(\"x\") > 1'}]\n",
		"version: 1\nresume_context: {template: '{{range .Done}}{{.Phse}}{{end}}'}\nphases: [{name: a}]\n",
		"\ufeffversion: 1\nphases: [{name: a}]\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		withinBudget(t, "Parse and Resolve", inputAllocLimit, fuzzTimeLimit, func() {
			doc, err := spec.Parse("phases.yaml", content)
			checkProblems(t, err)
			if doc == nil {
				if err == nil {
					t.Fatal("no document and no error")
				}
				return
			}
			plan, resolveErr := spec.Resolve(doc, nil, testBase)
			checkProblems(t, resolveErr)
			if err == nil && resolveErr == nil && len(plan.Phases) == 0 {
				t.Fatal("a valid plan with no phases")
			}
		})
	})
}

// fuzzTimeLimit is the time one fuzz input may take, as the issue states
// it for any input; the fuzzer runs without the race detector.
const fuzzTimeLimit = 2 * time.Second

func FuzzParseSpec(f *testing.F) {
	seedFiles(f, "../../examples/*/spec.md", "../../examples/*/specs/*/README.md", "../../app/starter/spec.md")
	for _, seed := range []string{
		"# no frontmatter\n",
		"---\n",
		"---\nstatus: x\n",
		"---\nagent_phases: [{design: a}, backend]\n---\n",
		"---\nagent_phases: [{a: 1, b: 2}]\npipeline: {phases: [{name: x}]}\n---\n",
		"\ufeff---\r\ntags: [a]\r\n---\r\nbody\n",
		"---\npipeline: {defaults: {pause_when: {x: ~}}}\n...\n",
		// Aliases of aliases, the bomb's shape, small; anchors on keys,
		// merge keys, tags, nesting.
		"---\na: &a [x, x, x]\nb: &b [*a, *a, *a]\nc: &c [*b, *b, *b]\nd: [*c, *c]\n---\n",
		"---\ndefaults: &d {pause_when: {t: tokens > 1}}\npipeline: {defaults: *d, phases: [&p {name: build}, {name: x, steps: [{run: y}]}]}\n---\n",
		"---\nagent_phases: [&x {design: a}, *x]\n---\n",
		"---\n&k status: draft\nother: *k\n---\n",
		"---\nbase: &b {x: 1}\nmore: {<<: *b, y: 2}\n---\n",
		"---\nstatus: !secret draft\ntags: !!set {a, b}\n---\n",
		"---\ndeep: [[[[[[[[{a: [[[[]]]]}]]]]]]]]\n---\n",
		"---\ntags:\n- - - - - - x\n---\n",
	} {
		f.Add([]byte(seed))
	}
	doc, err := spec.Parse("phases.yaml", []byte("version: 1\nagent: {kind: claude}\nphases: [{name: design}, {name: review}]\n"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		withinBudget(t, "ParseSpec and Resolve", inputAllocLimit, fuzzTimeLimit, func() {
			fm, err := spec.ParseSpec("spec.md", content)
			checkProblems(t, err)
			if fm == nil {
				t.Fatal("no frontmatter value returned")
			}
			_, resolveErr := spec.Resolve(doc, fm, testBase)
			checkProblems(t, resolveErr)
		})
	})
}
