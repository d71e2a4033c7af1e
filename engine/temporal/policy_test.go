package temporal_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/mock"

	"github.com/pipeline-dev/pipeline/engine/temporal"
	"github.com/pipeline-dev/pipeline/internal/policytest"
)

// TestPolicyTableMocked runs the policy paths every driver shares (the
// local driver runs the same table) with the step activity mocked by each
// case's script.
func TestPolicyTableMocked(t *testing.T) {
	for _, c := range policytest.Cases {
		t.Run(c.Name, func(t *testing.T) {
			r := newRun(t, c.YAML)
			r.env.OnActivity(temporal.ActivityRunStep, mock.Anything, mock.Anything).Return(
				func(_ context.Context, in temporal.StepInput) (temporal.StepOutput, error) {
					return temporal.StepOutput{Result: c.Script(in.Start)}, nil
				})
			s := r.execute()
			if diff := c.Check(s, r.sleeps()); diff != "" {
				t.Fatal(diff)
			}
		})
	}
}

// TestPolicyTableRealActivity runs the same table with the real activity:
// each run: step is a shell command run by the step executor on this
// worker.
func TestPolicyTableRealActivity(t *testing.T) {
	for _, c := range policytest.Cases {
		t.Run(c.Name, func(t *testing.T) {
			r := newRun(t, c.YAML)
			s := r.execute()
			if diff := c.Check(s, r.sleeps()); diff != "" {
				t.Fatal(diff)
			}
		})
	}
}
