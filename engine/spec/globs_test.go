package spec_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

// watchHeader is a valid phases.yaml head of four lines; the watch keys of
// a row start on line 5.
const watchHeader = "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n"

func TestWatchKeysLoad(t *testing.T) {
	for _, tc := range []struct {
		name  string
		yaml  string
		watch []string
		// debounce is nil when phases.yaml does not set it.
		debounce *time.Duration
		// watchFrom and debounceFrom are line:col, "" for the built-in
		// default.
		watchFrom, debounceFrom string
	}{
		{name: "absent"},
		{
			name:      "a block list with **",
			yaml:      "watch:\n  - specs/**/*.md\n  - \"**/*.txt\"\n  - README.md\n",
			watch:     []string{"specs/**/*.md", "**/*.txt", "README.md"},
			watchFrom: "6:3",
		},
		{
			name:      "a flow list",
			yaml:      "watch: [specs/*.md, 'docs/**']\n",
			watch:     []string{"specs/*.md", "docs/**"},
			watchFrom: "5:8",
		},
		{
			name:      "an empty list",
			yaml:      "watch: []\n",
			watch:     []string{},
			watchFrom: "5:8",
		},
		{name: "watch with no value", yaml: "watch:\n"},
		{
			// Duplicates, the store folder, and a .. that stays inside.
			name:      "globs the check lets through",
			yaml:      "watch: [a.md, a.md, .pipeline/**, specs/../README.md, ./specs/*.md, ..md, 'specs/{a,b}/[!x]*.md']\n",
			watch:     []string{"a.md", "a.md", ".pipeline/**", "specs/../README.md", "./specs/*.md", "..md", "specs/{a,b}/[!x]*.md"},
			watchFrom: "5:8",
		},
		{
			name:         "a debounce",
			yaml:         "watch: [specs/*.md]\nwatch_debounce: 1500ms\n",
			watch:        []string{"specs/*.md"},
			debounce:     ptr(1500 * time.Millisecond),
			watchFrom:    "5:8",
			debounceFrom: "6:17",
		},
		{
			name:         "a debounce of 0",
			yaml:         "watch_debounce: 0\n",
			debounce:     ptr(time.Duration(0)),
			debounceFrom: "5:17",
		},
		{
			name:         "a debounce of 0s",
			yaml:         "watch_debounce: 0s\n",
			debounce:     ptr(time.Duration(0)),
			debounceFrom: "5:17",
		},
		{name: "a debounce with no value", yaml: "watch_debounce:\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "phases.yaml")
			if err := os.WriteFile(path, []byte(watchHeader+tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			plan, err := spec.Load(path, "")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(plan.Watch, tc.watch) || (plan.Watch == nil) != (tc.watch == nil) {
				t.Errorf("watch %#v, want %#v", plan.Watch, tc.watch)
			}
			switch {
			case tc.debounce == nil && plan.WatchDebounce != nil:
				t.Errorf("watch_debounce %v, want nil (not set)", *plan.WatchDebounce)
			case tc.debounce != nil && (plan.WatchDebounce == nil || time.Duration(*plan.WatchDebounce) != *tc.debounce):
				t.Errorf("watch_debounce %v, want %v", plan.WatchDebounce, *tc.debounce)
			}
			checkFrom(t, "watch", plan.WatchFrom, path, tc.watchFrom)
			checkFrom(t, "watch_debounce", plan.WatchDebounceFrom, path, tc.debounceFrom)
		})
	}
}

func checkFrom(t *testing.T, key string, got spec.Origin, path, want string) {
	t.Helper()
	switch {
	case want == "" && got.Layer != spec.LayerDefault:
		t.Errorf("%s from %s, want the built-in default", key, got)
	case want != "" && (got.Layer != spec.LayerPipeline || got.String() != path+":"+want):
		t.Errorf("%s from %s (%s), want %s:%s", key, got, got.Layer, path, want)
	}
}

func ptr[T any](v T) *T { return &v }

// The plan's JSON carries the keys as written, and leaves them out when
// phases.yaml does not set them.
func TestPlanJSONHasTheWatchKeys(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		// want is each key's JSON; "" for a key left out.
		want map[string]string
	}{
		{"", map[string]string{"watch": "", "watch_debounce": "",
			"watch_from": `{"layer":"default"}`, "watch_debounce_from": `{"layer":"default"}`}},
		{"watch: ['specs/**/*.md']\nwatch_debounce: 2s\n", map[string]string{
			"watch": `["specs/**/*.md"]`, "watch_debounce": `"2s"`,
			"watch_from":          `{"layer":"phases.yaml","file":"phases.yaml","line":5,"column":8}`,
			"watch_debounce_from": `{"layer":"phases.yaml","file":"phases.yaml","line":6,"column":17}`}},
		// A Duration of 0 reads none, as a timeout of 0 does: no wait.
		{"watch_debounce: 0s\n", map[string]string{"watch": "", "watch_debounce": `"none"`}},
	} {
		doc, err := spec.Parse("phases.yaml", []byte(watchHeader+tc.yaml))
		if err != nil {
			t.Fatal(err)
		}
		plan, err := spec.Resolve(doc, nil, testBase)
		if err != nil {
			t.Fatal(err)
		}
		out, err := json.Marshal(plan)
		if err != nil {
			t.Fatal(err)
		}
		var all map[string]json.RawMessage
		if err := json.Unmarshal(out, &all); err != nil {
			t.Fatal(err)
		}
		for key, want := range tc.want {
			if got := string(all[key]); got != want {
				t.Errorf("%q: the plan's JSON has %s: %s, want %s", tc.yaml, key, got, want)
			}
		}
	}
}

// A spec's frontmatter may carry a key named watch of its own, readable as
// spec.watch like any other; it does not change what the pipeline
// watches (a pipeline: block that tries is refused, see malformed_test).
func TestFrontmatterWatchIsASpecValue(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"phases.yaml": watchHeader + "spec: spec.md\nwatch: [spec.md]\n",
		"spec.md":     "---\nwatch: [other/*.md]\n---\n# Spec\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	plan, err := spec.Load(filepath.Join(dir, "phases.yaml"), "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(plan.Watch, []string{"spec.md"}) || plan.WatchFrom.Layer != spec.LayerPipeline {
		t.Errorf("watch %q from %s, want phases.yaml's [spec.md]", plan.Watch, plan.WatchFrom)
	}
	if got, _ := json.Marshal(plan.SpecValues["watch"]); string(got) != `["other/*.md"]` {
		t.Errorf("spec.watch %s, want [\"other/*.md\"]", got)
	}
}
