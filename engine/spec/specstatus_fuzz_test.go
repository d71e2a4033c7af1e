package spec_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

// Whatever a frontmatter that loads, SetStatus either refuses or writes a spec
// whose body is byte for byte the same, whose frontmatter still parses,
// and whose status and last transition are the status it moved to.
func FuzzSetStatus(f *testing.F) {
	for _, seed := range []string{
		plannedSpec,
		"---\nstatus: planned\ntransitions: []\n---\n",
		"---\nstatus: 'planned' # c\ntransitions:\n- status: planned\n  at: x\nupdated_at:\n---\nbody\n",
		"---\r\nstatus: planned\r\n---\r\n- [ ] x\r\n",
		"---\nstatus: planned\ntransitions: {a: 1}\n---\n",
		"---\nstatus: planned\nupdated_at: |\n  x\n---\n",
		"---\n\"status\": planned\n---\n",
		"---\nstatus: in-progress\n---\n```\n- [ ] x\n```\n",
		"---\nstatus: planned\nupdated_at: \n---", // once a panic: a value of blanks only
		"---\nstatus: 'planned' \n0:\n-\n---",     // a line added after a bare "-" would join its list
	} {
		f.Add(seed, false)
	}
	f.Fuzz(func(t *testing.T, content string, complete bool) {
		to := spec.StatusInProgress
		if complete {
			to = spec.StatusComplete
		}
		if _, err := spec.ParseSpec("spec.md", []byte(content)); err != nil {
			return // a spec that does not load runs no session
		}
		edit, err := spec.SetStatus([]byte(content), to, clock, true)
		if err != nil || !edit.Changed() {
			return
		}
		block := spec.FrontmatterBlock([]byte(content))
		_, body, _ := bytes.Cut([]byte(content), block)
		if !bytes.HasSuffix(edit.Content, body) {
			t.Fatalf("the body changed:\n%q\n->\n%q", content, edit.Content)
		}
		fm, err := spec.ParseSpec("spec.md", edit.Content)
		if err != nil {
			t.Fatalf("the edited spec does not parse: %v\n%q\n->\n%q", err, content, edit.Content)
		}
		if fm.Values["status"] != edit.To {
			t.Fatalf("status %v, want %s:\n%q\n->\n%q", fm.Values["status"], edit.To, content, edit.Content)
		}
		list, _ := fm.Values["transitions"].([]any)
		if len(list) == 0 {
			t.Fatalf("no transitions:\n%q\n->\n%q", content, edit.Content)
		}
		last, _ := list[len(list)-1].(map[string]any)
		if at, _ := last["at"].(string); last["status"] != edit.To || !strings.HasPrefix(at, "2026-11-27T") {
			t.Fatalf("last transition %v, want %s:\n%q\n->\n%q", last, edit.To, content, edit.Content)
		}
	})
}
