package main

import (
	"os/exec"
	"testing"
)

// TestCobraOnlyIsBuiltAsPipelineWas checks that -startup's reference
// binary takes the Go experiments of the pipeline it is compared with
// (make build's classic garbage collector, where go offers it), and the
// defaults of one built without any.
func TestCobraOnlyIsBuiltAsPipelineWas(t *testing.T) {
	work := t.TempDir()
	experiments := "nogreenteagc"
	if exec.Command("sh", "-c", "GOEXPERIMENT="+experiments+" go env GOEXPERIMENT").Run() != nil {
		experiments = "" // a go without the classic collector: its defaults
	}
	lean := buildHelper(work, "lean", cobraOnly, experiments)
	if got := builtWithExperiments(lean); got != experiments {
		t.Fatalf("a binary built with GOEXPERIMENT=%q says %q", experiments, got)
	}
	if got := builtWithExperiments(buildCobraOnly(work, lean)); got != experiments {
		t.Errorf("cobra-only built as %s (GOEXPERIMENT=%q) says %q", lean, experiments, got)
	}
	plain := buildHelper(work, "plain", cobraOnly, "")
	if got := builtWithExperiments(buildCobraOnly(work, plain)); got != "" {
		t.Errorf("cobra-only built as a binary of the defaults says GOEXPERIMENT=%q", got)
	}
}
