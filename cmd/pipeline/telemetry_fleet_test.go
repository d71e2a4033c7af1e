//go:build temporal

package main

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
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
	spans := collector.awaitSpans(t, "StartWorkflow:SessionWorkflow", "RunWorkflow:SessionWorkflow", "RunActivity:RunStep")
	start, run, activity := spans[0], spans[1], spans[2]
	if !bytes.Equal(run.GetTraceId(), start.GetTraceId()) || !bytes.Equal(activity.GetTraceId(), start.GetTraceId()) {
		t.Errorf("not one trace: start %x, workflow %x, activity %x", start.GetTraceId(), run.GetTraceId(), activity.GetTraceId())
	}
	if !bytes.Equal(run.GetParentSpanId(), start.GetSpanId()) {
		t.Errorf("the workflow's run is not under the client's start: parent %x, start %x", run.GetParentSpanId(), start.GetSpanId())
	}
}

// A step that a worker runs sees TRACEPARENT of its own span, in the
// session's trace (the one the client's start of the workflow began),
// which the worker exports under the span of the activity that ran the
// step.
func TestTelemetryFleetStepSeesTraceparentOfItsSpan(t *testing.T) {
	collector := newOTLPCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "200")
	s := fleetServer(t)
	queue := "q-" + strings.ToLower(t.Name())
	fleetWorkers(t, s, queue, 1)
	seen := filepath.Join(t.TempDir(), "traceparent")
	dir := fleetProject(t, `version: 1
phases:
  - name: build
    steps: [{name: compile, run: 'echo "$TRACEPARENT" > `+seen+`'}]
`)
	r := pipeline(t, dir, "run", "--backend", "temporal", "--temporal", s.HostPort(), "--task-queue", queue)
	if r.code != 0 || strings.Contains(r.stderr, "pipeline: telemetry:") {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	content, err := os.ReadFile(seen)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(strings.TrimSpace(string(content)), "-")
	if len(parts) != 4 || parts[0] != "00" || len(parts[1]) != 32 || len(parts[2]) != 16 || parts[3] != "01" {
		t.Fatalf("the step saw TRACEPARENT %q", content)
	}
	spans := collector.awaitSpans(t, "StartWorkflow:SessionWorkflow", "RunActivity:RunStep", "step compile")
	start, activity, step := spans[0], spans[1], spans[2]
	if parts[1] != hex.EncodeToString(start.GetTraceId()) {
		t.Errorf("the step's trace %s is not the session's, %x", parts[1], start.GetTraceId())
	}
	if parts[2] != hex.EncodeToString(step.GetSpanId()) || !bytes.Equal(step.GetTraceId(), start.GetTraceId()) {
		t.Errorf("the step's span %s is not the step span the worker exported (trace %x, span %x)", parts[2], step.GetTraceId(), step.GetSpanId())
	}
	if !bytes.Equal(step.GetParentSpanId(), activity.GetSpanId()) {
		t.Errorf("the step span is not under its activity's: parent %x, activity %x", step.GetParentSpanId(), activity.GetSpanId())
	}
}

// awaitSpans waits, export after export, until a span of each name has
// come, and returns the last of each. The client exports as it ends and
// the workers as they go, so they come in no set order.
func (c *otlpCollector) awaitSpans(t *testing.T, names ...string) []*tracepb.Span {
	t.Helper()
	timeout := time.After(failsafe)
	for {
		found := make([]*tracepb.Span, len(names))
		missing := 0
		for i, name := range names {
			if got := c.spanNamed(name); len(got) > 0 {
				found[i] = got[len(got)-1]
			} else {
				missing++
			}
		}
		if missing == 0 {
			return found
		}
		select {
		case <-c.arrived:
		case <-timeout:
			t.Fatalf("after %v, of the spans %q only these came: %v", failsafe, names, found)
		}
	}
}
