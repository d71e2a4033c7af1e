package spec_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

const plannedSpec = `---
# LeanSpec keeps these keys; pipeline moves status.
status: planned   # moved by the session
created: '2025-11-03'
priority: "high"
tags:
  - ux   # first
  - cli
created_at: '2025-11-03T00:00:00Z'
---

# Pattern-aware list

- [x] done already
Body text: status: planned stays in the body.
`

var clock = time.Date(2026, 11, 27, 16, 5, 9, 501_000_000, time.UTC)

func TestSetStatusChangesOnlyLeanSpecKeys(t *testing.T) {
	edit, err := spec.SetStatus([]byte(plannedSpec), spec.StatusInProgress, clock, false)
	if err != nil || !edit.Changed() {
		t.Fatalf("SetStatus: %+v, %v", edit, err)
	}
	want := strings.Replace(plannedSpec, "status: planned   #", "status: in-progress   #", 1)
	want = strings.Replace(want, "created_at: '2025-11-03T00:00:00Z'\n", "created_at: '2025-11-03T00:00:00Z'\n"+
		"updated_at: '2026-11-27T16:05:09.501Z'\ntransitions:\n  - status: in-progress\n    at: '2026-11-27T16:05:09.501Z'\n", 1)
	if string(edit.Content) != want {
		t.Fatalf("in-progress:\n%s\nwant:\n%s", edit.Content, want)
	}
	later := clock.Add(time.Hour)
	done, err := spec.SetStatus(edit.Content, spec.StatusComplete, later, false)
	if err != nil || done.To != spec.StatusComplete {
		t.Fatalf("complete: %+v, %v", done, err)
	}
	want = strings.Replace(want, "status: in-progress   #", "status: complete   #", 1)
	want = strings.Replace(want, "updated_at: '2026-11-27T16:05:09.501Z'", "updated_at: '2026-11-27T17:05:09.501Z'", 1)
	want = strings.Replace(want, "    at: '2026-11-27T16:05:09.501Z'\n", "    at: '2026-11-27T16:05:09.501Z'\n"+
		"  - status: complete\n    at: '2026-11-27T17:05:09.501Z'\n"+
		"completed_at: '2026-11-27T17:05:09.501Z'\ncompleted: '2026-11-27'\n", 1)
	if string(done.Content) != want {
		t.Fatalf("complete:\n%s\nwant:\n%s", done.Content, want)
	}
	fm, err := spec.ParseSpec("spec.md", done.Content)
	if err != nil || fm.Values["status"] != "complete" || len(fm.Values["transitions"].([]any)) != 2 {
		t.Fatalf("the edited frontmatter reads %v, %v", fm.Values, err)
	}
}

func TestSetStatusKeepsQuotesAndExistingKeys(t *testing.T) {
	in := "---\nstatus: 'in-progress'\nupdated_at: \"2025-01-01T00:00:00Z\" # old\ncompleted_at: '2025-02-02T00:00:00.000Z'\ntransitions: []\nowner: me\n---\nbody\n"
	edit, err := spec.SetStatus([]byte(in), spec.StatusComplete, clock, false)
	if err != nil {
		t.Fatal(err)
	}
	want := "---\nstatus: 'complete'\nupdated_at: \"2026-11-27T16:05:09.501Z\" # old\ncompleted_at: '2025-02-02T00:00:00.000Z'\n" +
		"transitions:\n  - status: complete\n    at: '2026-11-27T16:05:09.501Z'\nowner: me\ncompleted: '2026-11-27'\n---\nbody\n"
	if string(edit.Content) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", edit.Content, want)
	}
}

func TestSetStatusAppendsToABlockListAtTheKeysIndent(t *testing.T) {
	in := "---\nstatus: planned\ntransitions:\n- status: planned\n  at: '2025-01-01T00:00:00.000Z'\n# trailing comment\nowner: me\n---\n"
	edit, err := spec.SetStatus([]byte(in), spec.StatusInProgress, clock, false)
	if err != nil {
		t.Fatal(err)
	}
	want := "---\nstatus: in-progress\ntransitions:\n- status: planned\n  at: '2025-01-01T00:00:00.000Z'\n" +
		"- status: in-progress\n  at: '2026-11-27T16:05:09.501Z'\n# trailing comment\nowner: me\nupdated_at: '2026-11-27T16:05:09.501Z'\n---\n"
	if string(edit.Content) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", edit.Content, want)
	}
}

func TestSetStatusFollowsLeanSpecRules(t *testing.T) {
	cases := []struct {
		name, in, to string
		force        bool
		wantTo       string
		held         string
	}{
		{"draft is not moved", "---\nstatus: draft\n---\n", spec.StatusInProgress, false, spec.StatusDraft, "draft"},
		{"draft does not complete", "---\nstatus: draft\n---\n", spec.StatusComplete, true, spec.StatusDraft, "draft"},
		{"no status is never written", "---\npriority: high\n---\n", spec.StatusInProgress, false, "", ""},
		{"no frontmatter", "# Title\n- [ ] x\n", spec.StatusComplete, false, "", ""},
		{"in-progress does not start again", "---\nstatus: in-progress\n---\n", spec.StatusInProgress, false, spec.StatusInProgress, ""},
		{"complete stays", "---\nstatus: complete\n---\n", spec.StatusComplete, false, spec.StatusComplete, ""},
		{"unchecked holds", "---\nstatus: in-progress\n---\n## Plan\n- [x] a\n- [ ] write the docs\n```\n- [ ] in code\n```\n", spec.StatusComplete, false, spec.StatusInProgress, "write the docs"},
		{"force completes", "---\nstatus: in-progress\n---\n- [ ] write the docs\n", spec.StatusComplete, true, spec.StatusComplete, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			edit, err := spec.SetStatus([]byte(c.in), c.to, clock, c.force)
			if err != nil {
				t.Fatal(err)
			}
			if edit.To != c.wantTo || !strings.Contains(edit.Held, c.held) || (c.held == "" && edit.Held != "") {
				t.Fatalf("%+v: want to %q, held with %q", edit, c.wantTo, c.held)
			}
			if edit.Changed() != (edit.To != edit.From) {
				t.Fatalf("changed %v but %s -> %s", edit.Changed(), edit.From, edit.To)
			}
		})
	}
	edit, _ := spec.SetStatus([]byte("---\nstatus: in-progress\n---\n- [ ] write the docs\n```\n- [ ] in code\n```\n"), spec.StatusComplete, clock, false)
	if len(edit.Unchecked) != 1 || edit.Unchecked[0] != "write the docs" {
		t.Fatalf("unchecked items %q, want only the one outside the code block", edit.Unchecked)
	}
}

// A frontmatter where the added lines would not read as meant (a block
// list that ends in a bare "-") is refused, and nothing is written.
func TestSetStatusRefusesAnEditThatWouldNotReadBack(t *testing.T) {
	edit, err := spec.SetStatus([]byte("---\nstatus: planned\nlist:\n-\n---\n"), spec.StatusInProgress, clock, false)
	if err == nil || edit.Changed() || !strings.Contains(err.Error(), "by hand") {
		t.Fatalf("SetStatus: %+v, %v; want a refusal that writes nothing", edit, err)
	}
}
