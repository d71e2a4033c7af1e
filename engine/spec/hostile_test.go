package spec_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/triggers"
)

// The budget of one input, as the issue states it: refusing any file must
// cost less than this much memory. The time limit only catches a hang (a
// quadratic walk over a large input takes minutes); speed is measured by
// the benchmarks.
const (
	inputAllocLimit = 200 << 20
	inputHangLimit  = 30 * time.Second
)

// withinBudget runs load and fails the whole test binary (it cannot stop a
// runaway goroutine any other way) as soon as load has allocated more
// than limit bytes or run past deadline. Allocation is the runtime's
// count of heap bytes allocated, over the whole process: run it from tests
// that are not parallel, and from fuzz targets (one input at a time).
func withinBudget(t testing.TB, what string, limit uint64, deadline time.Duration, load func()) {
	t.Helper()
	before := heapAllocated()
	done := make(chan struct{})
	watchdogDone := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(watchdogDone)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			allocated, elapsed := heapAllocated()-before, time.Since(start)
			if allocated > limit || elapsed > deadline {
				panic(fmt.Sprintf("%s: allocated %d MB in %v, over the budget of %d MB and %v",
					what, allocated>>20, elapsed.Round(time.Millisecond), limit>>20, deadline))
			}
		}
	}()
	func() {
		// load may end its goroutine (t.Fatal): stop the watchdog anyway.
		defer func() {
			close(done)
			<-watchdogDone
		}()
		load()
	}()
	if allocated := heapAllocated() - before; allocated > limit {
		t.Fatalf("%s: allocated %d MB, over the budget of %d MB", what, allocated>>20, limit>>20)
	}
}

// heapAllocated is the bytes allocated on the heap since the process
// started; unlike runtime.ReadMemStats, reading it stops nothing.
func heapAllocated() uint64 {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// aliasBomb is nested lists of aliases, each level nine aliases of the
// one before: a few hundred bytes that stand for billions of values.
func aliasBomb(levels int) string {
	var b strings.Builder
	b.WriteString(`a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]` + "\n")
	for i := 1; i < levels; i++ {
		name, prev := string(rune('a'+i)), string(rune('a'+i-1))
		fmt.Fprintf(&b, "%s: &%s [%s]\n", name, name, strings.TrimSuffix(strings.Repeat("*"+prev+", ", 9), ", "))
	}
	return b.String()
}

// phasesBomb is a phases.yaml whose phases share, by alias, one list of
// 100 steps that share one list of 100 arguments: 40 KB for a thousand
// phases of a hundred steps of a hundred arguments.
func phasesBomb() string {
	var b strings.Builder
	b.WriteString("version: 1\nagent: {kind: claude, args: &a [" + strings.TrimSuffix(strings.Repeat("x, ", 100), ", ") + "]}\nphases:\n")
	b.WriteString("  - {name: p0, steps: &s [" + strings.TrimSuffix(strings.Repeat("{agent: {args: *a}}, ", 100), ", ") + "]}\n")
	for i := 1; i < 1000; i++ {
		fmt.Fprintf(&b, "  - {name: p%d, steps: *s}\n", i)
	}
	return b.String()
}

// nestedKeys is n mappings, each the value of the key of the one before,
// each indented one space more.
func nestedKeys(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%sk:\n", strings.Repeat(" ", i))
	}
	return b.String()
}

func phaseList(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - {name: p%d}\n", i)
	}
	return b.String()
}

func manyKeys(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "k%d: v\n", i)
	}
	return b.String()
}

