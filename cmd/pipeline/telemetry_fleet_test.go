//go:build temporal

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// On a fleet, the Temporal SDK's tracing interceptor makes a session one
// trace: the client's start of the workflow, the workflow's run and its
// activities on the workers, each under the one before.
func TestTelemetryFleetSessionIsOneTrace(t *testing.T) {
	collector := newOTLPCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	// The workers export as they go, not only when they stop.
	t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "200")
	s := fleetServer(t)
	queue := "q-" + strings.ToLower(t.Name())
	fleetWorkers(t, s, queue, 1)
	dir := fleetProject(t, `version: 1
phases:
  - name: build
    steps: [{name: compile, run: "echo compiled"}]
`)
	r := pipeline(t, dir, "run", "--backend", "temporal", "--temporal", s.HostPort(), "--task-queue", queue)
	if r.code != 0 || strings.Contains(r.stderr, "pipeline: telemetry:") {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var start, run, activity *tracepb.Span
	deadline := time.Now().Add(failsafe)
	for start == nil || run == nil || activity == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the fleet's spans never all came: start %v, workflow %v, activity %v", start, run, activity)
		}
		start, run, activity = nil, nil, nil
		for _, s := range collector.allSpans() {
			switch {
			case s.GetName() == "StartWorkflow:SessionWorkflow":
				start = s
			case s.GetName() == "RunWorkflow:SessionWorkflow":
				run = s
			case strings.HasPrefix(s.GetName(), "RunActivity:RunStep") || strings.HasPrefix(s.GetName(), "RunActivity:"):
				if activity == nil || strings.Contains(s.GetName(), "RunStep") {
					activity = s
				}
			}
		}
		if start == nil || run == nil || activity == nil {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if !bytes.Equal(run.GetTraceId(), start.GetTraceId()) || !bytes.Equal(activity.GetTraceId(), start.GetTraceId()) {
		t.Errorf("not one trace: start %x, workflow %x, activity %x", start.GetTraceId(), run.GetTraceId(), activity.GetTraceId())
	}
	if !bytes.Equal(run.GetParentSpanId(), start.GetSpanId()) {
		t.Errorf("the workflow's run is not under the client's start: parent %x, start %x", run.GetParentSpanId(), start.GetSpanId())
	}
}

func (c *otlpCollector) allSpans() []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*tracepb.Span(nil), c.spans...)
}
