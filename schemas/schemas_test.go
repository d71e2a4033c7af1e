package schemas_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/pipeline-dev/pipeline/schemas"
)

func compile(t *testing.T, name string, schema []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// instance reads YAML as the JSON value a schema validator sees.
func instance(t *testing.T, yamlText []byte) any {
	t.Helper()
	js, err := yaml.YAMLToJSON(yamlText)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func files(t *testing.T, globs ...string) []string {
	t.Helper()
	var out []string
	for _, g := range globs {
		matches, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, matches...)
	}
	if len(out) == 0 {
		t.Fatalf("no files match %v", globs)
	}
	return out
}

// frontmatter returns the YAML between a spec's --- lines.
func frontmatter(t *testing.T, content []byte) []byte {
	t.Helper()
	text := strings.ReplaceAll(string(content), "\r\n", "\n")
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		return nil
	}
	block, _, ok := strings.Cut(rest, "\n---\n")
	if !ok {
		t.Fatal("frontmatter not closed")
	}
	return []byte(block)
}

func TestExamplesMatchPhasesSchema(t *testing.T) {
	schema := compile(t, "phases.schema.json", schemas.Phases)
	for _, path := range files(t, "../examples/*/phases.yaml", "../app/starter/phases.yaml") {
		content, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(instance(t, content)); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
}

func TestSpecsMatchFrontmatterSchema(t *testing.T) {
	schema := compile(t, "frontmatter.schema.json", schemas.Frontmatter)
	paths := files(t, "../examples/*/spec.md", "../examples/*/specs/*/README.md", "../app/starter/spec.md")
	for _, path := range paths {
		content, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		block := frontmatter(t, content)
		if block == nil {
			continue
		}
		if err := schema.Validate(instance(t, block)); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
}

// The schemas reject what the loader rejects, so an editor flags it too.
func TestSchemasRejectMistakes(t *testing.T) {
	phases := compile(t, "phases.schema.json", schemas.Phases)
	for _, bad := range []string{
		"phases: [{name: a}]\n",                                            // no version
		"version: 2\nphases: [{name: a}]\n",                                // unknown version
		"version: 1\nphases: []\n",                                         // no phases
		"version: 1\nnme: x\nphases: [{name: a}]\n",                        // unknown key
		"version: 1\nagent: {kind: claud}\nphases: [{name: a}]\n",          // bad kind
		"version: 1\nphases: [{name: a, retry: {backof: 1s}}]\n",           // misspelt key
		"version: 1\nphases: [{name: a, timeout: soon}]\n",                 // bad duration
		"version: 1\nphases: [{name: a, pause_when: [x]}]\n",               // triggers as a list
		"version: 1\nphases: [{prompt: x}]\n",                              // no name
		"version: 1\nwatch: specs/*.md\nphases: [{name: a}]\n",             // watch as a string
		"version: 1\nwatch: ['']\nphases: [{name: a}]\n",                   // empty glob
		"version: 1\nwatch: [/etc/*.md]\nphases: [{name: a}]\n",            // absolute glob
		"version: 1\nwatch: [../up/*.md]\nphases: [{name: a}]\n",           // climbs out
		"version: 1\nwatch_debounce: -1s\nphases: [{name: a}]\n",           // negative debounce
		"version: 1\nwatch_debounce: soon\nphases: [{name: a}]\n",          // bad debounce
		"version: 1\ncompact_prompt: ''\nphases: [{name: a}]\n",            // empty prompt
		"version: 1\ncompact_prompt: \"  \\t\"\nphases: [{name: a}]\n",     // blank prompt
		"version: 1\ncompact_prompt: [a, b]\nphases: [{name: a}]\n",        // prompt as a list
		"version: 1\nphases: [{name: a, compact_prompt: x}]\n",             // top-level key in a phase
		"version: 1\ndefaults: {compact_when: [x]}\nphases: [{name: a}]\n", // expression as a list
		"version: 1\nphases: [{name: a, compact_when: {c: x}}]\n",          // named like a trigger
	} {
		if err := phases.Validate(instance(t, []byte(bad))); err == nil {
			t.Errorf("the phases schema accepts %q", bad)
		}
	}
	for _, good := range []string{
		"version: 1\nwatch: [specs/**/*.md, '**/*.txt', .pipeline/x, ..md]\nwatch_debounce: 0s\nphases: [{name: a}]\n",
		"version: 1\ncompact_prompt: Summarise.\ndefaults: {compact_when: context_tokens > 150000}\nphases: [{name: a, compact_when: false}]\n",
	} {
		if err := phases.Validate(instance(t, []byte(good))); err != nil {
			t.Errorf("the phases schema refuses %q: %v", good, err)
		}
	}
	fm := compile(t, "frontmatter.schema.json", schemas.Frontmatter)
	for _, bad := range []string{
		"pipeline: {watch: [specs/*.md]}\n", // phases.yaml's only
		"agent_phases: design\n",
		"agent_phases: [{design: a, backend: b}]\n",
		"pipeline: {phasess: []}\n",
		"pipeline: {defaults: {timeout: 3 days}}\n",
		"pipeline: {compact_prompt: ''}\n",
		"pipeline: {defaults: {compact_when: [x]}}\n",
	} {
		if err := fm.Validate(instance(t, []byte(bad))); err == nil {
			t.Errorf("the frontmatter schema accepts %q", bad)
		}
	}
	if err := fm.Validate(instance(t, []byte("status: planned\nowner: ana\ncustom: {a: 1}\n"))); err != nil {
		t.Errorf("the frontmatter schema refuses free keys: %v", err)
	}
	compaction := "pipeline:\n  compact_prompt: Summarise.\n  defaults: {compact_when: total_tokens > 1}\n  phases: [{name: a, compact_when: tokens > 1}]\n"
	if err := fm.Validate(instance(t, []byte(compaction))); err != nil {
		t.Errorf("the frontmatter schema refuses the compaction keys: %v", err)
	}
}