// hostileCases are inputs made to cost a loader as much as possible: each
// must be refused with its line, within the budget above. They are rows of
// TestMalformedInputs too, with golden files.
var hostileCases = []malformedCase{
	{
		name: "alias bomb in frontmatter",
		yaml: specHeader,
		spec: "---\n" + aliasBomb(9) + "---\n# Title\n",
		// The first *e of f: the aliases counted so far (a..e) and it pass
		// 100000 values.
		wants: []malformedProblem{{file: "spec.md", line: 7, col: 8, msg: "the aliases of this file, up to *e here, expand to more than 100000 values"}},
	},
	{
		name: "alias bomb in phases",
		yaml: phasesBomb(),
		// The hundred *a of line 4 count 10100 values, each *s 10501.
		wants: []malformedProblem{{line: 13, col: 23, msg: "the aliases of this file, up to *s here, expand to more than 100000 values"}},
	},
	{
		// Found by FuzzParseSpec: each *a expanded to the list holding
		// it, 64 levels deep, two ways at each.
		name:  "alias inside its own anchor in frontmatter",
		yaml:  specHeader,
		spec:  "---\na: &a [a, *a, *a]\n---\n",
		wants: []malformedProblem{{file: "spec.md", line: 2, col: 11, msg: "alias *a is inside the value of &a: a value cannot contain itself"}, {file: "spec.md", line: 2, col: 15, msg: "alias *a is inside"}},
	},
	{
		name:  "alias inside its own anchor in phases",
		yaml:  "version: 1\nagent: {kind: claude}\nphases: &p [{name: a}, *p]\n",
		wants: []malformedProblem{{line: 3, col: 24, msg: "alias *p is inside the value of &p: a value cannot contain itself"}},
	},
	{
		name: "flow lists nested 100000 deep",
		yaml: "version: 1\nphases: " + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "\n",
		// phases is one level, so the 64th [ is the 65th level.
		wants: []malformedProblem{{line: 2, col: 9 + 63, msg: "the YAML is nested more than 64 levels deep here"}},
	},
	{
		name: "block lists nested 100000 deep in frontmatter",
		yaml: specHeader,
		spec: "---\ntags:\n" + strings.Repeat("- ", 100_000) + "x\n---\n",
		// The first - is at the column of tags and counts with it (a
		// conservative count), so the 65th - is the first past 64.
		wants: []malformedProblem{{file: "spec.md", line: 3, col: 129, msg: "the YAML is nested more than 64 levels deep here"}},
	},
	{
		name: "keys nested 100 deep by indentation",
		yaml: "version: 1\nagent: {kind: claude}\nphases: [{name: a}]\n" + nestedKeys(100),
		// The 65th key, indented by 64 spaces.
		wants: []malformedProblem{{line: 3 + 65, col: 65, msg: "the YAML is nested more than 64 levels deep here"}},
	},
	{
		name:  "mapping with more than 1000 keys",
		yaml:  "version: 1\nagent: {kind: claude}\nphases: [{name: a}]\n" + manyKeys(20_000),
		wants: []malformedProblem{{line: 1001, col: 1, msg: "a mapping with more than 1000 keys"}},
	},
	{
		name: "long key over many values",
		yaml: "version: 1\nagent: {kind: claude}\nphases: [{name: a}]\n" + strings.Repeat("k", 100_000) + ":\n" + strings.Repeat("  - a\n", 20_000),
		// Each value below the key costs the parser a copy of the key.
		wants: []malformedProblem{{line: 171, col: 5, msg: "the keys above this value are too long for the values below them"}},
	},
	{
		name:  "file over 256 KiB",
		yaml:  "version: 1\nagent: {kind: claude}\nphases: [{name: a}]\nname: " + strings.Repeat("x", 256<<10) + "\n",
		wants: []malformedProblem{{line: 1, col: 1, msg: "the file is 257 KiB; pipeline reads at most 256 KiB of YAML"}},
	},
	{
		name: "expression error at the end of an 80000-character line",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    done_when: output contains \"" + strings.Repeat("x", 80_000) + "\" && tokns > 1\n",
		// The expression starts at column 16; tokns follows the text.
		wants: []malformedProblem{{line: 5, col: 16 + 17 + 80_000 + 5, msg: `phases[0].done_when: unknown variable "tokns"`}},
	},
	{
		name: "done_when naming a missing step of 100000 characters",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    steps: [{name: " + strings.Repeat("a", 100_000) + ", run: make}]\n" +
			"    done_when: steps." + strings.Repeat("b", 100_000) + ".exit_code == 0\n",
		wants: []malformedProblem{{line: 6, col: 22, msg: `phase "build": done_when reads steps.bbbb`}},
	},
	{
		name: "expression nested 100000 deep",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    done_when: " + strings.Repeat("(", 100_000) + "tokens" + strings.Repeat(")", 100_000) + " > 0\n",
		// The 101st (: expr's parser held a quarter of a gigabyte of stack
		// before it counted a single part.
		wants: []malformedProblem{{line: 5, col: 16 + 100, msg: "phases[0].done_when: the expression nests more than 100 levels deep here"}},
	},
	{
		name: "expression of more than 10000 parts",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    done_when: " + strings.Repeat("tokens + ", 6000) + "1 > 0\n",
		// The + after the 5001st tokens: its 10001st part.
		wants: []malformedProblem{{line: 5, col: 16 + 9*5000 + 7, msg: "phases[0].done_when: the expression is too long: it has more than 10000 parts"}},
	},
	{
		name: "compact_when nested 100000 deep in frontmatter",
		yaml: specHeader,
		spec: "---\npipeline:\n  defaults:\n    compact_when: " + strings.Repeat("(", 100_000) + "context_tokens" + strings.Repeat(")", 100_000) + " > 0\n---\n",
		// The 101st (, after the 18 characters before the expression.
		wants: []malformedProblem{{file: "spec.md", line: 4, col: 19 + 100, msg: "pipeline.defaults.compact_when: the expression nests more than 100 levels deep here"}},
	},
	{
		name:  "more than 1000 phases",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n" + phaseList(2000),
		wants: []malformedProblem{{line: 1004, col: 5, msg: "phases has 2000 items; pipeline reads at most 1000"}},
	},
}

