package engine

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/tokens"
)

// rctxWords is the deterministic counter of these tests: one token per
// word.
func rctxWords(s string) int { return len(strings.Fields(s)) }

func rctxFullInput() ResumeInput {
	return ResumeInput{
		Pipeline: "shop",
		Phase:    "implement",
		Step:     "agent",
		Attempt:  2,
		Reason:   "checkpoint",
		Why:      "You printed the checkpoint marker, and the session paused there.",
		Note:     "API drafted",
		Done: []DoneItem{
			{Phase: "design", Summary: "wrote docs/design.md", Passed: true, Attempts: 1, ExitCodes: []int{0}},
			{Phase: "implement", Summary: "handlers for /cart", Attempts: 2, ExitCodes: []int{1, 0, 0},
				Steps: []spec.StepExit{{Name: "agent", ExitCode: 0}, {Name: "lint", ExitCode: 1, TimedOut: true}}},
		},
		FilesChanged: []string{"cart/handler.go", "cart/handler_test.go"},
		NextSteps:    []string{"implement: tests", "review: agent"},
		HumanNotes:   []string{"use the existing money type", "keep the API v1 compatible"},
		SpecPath:     "specs/001-cart/README.md",
		SpecDiff:     SpecDiff("specs/001-cart/README.md", "# Cart\nOld rule\n", "# Cart\nNew rule\n"),
	}
}

func TestResumeDefaultRenderHasEachSection(t *testing.T) {
	out, err := RenderResumeContext("", rctxFullInput(), 3000, rctxWords)
	if err != nil {
		t.Fatal(err)
	}
	head := strings.SplitN(out, "\n", 3)
	if want := `[Resume context] You are resuming phase "implement" of pipeline "shop" (step agent, attempt 2).`; head[0] != want {
		t.Errorf("first line\n got %q\nwant %q", head[0], want)
	}
	if want := `You printed the checkpoint marker, and the session paused there. (your checkpoint note: API drafted)`; head[1] != want {
		t.Errorf("second line\n got %q\nwant %q", head[1], want)
	}
	for _, want := range []string{
		"## Human notes", "- use the existing money type", "- keep the API v1 compatible",
		"## Done so far", "- design (passed, 1 attempt): wrote docs/design.md",
		"- implement (this phase so far, 2 attempts; step agent: exit 0; step lint: exit 1, timed out): handlers for /cart",
		"## Files changed", "- cart/handler.go",
		"## What changed in the spec since the pause (specs/001-cart/README.md)", "```diff\n--- a/specs/001-cart/README.md", "-Old rule\n+New rule\n```",
		"## Next steps", "- implement: tests\n- review: agent",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.Index(out, "## Human notes") > strings.Index(out, "## Done so far") {
		t.Errorf("human notes should come first:\n%s", out)
	}
}

func TestResumeEmptySectionsAreOmitted(t *testing.T) {
	out, err := RenderResumeContext("", ResumeInput{Pipeline: "p", Phase: "x", Reason: "needs-human"}, 3000, rctxWords)
	if err != nil {
		t.Fatal(err)
	}
	if want := "[Resume context] You are resuming phase \"x\" of pipeline \"p\".\nWhy: needs-human."; out != want {
		t.Errorf("got %q\nwant %q", out, want)
	}

	in := rctxFullInput()
	in.Done, in.SpecDiff = nil, ""
	out, err = RenderResumeContext("", in, 3000, rctxWords)
	if err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"## Done", "## What changed", "```"} {
		if strings.Contains(out, absent) {
			t.Errorf("%q should be omitted:\n%s", absent, out)
		}
	}
	for _, present := range []string{"## Human notes", "## Files changed", "## Next steps"} {
		if !strings.Contains(out, present) {
			t.Errorf("%q missing:\n%s", present, out)
		}
	}
}

func rctxHugeInput() ResumeInput {
	in := rctxFullInput()
	var before, after strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&before, "line %d of the old spec\n", i)
		fmt.Fprintf(&after, "line %d of the new spec\n", i)
	}
	in.SpecDiff = SpecDiff("spec.md", before.String(), after.String())
	in.FilesChanged = nil
	for i := range 5000 {
		in.FilesChanged = append(in.FilesChanged, fmt.Sprintf("pkg/dir%d/file%d.go", i%50, i))
	}
	return in
}

