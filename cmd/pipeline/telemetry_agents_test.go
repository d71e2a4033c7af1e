//go:build agentclis

package main

import (
	"bytes"
	"slices"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// A compaction is told on the span open when it happens, the design's
// attempt (its step has ended): its start (the turn left more context
// than compact_when allows), then its end (the working set written),
// after the step's end. The build, which does not compact, tells none.
func TestTelemetryCompactionIsASpanEvent(t *testing.T) {
	collector := newOTLPCollector(t)
	r := newClaudeRun(t, compactionPhases)
	r.env = append(r.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL)
	r.mock.SetUsage(5000, 50)
	r.mock.SetReplyFunc(func(prompt string) string {
		if compactionPrompt(prompt) {
			return "```json\n" + `{"summary": "the design is drafted", "pinned_facts": [], "decisions": [], "open_tasks": [], "files_touched": []}` + "\n```\n"
		}
		return "Done.\n"
	})
	r.run(t, 0)
	design, build := collector.spanNamed("phase design"), collector.spanNamed("phase build")
	if len(design) != 1 || len(build) != 1 {
		t.Fatalf("want one span of each phase: design %d, build %d", len(design), len(build))
	}
	var designAttempt, designStep *tracepb.Span
	for _, s := range collector.spanNamed("attempt 1") {
		if bytes.Equal(s.GetParentSpanId(), design[0].GetSpanId()) {
			designAttempt = s
		}
	}
	if designAttempt == nil {
		t.Fatal("no span of the design's attempt")
	}
	for _, s := range collector.spanNamed("step agent") {
		if bytes.Equal(s.GetParentSpanId(), designAttempt.GetSpanId()) {
			designStep = s
		}
	}
	events := designAttempt.GetEvents()
	names := make([]string, len(events))
	for i, e := range events {
		names[i] = e.GetName()
	}
	if !slices.Equal(names, []string{"compaction started", "compaction"}) {
		t.Fatalf("the design's attempt tells %q, want the compaction's start and end", names)
	}
	if designStep == nil || events[0].GetTimeUnixNano() < designStep.GetEndTimeUnixNano() ||
		events[1].GetTimeUnixNano() < events[0].GetTimeUnixNano() {
		t.Errorf("the compaction is not after the design's step (%v): %v", designStep, events)
	}
	collector.mu.Lock()
	defer collector.mu.Unlock()
	for _, s := range collector.spans {
		for _, e := range s.GetEvents() {
			if s != designAttempt && (e.GetName() == "compaction" || e.GetName() == "compaction started") {
				t.Errorf("span %s tells %s too", s.GetName(), e.GetName())
			}
		}
	}
}
