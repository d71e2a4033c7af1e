package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
)

// WithoutHumanGates returns a copy of the plan in which every phase
// advances by itself (auto_advance: true), as pipeline run and resume
// --no-human-gates run it; p is left as it is, and no file changes.
//
// The copy is another plan, so it has another digest: a session records
// the digest of the plan its decisions were made with, and it must not
// claim phases.yaml's plan as written when a flag changed it. The digest
// is derived from p's, so that the same files and the same flag always
// name the same plan.
func (p *Plan) WithoutHumanGates() *Plan {
	q := *p
	q.Phases = slices.Clone(p.Phases)
	for i := range q.Phases {
		if !q.Phases[i].AutoAdvance.Value {
			q.Phases[i].AutoAdvance = Setting[bool]{Value: true, From: Origin{Layer: LayerFlag}}
		}
	}
	q.Digest = derivedDigest(p.Digest, "no-human-gates")
	q.redigest = p.derivedRedigest("no-human-gates")
	return &q
}

// derivedRedigest is p's redigest followed by change.
func (p *Plan) derivedRedigest(change string) func([]byte) string {
	if p.redigest == nil {
		return nil
	}
	return func(block []byte) string { return derivedDigest(p.redigest(block), change) }
}

// derivedDigest names the plan made from the plan of digest by change.
func derivedDigest(digest, change string) string {
	h := sha256.New()
	fmt.Fprintf(h, "pipeline derived plan\n%s\n%s\n", digest, change)
	return hex.EncodeToString(h.Sum(nil))
}

// WithAgent returns a copy of the plan whose agent steps run the agent
// kind (when not "") and the model (when not ""), as pipeline replay
// --agent and --model run them; p is left as it is. Another kind starts
// from scratch, as a phase's agent of another kind does when plans
// merge: the kind, the model, and the feature kept; the old kind's
// command, args and env are dropped. Its digest is derived from p's.
func (p *Plan) WithAgent(kind, model string) *Plan {
	if kind == "" && model == "" {
		return p
	}
	q := *p
	q.Phases = slices.Clone(p.Phases)
	for i := range q.Phases {
		q.Phases[i].Steps = slices.Clone(q.Phases[i].Steps)
		for j := range q.Phases[i].Steps {
			step := &q.Phases[i].Steps[j]
			if step.Agent == nil {
				continue
			}
			a := step.Agent.Value
			if kind != "" && kind != a.Kind {
				a = Agent{Kind: kind, Feature: a.Feature}
			}
			if model != "" {
				a.Model = model
			}
			step.Agent = &Setting[Agent]{Value: a, From: Origin{Layer: LayerFlag}}
		}
	}
	q.Digest = derivedDigest(p.Digest, "agent "+kind+"\nmodel "+model)
	q.redigest = p.derivedRedigest("agent " + kind + "\nmodel " + model)
	return &q
}
