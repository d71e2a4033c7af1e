package temporal

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
)

// PlanSource is what a plan is made from, carried in the workflow's
// input: the workflow parses it (a pure function of these bytes) instead
// of reading files, so that a replay on any worker decides with the same
// plan. File and Spec are the absolute paths the plan names; a worker
// runs steps in File's folder.
type PlanSource struct {
	File     string `json:"file"`
	YAML     []byte `json:"yaml"`
	Spec     string `json:"spec,omitempty"`
	SpecText []byte `json:"spec_text,omitempty"`
	// Digest is the plan's digest as the client loaded it: a source that
	// parses to another plan is refused.
	Digest string `json:"digest,omitempty"`
}

// Load parses the plan. It makes no system call (it reads no file, nor
// the working directory): workflow code may call it.
func (p PlanSource) Load() (*spec.Plan, error) {
	doc, err := spec.Parse(p.File, p.YAML)
	if err != nil {
		return nil, err
	}
	var fm *spec.Frontmatter
	if p.Spec != "" {
		// Problems of the frontmatter come back from Resolve, with those
		// of phases.yaml.
		if fm, err = spec.ParseSpec(p.Spec, p.SpecText); fm == nil {
			return nil, err
		}
	}
	// The paths are absolute (ReadPlanSource makes them so): no base
	// folder is needed, and the worker's working directory must not be
	// one.
	plan, err := spec.Resolve(doc, fm, "")
	if err != nil {
		return nil, err
	}
	if p.Digest != "" && plan.Digest != p.Digest {
		return nil, fmt.Errorf("the plan of %s parses to digest %s, not %s", filepath.Base(p.File), plan.Digest, p.Digest)
	}
	return plan, nil
}

// EventRecord is an engine.Event as a workflow's input carries it: its
// type name and JSON, as the session store writes it.
type EventRecord struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// Record encodes an event.
func Record(ev engine.Event) (EventRecord, error) {
	typ, data, err := engine.EncodeEvent(ev)
	return EventRecord{Type: typ, Data: data}, err
}

// MustRecord encodes an event that is known to encode.
func MustRecord(ev engine.Event) EventRecord {
	r, err := Record(ev)
	if err != nil {
		panic(err)
	}
	return r
}

// Event decodes the record.
func (r EventRecord) Event() (engine.Event, error) { return engine.DecodeEvent(r.Type, r.Data) }
