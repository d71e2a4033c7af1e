package app

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/redact"
)

// PlanResponse is the merged plan of a pipeline and its spec: every
// phase with its steps, triggers and policies, each value with its
// origin.
type PlanResponse struct {
	// JSON is `pipeline plan -o json`, redacted.
	JSON json.RawMessage
	// Plan is the plan with its agents' secret variables shown by name.
	// Its other values (a step's command line, a prompt) are as written:
	// a surface that renders it passes what it renders through Redactor.
	Plan *spec.Plan
	// Redactor redacts what a session of this plan would redact.
	Redactor *redact.Redactor
}

// Plan merges the built-in defaults, phases.yaml and the spec's
// frontmatter.
func Plan(_ context.Context, p Pipeline) (*PlanResponse, error) {
	plan, err := p.LoadPlan()
	if err != nil {
		return nil, err
	}
	// The plan as shown holds no secret: its agents' secret variables
	// are shown by name, and the rest is redacted as a session would.
	r := session.NewRedactor(plan)
	hideAgentSecrets(plan)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(plan); err != nil {
		return nil, err
	}
	return &PlanResponse{JSON: json.RawMessage(r.String(b.String())), Plan: plan, Redactor: r}, nil
}

// hideAgentSecrets replaces the values of the plan's agent environment
// variables whose names say they hold secrets, however short, with their
// placeholder. The plan is the caller's to change.
func hideAgentSecrets(plan *spec.Plan) {
	for pi := range plan.Phases {
		for si := range plan.Phases[pi].Steps {
			agent := plan.Phases[pi].Steps[si].Agent
			if agent == nil {
				continue
			}
			for name := range agent.Value.Env {
				if redact.SecretName(name) {
					agent.Value.Env[name] = redact.Replacement(name)
				}
			}
		}
	}
}