func TestResumeHugeDiffAndFilesAreCutToBudget(t *testing.T) {
	in := rctxHugeInput()
	calls := 0
	count := func(s string) int { calls++; return rctxWords(s) }
	out, err := RenderResumeContext("", in, 3000, count)
	if err != nil {
		t.Fatal(err)
	}
	if n := rctxWords(out); n > 3000 {
		t.Fatalf("%d tokens over the budget of 3000", n)
	}
	if calls > 100 {
		t.Errorf("counted %d times", calls)
	}
	for _, want := range []string{
		"[Resume context] You are resuming phase \"implement\"",
		"- use the existing money type", "- keep the API v1 compatible",
		"The spec changed since the pause (its diff, ", "read specs/001-cart/README.md",
		"- pkg/dir0/file0.go", "… and ", " more",
		"## Next steps",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}

	// A budget that keeps part of the diff says how much was cut.
	in.FilesChanged = in.FilesChanged[:3]
	out, err = RenderResumeContext("", in, 3000, rctxWords)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "more lines of the diff cut: read specs/001-cart/README.md") || !strings.Contains(out, "-line 0 of the old spec") {
		t.Errorf("the diff should be cut, its first lines kept:\n%s", out)
	}
	if n := rctxWords(out); n > 3000 || n < 2500 {
		t.Errorf("%d tokens: the cut should be close to the budget of 3000", n)
	}
}

func TestResumeBudgetIsAlwaysRespected(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = fmt.Sprintf("w%d", rng.IntN(1000))
		}
		return strings.Join(w, " ")
	}
	list := func(n, size int) []string {
		l := make([]string, n)
		for i := range l {
			l[i] = words(1 + rng.IntN(size))
		}
		return l
	}
	counters := []func(string) int{
		rctxWords,
		func(s string) int { return (len(s) + 3) / 4 },
	}
	for i := range 16 {
		in := ResumeInput{
			Pipeline:     words(1),
			Phase:        words(1),
			Step:         words(rng.IntN(2)),
			Attempt:      rng.IntN(4),
			Reason:       words(rng.IntN(3)),
			Note:         words(rng.IntN(40)),
			FilesChanged: list(rng.IntN(1500), 2),
			NextSteps:    list(rng.IntN(50), 20),
			HumanNotes:   list(rng.IntN(4), 30),
			SpecPath:     "spec.md",
			SpecDiff:     strings.Join(list(rng.IntN(800), 12), "\n"),
		}
		for range rng.IntN(10) {
			in.Done = append(in.Done, DoneItem{Phase: words(1), Summary: words(rng.IntN(300)), Attempts: rng.IntN(3), ExitCodes: []int{rng.IntN(2)}})
		}
		for _, budget := range []int{1, 50, 200, 3000, 10 + rng.IntN(3000)} {
			for name, count := range counters {
				if (i+budget)%2 != name {
					continue // each counter for half the cases
				}
				calls := 0
				counting := func(s string) int { calls++; return count(s) }
				out, err := RenderResumeContext("", in, budget, counting)
				if err != nil {
					t.Fatal(err)
				}
				if n := count(out); n > budget {
					t.Fatalf("input %d, budget %d, counter %d: %d tokens:\n%s", i, budget, name, n, out)
				}
				if calls > 150 {
					t.Errorf("input %d, budget %d, counter %d: counted %d times", i, budget, name, calls)
				}
				if budget >= 200 && len(in.HumanNotes) > 0 && rctxWords(strings.Join(in.HumanNotes, " ")) < budget/3 && !strings.Contains(out, in.HumanNotes[len(in.HumanNotes)-1]) {
					t.Errorf("input %d, budget %d, counter %d: a human note was dropped:\n%s", i, budget, name, out)
				}
			}
		}
	}
}

