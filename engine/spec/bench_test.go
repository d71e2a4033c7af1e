package spec_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

// hundredPhases is a phases.yaml of 100 phases, each with its own triggers,
// retry policy, two steps and a done_when, so that every phase compiles
// expressions of its own.
func hundredPhases() []byte {
	var b strings.Builder
	b.WriteString(`version: 1
name: big
agent: {kind: claude, model: sonnet, args: [--permission-mode, acceptEdits], feature: big}
defaults:
  pause_when:
    tokens: tokens > 15000
    time: elapsed > duration("30m")
    checkpoint: checkpoint
    failure: exit_code != 0
  restart_when:
    errors: consecutive_errors >= 3
    context: context_tokens > 350000
  retry:
    when: exit_code != 0 || timed_out
    backoff: duration("10s") * consecutive_errors
    escalate_when: attempt > 3
phases:
`)
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&b, `  - name: phase-%d
    prompt: |
      Do part %d of the work described in the spec, then run the tests.
    steps:
      - agent: {model: opus}
      - name: test
        run: go test ./... -run 'Part%d'
        timeout: 10m
    pause_when:
      tokens: tokens > %d
      cost: cost_usd > %d.5 && spec.priority != "high"
    restart_when: {context: context_tokens > %d}
    retry: {backoff: duration("%ds") * consecutive_errors}
    done_when: steps.test.exit_code == 0 && files_changed > %d
`, i, i, i, 10000+i, i, 300000+i, i+1, i%5)
	}
	return []byte(b.String())
}

func BenchmarkLoad100Phases(b *testing.B) {
	content := hundredPhases()
	b.SetBytes(int64(len(content)))
	b.ReportAllocs()
	for b.Loop() {
		doc, err := spec.Parse("phases.yaml", content)
		if err != nil {
			b.Fatal(err)
		}
		plan, err := spec.Resolve(doc, nil, testBase)
		if err != nil {
			b.Fatal(err)
		}
		if len(plan.Phases) != 100 {
			b.Fatalf("%d phases", len(plan.Phases))
		}
	}
}

func TestHundredPhasesLoad(t *testing.T) {
	doc, err := spec.Parse("phases.yaml", hundredPhases())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Resolve(doc, nil, testBase)
	if err != nil {
		t.Fatal(err)
	}
	last := plan.Phases[99]
	if last.Name != "phase-99" || len(last.PauseWhen) != 5 || last.DoneWhen == nil || last.Steps[0].Agent.Value.Model != "opus" {
		t.Errorf("phase 99: %+v", last)
	}
}

// BenchmarkHostileInputs is the cost of refusing each hostile row: before
// issue 9 they took from 16 s to minutes, and up to 22 GB.
func BenchmarkHostileInputs(b *testing.B) {
	for _, tc := range hostileCases {
		b.Run(tc.name, func(b *testing.B) {
			dir := b.TempDir()
			path := filepath.Join(dir, "phases.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
				b.Fatal(err)
			}
			if tc.spec != "" {
				if err := os.WriteFile(filepath.Join(dir, "spec.md"), []byte(tc.spec), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := spec.Load(path, ""); err == nil {
					b.Fatal("a hostile input loaded")
				}
			}
		})
	}
}
