package spec_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

const (
	digestPhases = "version: 1\nagent: {kind: claude}\nspec: specs/a.md\nphases:\n" +
		"  - name: design\n    prompt: Design it.\n  - name: build\n    prompt: Build it.\n"
	digestSpec = "---\nstatus: planned\nagent_phases:\n  - design: Focus on the API\n  - build\n---\n# A\n\nThe body.\n"
)

// digestOf writes phases.yaml and specs/a.md (plus any extra file) into
// dir and returns the digest of the loaded plan.
func digestOf(t *testing.T, dir string, files map[string]string, specPath string) string {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	plan, err := spec.Load(filepath.Join(dir, "phases.yaml"), specPath)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(plan.Digest) {
		t.Fatalf("digest %q is not a hex sha256", plan.Digest)
	}
	return plan.Digest
}

func TestDigestNamesThePlan(t *testing.T) {
	files := map[string]string{"phases.yaml": digestPhases, "specs/a.md": digestSpec}
	base := digestOf(t, t.TempDir(), files, "")
	with := func(name, content string) map[string]string {
		changed := map[string]string{"phases.yaml": digestPhases, "specs/a.md": digestSpec}
		changed[name] = content
		return changed
	}
	tests := []struct {
		name  string
		files map[string]string
		same  bool
	}{
		{"the same files in another checkout", files, true},
		{"a prompt of phases.yaml changed", with("phases.yaml", strings.Replace(digestPhases, "Build it.", "Build it well.", 1)), false},
		{"a prompt of the frontmatter changed", with("specs/a.md", strings.Replace(digestSpec, "Focus on the API", "Focus on the UI", 1)), false},
		{"a frontmatter value changed", with("specs/a.md", strings.Replace(digestSpec, "planned", "in-progress", 1)), false},
		// Bytes, not meaning: a new comment is another digest (see digest).
		{"a comment of phases.yaml added", with("phases.yaml", "# a note\n"+digestPhases), false},
		{"compact_when set in phases.yaml", with("phases.yaml", digestPhases+"defaults:\n  compact_when: context_tokens > 150000\n"), false},
		{"compact_prompt set in phases.yaml", with("phases.yaml", digestPhases+"compact_prompt: Summarise.\n"), false},
		{"compact_prompt set in the frontmatter", with("specs/a.md", strings.Replace(digestSpec, "---\n", "---\npipeline:\n  compact_prompt: Summarise.\n", 1)), false},
		// The body is the agent's reading, not the plan: editing it (as a
		// human does between a pause and a resume) keeps the plan.
		{"the spec's body changed", with("specs/a.md", digestSpec+"More of the body.\n"), true},
		// A checkout on Windows may turn every line end into CRLF.
		{"CRLF line ends", map[string]string{"phases.yaml": crlf(digestPhases), "specs/a.md": crlf(digestSpec)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := digestOf(t, t.TempDir(), tt.files, "")
			if same := got == base; same != tt.same {
				t.Errorf("digest %s, first %s: same = %v, want %v", got, base, same, tt.same)
			}
		})
	}
}

// Sessions move between machines: the folder of the checkout, and whether
// phases.yaml is named by an absolute or a relative path, are not the plan.
func TestDigestDoesNotDependOnTheCheckoutsPath(t *testing.T) {
	files := map[string]string{"phases.yaml": digestPhases, "specs/a.md": digestSpec}
	first := digestOf(t, filepath.Join(t.TempDir(), "checkout-one"), files, "")
	second := digestOf(t, filepath.Join(t.TempDir(), "elsewhere", "two"), files, "")
	if first != second {
		t.Errorf("two checkouts give %s and %s", first, second)
	}
	dir := t.TempDir()
	digestOf(t, dir, files, "")
	t.Chdir(dir)
	plan, err := spec.Load("phases.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	if plan.Digest != first {
		t.Errorf("loaded by a relative path: %s, by an absolute one: %s", plan.Digest, first)
	}
}

// Another spec is another plan, even with the same frontmatter: the plan
// names the spec the agent works on.
func TestDigestOfAnotherSpec(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"phases.yaml": digestPhases, "specs/a.md": digestSpec, "specs/b.md": digestSpec}
	a := digestOf(t, dir, files, "")
	b := digestOf(t, dir, files, filepath.Join(dir, "specs", "b.md"))
	if a == b {
		t.Errorf("specs/a.md and specs/b.md give one digest, %s", a)
	}
	if again := digestOf(t, dir, files, filepath.Join(dir, "specs", "a.md")); again != a {
		t.Errorf("--spec naming the spec phases.yaml names: %s, without: %s", again, a)
	}
}

func crlf(text string) string { return strings.ReplaceAll(text, "\n", "\r\n") }

// testBase is the folder the relative paths of these tests are from.
const testBase = "/project"

// Resolve takes relative paths from the folder it is given, not from the
// working directory (a workflow on a worker has another): the plan's
// name and digest are those of the files as the base places them.
func TestResolveReadsRelativePathsFromBase(t *testing.T) {
	t.Chdir(t.TempDir())
	resolve := func(file, specFile, base string) *spec.Plan {
		t.Helper()
		doc, err := spec.Parse(file, []byte(digestPhases))
		if err != nil {
			t.Fatal(err)
		}
		fm, err := spec.ParseSpec(specFile, []byte(digestSpec))
		if err != nil {
			t.Fatal(err)
		}
		plan, err := spec.Resolve(doc, fm, base)
		if err != nil {
			t.Fatal(err)
		}
		return plan
	}
	relative := resolve("phases.yaml", "specs/a.md", "/srv/shop")
	if relative.Name.Value != "shop" {
		t.Errorf("phases.yaml from /srv/shop is named %q, want shop (its folder's name)", relative.Name.Value)
	}
	for _, tt := range []struct{ file, specFile, base string }{
		{"/srv/shop/phases.yaml", "/srv/shop/specs/a.md", "/elsewhere"},
		{"/srv/shop/phases.yaml", "specs/a.md", "/srv/shop"},
		{"shop/phases.yaml", "/srv/shop/specs/a.md", "/srv"},
	} {
		plan := resolve(tt.file, tt.specFile, tt.base)
		if plan.Digest != relative.Digest || plan.Name.Value != relative.Name.Value {
			t.Errorf("%s and %s from %s: %s named %q; relative from /srv/shop: %s named %q",
				tt.file, tt.specFile, tt.base, plan.Digest, plan.Name.Value, relative.Digest, relative.Name.Value)
		}
	}
}
