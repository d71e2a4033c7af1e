package spec_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

// writes and on_out_of_scope merge as the other phase keys do: built-in,
// defaults, the spec's pipeline.defaults, the phase, the spec's phase;
// each value keeps where it came from.
func TestWriteScopeMerges(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"phases.yaml": `version: 1
agent: {kind: claude}
spec: spec.md
defaults:
  writes: [src/**]
phases:
  - name: open
  - name: design
    writes: []
  - name: docs
    writes: [docs/**, README.md]
    on_out_of_scope: revert
  - name: review
`,
		"spec.md": `---
pipeline:
  defaults:
    on_out_of_scope: revert
  phases:
    - name: open
    - name: design
    - name: docs
    - name: review
      writes: [REVIEW.md]
---
# Spec
`,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "phases.yaml")
	plan, err := spec.Load(path, "")
	if err != nil {
		t.Fatal(err)
	}
	specPath := filepath.Join(dir, "spec.md")
	for i, want := range []struct {
		writes     []string
		writesFrom string
		on         string
		onFrom     string
	}{
		{[]string{"src/**"}, path + ":5:11", "revert", specPath + ":4:22"},
		{[]string{}, path + ":9:13", "revert", specPath + ":4:22"},
		{[]string{"docs/**", "README.md"}, path + ":11:13", "revert", path + ":12:22"},
		{[]string{"REVIEW.md"}, specPath + ":10:15", "revert", specPath + ":4:22"},
	} {
		p := plan.Phases[i]
		if p.Writes == nil {
			t.Errorf("phase %s: no writes, want %q", p.Name, want.writes)
			continue
		}
		if !slices.Equal(p.Writes.Value, want.writes) || p.Writes.Value == nil || place(p.Writes.From) != want.writesFrom {
			t.Errorf("phase %s: writes %#v from %s, want %#v from %s", p.Name, p.Writes.Value, p.Writes.From, want.writes, want.writesFrom)
		}
		if p.OnOutOfScope.Value != want.on || place(p.OnOutOfScope.From) != want.onFrom {
			t.Errorf("phase %s: on_out_of_scope %q from %s, want %q from %s", p.Name, p.OnOutOfScope.Value, p.OnOutOfScope.From, want.on, want.onFrom)
		}
	}
}

// place is an origin's file:line:col, without the layer's name.
func place(o spec.Origin) string {
	return strings.SplitN(o.String(), " ", 2)[0]
}

// Absent, a phase may change anything, and on_out_of_scope is the
// built-in pause.
func TestWriteScopeAbsent(t *testing.T) {
	doc, err := spec.Parse("phases.yaml", []byte(watchHeader))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Resolve(doc, nil, testBase)
	if err != nil {
		t.Fatal(err)
	}
	p := plan.Phases[0]
	if p.Writes != nil {
		t.Errorf("writes %#v, want none (unrestricted)", p.Writes)
	}
	if p.OnOutOfScope.Value != spec.OutOfScopePause || p.OnOutOfScope.From.Layer != spec.LayerDefault {
		t.Errorf("on_out_of_scope %q from %s, want the built-in pause", p.OnOutOfScope.Value, p.OnOutOfScope.From)
	}
}

func TestWriteScopeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // lines of the error, in order
	}{
		{
			name: "unknown on_out_of_scope",
			yaml: "    on_out_of_scope: revrt\n",
			want: []string{`phases.yaml:5:22: phases[0].on_out_of_scope: "revrt" is not one of pause, revert`,
				`hint: did you mean "revert"? (one of pause, revert)`},
		},
		{
			name: "on_out_of_scope far from any word",
			yaml: "    on_out_of_scope: ignore\n",
			want: []string{`phases.yaml:5:22: phases[0].on_out_of_scope: "ignore" is not one of pause, revert`,
				`hint: use one of pause, revert`},
		},
		{
			name: "on_out_of_scope not a string",
			yaml: "    on_out_of_scope: [pause]\n",
			want: []string{`phases.yaml:5:22: phases[0].on_out_of_scope must be a string, not a list`},
		},
		{
			name: "writes not a list",
			yaml: "    writes: docs/**\n",
			want: []string{`phases.yaml:5:13: phases[0].writes must be a list, not a string`,
				`hint: write a list as [a, b] or as lines starting with -`},
		},
		{
			name: "a bad glob",
			yaml: "    writes: [docs/**, 'src/[a']\n",
			want: []string{`phases.yaml:5:23: phases[0].writes[1]: "src/[a" is not a valid glob`,
				`hint: close every [ and {, and end no glob with a lone \; ** matches any number of folders, * any characters but /`},
		},
		{
			name: "a glob that climbs out",
			yaml: "    writes: [../other/**]\n",
			want: []string{`phases.yaml:5:14: phases[0].writes[0]: "../other/**" uses ..; writes globs stay inside the folder of phases.yaml`},
		},
		{
			name: "an absolute glob",
			yaml: "    writes:\n      - /etc/**\n",
			want: []string{`phases.yaml:6:9: phases[0].writes[0]: "/etc/**" is an absolute path; writes globs are relative to the folder of phases.yaml`},
		},
		{
			name: "an empty glob",
			yaml: "    writes: ['']\n",
			want: []string{`phases.yaml:5:14: phases[0].writes[0] is empty`,
				`hint: write a glob relative to the folder of phases.yaml, such as docs/**, or remove the item; writes: [] makes the phase read-only`},
		},
		{
			name: "in defaults",
			yaml: "defaults:\n  on_out_of_scope: Pause\n",
			want: []string{`phases.yaml:6:20: defaults.on_out_of_scope: "Pause" is not one of pause, revert`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := spec.Parse("phases.yaml", []byte(watchHeader+tc.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			got := err.Error()
			at := 0
			for _, line := range tc.want {
				i := strings.Index(got[at:], line)
				if i < 0 {
					t.Fatalf("the error lacks %q (in order):\n%s", line, got)
				}
				at += i + len(line)
			}
		})
	}
}
