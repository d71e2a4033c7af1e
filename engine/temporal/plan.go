package temporal

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"

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

// Load parses the plan, or gives the one this process parsed from the
// same source before. It makes no system call (it reads no file, nor
// the working directory): workflow code may call it; what it gives is a
// pure function of the source's bytes, and a plan is never changed once
// made (spec's rule), so the plans are shared.
func (p PlanSource) Load() (*spec.Plan, error) {
	key := p.memoKey()
	if plan := parsedPlans.recall(key); plan != nil {
		return plan, nil
	}
	plan, err := p.parse()
	if err == nil {
		parsedPlans.remember(key, plan)
	}
	return plan, err
}

// parsedPlans are the plans this process parsed from a PlanSource. A
// worker parses a session's plan for each of its workflow tasks that is
// not in the SDK's cache and for each activity (a step, a checkpoint,
// the memory intake before each step): a tenth of a worker's CPU on a
// fleet of short pipelines, for the same few bytes each time.
var parsedPlans = &planMemo{}

// maxParsedPlans bounds what a worker keeps: the plans of the sessions
// it runs at once, and then some.
const maxParsedPlans = 64

// planMemo is the plans by the digest of their source.
type planMemo struct {
	mu    sync.Mutex
	plans map[[sha256.Size]byte]*spec.Plan
}

func (m *planMemo) recall(key [sha256.Size]byte) *spec.Plan {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.plans[key]
}

func (m *planMemo) remember(key [sha256.Size]byte, plan *spec.Plan) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.plans) >= maxParsedPlans || m.plans == nil {
		m.plans = make(map[[sha256.Size]byte]*spec.Plan, maxParsedPlans)
	}
	m.plans[key] = plan
}

// memoKey is the digest of every field of the source, each with its
// length, so that no two sources share one.
func (p PlanSource) memoKey() [sha256.Size]byte {
	h := sha256.New()
	for _, field := range [][]byte{[]byte(p.File), p.YAML, []byte(p.Spec), p.SpecText, []byte(p.Digest)} {
		_, _ = h.Write(binary.AppendUvarint(nil, uint64(len(field))))
		_, _ = h.Write(field)
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}

// parse makes the plan from the source.
func (p PlanSource) parse() (*spec.Plan, error) {
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