// Issue 9: a 459-byte alias bomb in a spec's frontmatter ran validate for
// 60 s and 22 GB; a phases.yaml of [[[…]]] 100,000 deep took 39 s and
// 15 GB to refuse. Every hostile row is refused within the budget.
func TestIssue9HostileInputsAreRefusedWithinBudget(t *testing.T) {
	for _, tc := range hostileCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "phases.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.spec != "" {
				if err := os.WriteFile(filepath.Join(dir, "spec.md"), []byte(tc.spec), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var err error
			withinBudget(t, tc.name, inputAllocLimit, inputHangLimit, func() { _, err = spec.Load(path, "") })
			var specErr *spec.Error
			if !errors.As(err, &specErr) {
				t.Fatalf("Load gave %v, want a *spec.Error", err)
			}
			first := tc.wants[0]
			for _, p := range specErr.Problems {
				if p.Line == first.line && p.Column == first.col && strings.Contains(p.Message, first.msg) {
					return
				}
			}
			t.Errorf("no problem at %d:%d saying %q in:\n%v", first.line, first.col, first.msg, err)
		})
	}
}

// A file with a problem on each of thousands of lines shows the first 100
// and counts the rest, rather than printing every one.
func TestProblemsPastAHundredAreCounted(t *testing.T) {
	content := "version: 1\nagent: {kind: claude}\nphases:\n" + strings.Repeat("  - build\n", 500)
	_, err := spec.Parse("phases.yaml", []byte(content))
	var specErr *spec.Error
	if !errors.As(err, &specErr) {
		t.Fatalf("Parse gave %v, want a *spec.Error", err)
	}
	if len(specErr.Problems) != 100 || specErr.Omitted != 400 {
		t.Fatalf("%d problems and %d omitted, want 100 and 400", len(specErr.Problems), specErr.Omitted)
	}
	text := specErr.Error()
	for _, want := range []string{"… and 400 more problems not shown", "500 problems found"} {
		if !strings.Contains(text, want) {
			t.Errorf("the error does not say %q:\n%s", want, text[len(text)-300:])
		}
	}
}

// Issue 9: a phases.yaml saved with a byte order mark read its first key
// as "\ufeffversion": unknown, and version missing. The mark is not text.
func TestIssue9ByteOrderMarkIsAccepted(t *testing.T) {
	const bom = "\ufeff"
	doc, err := spec.Parse("phases.yaml", []byte(bom+"version: 1\nagent: {kind: claude}\nphases: [{name: build}]\n"))
	if err != nil || doc.Pipeline.Version != 1 {
		t.Fatalf("a file starting with a byte order mark: %v", err)
	}
	_, err = spec.Parse("phases.yaml", []byte(bom+"nmae: x\nversion: 1\nagent: {kind: claude}\nphases: [{name: build}]\n"))
	var specErr *spec.Error
	if !errors.As(err, &specErr) || len(specErr.Problems) != 1 {
		t.Fatalf("want one problem, got %v", err)
	}
	if p := specErr.Problems[0]; p.Line != 1 || p.Column != 1 || p.Message != `unknown key "nmae" at the top level` || p.Source != "nmae: x" {
		t.Errorf("problem %+v: want 1:1, the key without the mark", p)
	}
	fm, err := spec.ParseSpec("spec.md", []byte(bom+"---\r\nstatus: draft\r\n---\r\n# Title\r\n"))
	if err != nil || fm.Values["status"] != "draft" {
		t.Errorf("a spec starting with a byte order mark: %v, %v", fm.Values, err)
	}
}

// Issue 9: an expression that fails at run time paused the session with a
// note placing the error in the expression ((1:8) and a snippet of it);
// the error now says where in the file the failing part was written.
func TestIssue9RunTimeErrorsPointIntoTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "phases.yaml")
	content := "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    pause_when:\n" +
		"      spin: 'tokens % attempt > 1'\n    retry:\n      backoff: |\n        duration(\"1m\") *\n          int(spec.factor)\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Load(path, "")
	if err != nil {
		t.Fatal(err)
	}
	phase := plan.Phases[0]
	_, err = phase.PauseWhen[1].Expr.Program().Eval(&triggers.Env{Attempt: 0})
	var evalErr *triggers.EvalError
	if !errors.As(err, &evalErr) {
		t.Fatalf("Eval gave %v, want a *triggers.EvalError", err)
	}
	// The % of the quoted expression on line 6.
	if want := path + ":6:21: tokens % attempt > 1: runtime error: integer divide by zero"; err.Error() != want {
		t.Errorf("the error reads\n%s\nwant\n%s", err, want)
	}
	_, err = phase.Retry.Backoff.Value.Program().EvalDuration(&triggers.Env{Spec: map[string]any{"factor": "x"}})
	// int( on line 10 of the block scalar.
	if want := path + ":10:11: "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("the back-off's error reads %v, want it to start with %s", err, want)
	}
}
