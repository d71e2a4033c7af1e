package engine_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/pipeline-dev/pipeline/engine"
)

// SpecStatusChanged only records: the state keeps the change and the
// new plan digest, nothing else moves, and no action (or effect) comes
// of it, whether the session runs or has completed. It survives the
// event log's encoding.
func TestSpecStatusChangedOnlyRecords(t *testing.T) {
	plan := planOf(t, "version: 1\nagent: {kind: claude}\nphases:\n  - name: one\n")
	s, _ := newSession(t, plan)
	before := s.state
	change := engine.SpecStatusChange{Spec: "spec.md", From: "planned", To: "in-progress", At: s.now}
	ev := engine.SpecStatusChanged{At: s.now, Change: change, Plan: "new-digest"}
	if actions := s.send(ev); len(actions) != 0 || len(s.effects) != 0 {
		t.Fatalf("actions %#v, effects %#v: want none", actions, s.effects)
	}
	if s.state.SpecStatus == nil || !reflect.DeepEqual(*s.state.SpecStatus, change) || s.state.PlanDigest != "new-digest" {
		t.Fatalf("state keeps %+v with digest %q", s.state.SpecStatus, s.state.PlanDigest)
	}
	after := s.state
	after.SpecStatus, after.PlanDigest = before.SpecStatus, before.PlanDigest
	if !reflect.DeepEqual(deepCopy(t, after), deepCopy(t, before)) {
		t.Errorf("the event moved more than the spec status:\nbefore %+v\nafter  %+v", before, after)
	}
	if r := engine.Report(plan, s.state); r.SpecStatus == nil || r.SpecStatus.To != "in-progress" {
		t.Errorf("the status report has no spec status: %+v", r.SpecStatus)
	}
	typ, payload, err := engine.EncodeEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := engine.DecodeEvent(typ, payload)
	if err != nil || !reflect.DeepEqual(decoded, ev) {
		var shown any
		json.Unmarshal(payload, &shown)
		t.Errorf("the event does not survive the log: %v, %#v from %v", err, decoded, shown)
	}
}