func TestResumeLastResortTruncates(t *testing.T) {
	in := rctxFullInput()
	in.HumanNotes = []string{strings.Repeat("important ", 500)}
	out, err := RenderResumeContext("", in, 100, rctxWords)
	if err != nil {
		t.Fatal(err)
	}
	if n := rctxWords(out); n > 100 {
		t.Fatalf("%d tokens", n)
	}
	if !strings.HasPrefix(out, "[Resume context] You are resuming") || !strings.HasSuffix(out, "… [resume context truncated to 100 tokens]") {
		t.Errorf("want the header and the marker:\n%s", out)
	}
}

func TestResumeWithTheRealTokenCounter(t *testing.T) {
	out, err := RenderResumeContext("", rctxHugeInput(), 3000, tokens.Count)
	if err != nil {
		t.Fatal(err)
	}
	if n := tokens.Count(out); n > 3000 {
		t.Fatalf("%d tokens", n)
	}
	if !strings.Contains(out, "keep the API v1 compatible") {
		t.Errorf("human note missing:\n%s", out)
	}
}

func TestResumeCustomTemplate(t *testing.T) {
	tmpl := `Resuming {{.Phase}} ({{.Reason}}). Files: {{join ", " .FilesChanged}}{{range .HumanNotes}}
NOTE: {{oneline .}}{{end}}`
	in := rctxFullInput()
	in.HumanNotes = []string{"one\n  two"}
	out, err := RenderResumeContext(tmpl, in, 3000, rctxWords)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Resuming implement (checkpoint). Files: cart/handler.go, cart/handler_test.go\nNOTE: one two"; out != want {
		t.Errorf("got %q\nwant %q", out, want)
	}

	// The cuts show in a custom template too.
	in.FilesChanged = make([]string, 100)
	for i := range in.FilesChanged {
		in.FilesChanged[i] = fmt.Sprintf("f%d", i)
	}
	out, err = RenderResumeContext(tmpl, in, 20, rctxWords)
	if err != nil {
		t.Fatal(err)
	}
	if rctxWords(out) > 20 || !strings.Contains(out, "more") || !strings.Contains(out, "NOTE: one two") {
		t.Errorf("got %q", out)
	}
}

func TestResumeBadTemplate(t *testing.T) {
	for tmpl, want := range map[string]string{
		"{{.Phase":              "resume_context",
		"{{nosuchfunc .Phase}}": `"nosuchfunc" not defined`,
		"{{.NoSuchField}}":      "NoSuchField",
	} {
		_, err := RenderResumeContext(tmpl, rctxFullInput(), 3000, rctxWords)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error with %q", tmpl, err, want)
		}
	}
}

func TestResumeSpecDiff(t *testing.T) {
	if d := SpecDiff("spec.md", "a\nb\n", "a\nb\n"); d != "" {
		t.Errorf("equal texts: %q", d)
	}
	d := SpecDiff("spec.md", "1\n2\n3\nold\n5\n6\n7\n8\n", "1\n2\n3\nnew\n5\n6\n7\n8\n")
	want := "--- a/spec.md\n+++ b/spec.md\n@@ -1,7 +1,7 @@\n 1\n 2\n 3\n-old\n+new\n 5\n 6\n 7\n"
	if d != want {
		t.Errorf("got\n%s\nwant\n%s", d, want)
	}
	d = SpecDiff("s", "x\n", "x")
	if !strings.Contains(d, "-x\n+x\n\\ No newline at end of file\n") {
		t.Errorf("a missing final new line should show:\n%s", d)
	}
}

// The built-in template reads only what ResumeInput has, as the loader
// checks a template of phases.yaml: the two cannot drift apart.
func TestDefaultResumeTemplatePassesTheLoadersCheck(t *testing.T) {
	if problems := spec.CheckResumeTemplate(DefaultResumeTemplate); len(problems) > 0 {
		t.Fatalf("%+v", problems)
	}
}

