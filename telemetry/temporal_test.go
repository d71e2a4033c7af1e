//go:build temporal

package telemetry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	oteltrace "go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// traceCollector is an OTLP/HTTP endpoint on 127.0.0.1 that keeps the
// spans sent to it, decoded with opentelemetry-proto's types.
type traceCollector struct {
	*httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
}

func newTraceCollector(t *testing.T) *traceCollector {
	c := &traceCollector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/traces" {
			return
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Errorf("the traces sent are not OTLP: %v", err)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				c.spans = append(c.spans, ss.GetSpans()...)
			}
		}
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *traceCollector) named(name string) []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range c.spans {
		if s.GetName() == name {
			out = append(out, s)
		}
	}
	return out
}

// workerTelemetry is the Telemetry of a worker process exporting to
// collector, installed (as TemporalStep finds it) until the test ends,
// and on (as the tracing interceptor turns it on).
func workerTelemetry(t *testing.T, collector *traceCollector) *Telemetry {
	tel := &Telemetry{Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL}), Warn: io.Discard}
	cfg, ok := Resolve(tel.Getenv, nil)
	if !ok {
		t.Fatal("no telemetry configured")
	}
	tel.mu.Lock()
	tel.activate(cfg)
	tel.mu.Unlock()
	previous := installed.Swap(tel)
	t.Cleanup(func() {
		installed.Store(previous)
		tel.Finish()
	})
	return tel
}

// workerSession is a session of a one-step pipeline opened in a worker's
// store.
func workerSession(t *testing.T) *session.Session {
	dir := t.TempDir()
	file := filepath.Join(dir, "phases.yaml")
	yaml := "version: 1\nname: fleet\nphases:\n  - name: build\n    steps: [{name: compile, run: 'make all'}]\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Load(file, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(dir, ".pipeline"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := session.Open(context.Background(), st, session.Options{File: file, Plan: plan, Create: session.Always})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// activityContext is the context of an activity whose span the tracing
// interceptor started.
func activityContext() (context.Context, SpanContext) {
	activity := SpanContext{Trace: newTraceID(), Span: newSpanID()}
	sc := oteltrace.NewSpanContext(oteltrace.SpanContextConfig{TraceID: oteltrace.TraceID(activity.Trace),
		SpanID: oteltrace.SpanID(activity.Span), TraceFlags: oteltrace.FlagsSampled, Remote: true})
	return oteltrace.ContextWithSpanContext(context.Background(), sc), activity
}

// A step a worker runs gets TRACEPARENT of a step span of its own, in
// the activity's trace and under the activity's span, which ends with
// the step's result and is exported.
func TestTemporalStepSpanIsUnderTheActivityAndItsTraceparent(t *testing.T) {
	collector := newTraceCollector(t)
	tel := workerTelemetry(t, collector)
	s := workerSession(t)
	ctx, activity := activityContext()

	finished := TemporalStep(ctx, s, engine.StartStep{Phase: 0, Step: 0, Attempt: 2})
	env := tel.StepEnv(s)
	if len(env) != 1 || !strings.HasPrefix(env[0], "TRACEPARENT=") {
		t.Fatalf("the step's environment: %q", env)
	}
	seen, ok := ParseTraceparent(strings.TrimPrefix(env[0], "TRACEPARENT="))
	if !ok || seen.Trace != activity.Trace || seen.Span == activity.Span {
		t.Fatalf("TRACEPARENT %q: want the activity's trace %x and a span of its own", env[0], activity.Trace)
	}
	finished(engine.StepResult{ExitCode: 3})
	if env := tel.StepEnv(s); env != nil {
		t.Errorf("after the step, the session still hands out %q", env)
	}
	tel.Export(context.Background())

	spans := collector.named("step compile")
	if len(spans) != 1 {
		t.Fatalf("want one step span exported, got %d", len(spans))
	}
	sp := spans[0]
	if [16]byte(sp.GetTraceId()) != activity.Trace || [8]byte(sp.GetSpanId()) != seen.Span || [8]byte(sp.GetParentSpanId()) != activity.Span {
		t.Errorf("step span trace %x span %x parent %x; want trace %x span %x parent %x",
			sp.GetTraceId(), sp.GetSpanId(), sp.GetParentSpanId(), activity.Trace, seen.Span, activity.Span)
	}
	attrs := attrsOf(sp.GetAttributes())
	if attrs["pipeline.phase"] != "build" || attrs["pipeline.attempt"] != int64(2) || attrs["process.exit.code"] != int64(3) ||
		attrs["pipeline.step.run"] != "make all" || attrs["pipeline.step.outcome"] != "failed" {
		t.Errorf("step span attributes: %v", attrs)
	}
	if sp.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("a step that exited 3 has status %v", sp.GetStatus())
	}
}

// Without the tracing interceptor's span (telemetry off on the worker),
// a step gets no TRACEPARENT and no span.
func TestTemporalStepWithoutTheActivitySpanIsNothing(t *testing.T) {
	collector := newTraceCollector(t)
	tel := workerTelemetry(t, collector)
	s := workerSession(t)
	finished := TemporalStep(context.Background(), s, engine.StartStep{})
	if env := tel.StepEnv(s); env != nil {
		t.Errorf("the step's environment: %q", env)
	}
	finished(engine.StepResult{})
	tel.mu.Lock()
	ended := len(tel.ended)
	tel.mu.Unlock()
	if ended != 0 {
		t.Errorf("%d spans ended", ended)
	}
}

// A worker that stops while a step runs exports the step's span,
// unfinished; the step's end after that adds nothing.
func TestTemporalStepUnfinishedWhenTheWorkerStops(t *testing.T) {
	collector := newTraceCollector(t)
	tel := workerTelemetry(t, collector)
	s := workerSession(t)
	ctx, _ := activityContext()
	finished := TemporalStep(ctx, s, engine.StartStep{})
	tel.Finish()
	finished(engine.StepResult{})
	tel.mu.Lock()
	ended := len(tel.ended)
	tel.mu.Unlock()
	spans := collector.named("step compile")
	if len(spans) != 1 || ended != 0 {
		t.Fatalf("want the one step span exported at the end, nothing after: %d exported, %d ended after", len(spans), ended)
	}
	if attrsOf(spans[0].GetAttributes())["pipeline.step.unfinished"] != true {
		t.Errorf("the step span does not say it is unfinished: %v", spans[0].GetAttributes())
	}
}
