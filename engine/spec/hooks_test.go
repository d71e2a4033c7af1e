package spec_test

import (
	"reflect"
	"testing"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

// A hook is a shell line or a list of them; a spec's pipeline.on replaces
// phases.yaml's commands event by event.
func TestHooksDecodeAndMerge(t *testing.T) {
	doc, err := spec.Parse("phases.yaml", []byte(`version: 1
on:
  paused: 'notify-send "pipeline: $PIPELINE_REASON"'
  failed: [./page-me.sh, echo failed >> log]
  completed: echo done
phases: [{name: build, steps: [{run: make}]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	fm, err := spec.ParseSpec("spec.md", []byte("---\npipeline:\n  on:\n    completed: [echo spec done]\n    needs-human: ./call-me\n---\n"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Resolve(doc, fm, testBase)
	if err != nil {
		t.Fatal(err)
	}
	want := spec.Hooks{
		Paused:     spec.Commands{`notify-send "pipeline: $PIPELINE_REASON"`},
		Failed:     spec.Commands{"./page-me.sh", "echo failed >> log"},
		Completed:  spec.Commands{"echo spec done"},
		NeedsHuman: spec.Commands{"./call-me"},
	}
	if !reflect.DeepEqual(plan.Hooks, want) {
		t.Errorf("hooks %#v\nwant %#v", plan.Hooks, want)
	}
	if got := plan.Hooks.For(spec.HookFailed); !reflect.DeepEqual(got, want.Failed) {
		t.Errorf("For(failed) = %v", got)
	}
}