// rctxSections splits a rendered context at its "## " headings: the
// heading's first words → the section's text.
func rctxSections(out string) map[string]string {
	sections := map[string]string{}
	for i, part := range strings.Split(out, "\n## ") {
		if i == 0 {
			continue
		}
		title, body, _ := strings.Cut(part, "\n")
		for _, name := range []string{"What changed in the spec", "The end of the previous conversation", "Files changed",
			"Done so far", "Next steps", "Decisions made", "Pinned facts", "Open tasks"} {
			if strings.HasPrefix(title, name) {
				sections[name] = body
			}
		}
	}
	return sections
}

// The cut order is the one RenderResumeContext states: as the budget
// shrinks, a part is cut only once every part before it in the order is
// cut entirely, and the working set (decisions, pinned facts, open
// tasks) goes last.
func TestResumeCutOrderPutsTheWorkingSetLast(t *testing.T) {
	in := rctxFullInput()
	var diffBefore, diffAfter, output strings.Builder
	for i := range 40 {
		fmt.Fprintf(&diffBefore, "old line %d of the spec\n", i)
		fmt.Fprintf(&diffAfter, "new line %d of the spec\n", i)
		fmt.Fprintf(&output, "output line %d of the step\n", i)
	}
	in.SpecDiff = SpecDiff("README.md", diffBefore.String(), diffAfter.String())
	in.RecentOutput = output.String()
	for i := range 30 {
		in.FilesChanged = append(in.FilesChanged, fmt.Sprintf("src/file%d.go", i))
		in.NextSteps = append(in.NextSteps, fmt.Sprintf("phase p%d: do the p%d work", i, i))
		in.Decisions = append(in.Decisions, fmt.Sprintf("decision %d: use approach %d", i, i))
		in.PinnedFacts = append(in.PinnedFacts, fmt.Sprintf("fact %d holds here", i))
		in.OpenTasks = append(in.OpenTasks, fmt.Sprintf("task %d still to do", i))
	}
	in.Done[0].Summary = strings.Repeat("a long summary of the design ", 20)
	order := []string{"What changed in the spec", "The end of the previous conversation", "Files changed",
		"Done so far", "Next steps", "Decisions made", "Pinned facts", "Open tasks"}
	full, err := RenderResumeContext("", in, 0, rctxWords)
	if err != nil {
		t.Fatal(err)
	}
	whole := rctxSections(full)
	for _, name := range order {
		if whole[name] == "" {
			t.Fatalf("the full render has no %q section:\n%s", name, full)
		}
	}
	// gone: the part holds nothing of its own any more.
	gone := func(name, body string) bool {
		body = strings.TrimSpace(body)
		switch name {
		case "What changed in the spec":
			return strings.Contains(body, "was cut to fit")
		case "Done so far":
			return !strings.Contains(body, "a long summary")
		case "The end of the previous conversation":
			return body == ""
		}
		return body == "" || strings.Count(body, "\n") == 0 && strings.Contains(body, "cut to fit")
	}
	seenCut := map[string]bool{}
	for budget := rctxWords(full); budget > 100; budget -= 7 {
		out, err := RenderResumeContext("", in, budget, rctxWords)
		if err != nil {
			t.Fatal(err)
		}
		if n := rctxWords(out); n > budget {
			t.Fatalf("budget %d: %d words", budget, n)
		}
		if strings.Contains(out, "[resume context truncated") {
			break // every part is cut: the last resort
		}
		got := rctxSections(out)
		for k, name := range order {
			if got[name] == whole[name] {
				continue
			}
			seenCut[name] = true
			for _, earlier := range order[:k] {
				if !gone(earlier, got[earlier]) {
					t.Fatalf("budget %d: %q is cut while %q, before it in the cut order, is not cut entirely:\n%s", budget, name, earlier, out)
				}
			}
		}
	}
	for _, name := range order {
		if !seenCut[name] {
			t.Errorf("no budget cut %q", name)
		}
	}
	// Cut, the decisions keep the newest; the facts and tasks the first.
	out, _ := RenderResumeContext("", in, rctxWords(full)*45/100, rctxWords)
	got := rctxSections(out)
	if d := got["Decisions made"]; d != "" && d != whole["Decisions made"] && !strings.Contains(d, "decision 29:") {
		t.Errorf("cut decisions lost the newest:\n%s", d)
	}
}
