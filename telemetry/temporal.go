//go:build temporal

package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
)

// TemporalInterceptors are the Temporal client's interceptors when
// telemetry is configured by the OTEL_* variables: the SDK's
// OpenTelemetry tracing interceptor, whose spans (the workflow started,
// run, signalled; each activity) carry their context in the workflow's
// headers, so that a fleet session is one trace from the client through
// the workflow to each activity on each worker. Workers made from the
// client inherit it. Its spans are exported with the sessions' (the
// periodic export of a worker, and the one at its end). nil when
// telemetry is off or not installed (the pipeline-temporal binary only
// links this).
func TemporalInterceptors() []interceptor.ClientInterceptor {
	t := installed.Load()
	if t == nil {
		return nil
	}
	cfg, ok := Resolve(t.Getenv, nil)
	if !ok {
		return nil
	}
	t.mu.Lock()
	if !t.on {
		t.activate(cfg)
	}
	t.mu.Unlock()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSyncer(sdkExporter{t}))
	tracing, err := opentelemetry.NewTracingInterceptor(opentelemetry.TracerOptions{Tracer: provider.Tracer(ScopeName)})
	if err != nil {
		t.warn(fmt.Sprintf("the Temporal tracing interceptor: %v", err))
		return nil
	}
	return []interceptor.ClientInterceptor{tracing}
}

// TemporalStep starts the span of a step that a fleet worker runs,
// under the span of the activity running it (the tracing interceptor's,
// which ctx carries), and makes it the step's TRACEPARENT (StepEnv): what
// the step does joins the session's one trace. A step span rather than
// the activity's own, as in a local run: it names the step, its phase,
// attempt and agent, and ends with what the step left (exit code,
// tokens, cost), while the activity's span also covers the worker's
// opening of the session and is retried as a whole. The worker records
// no event of the step (the workflow does), so its span is made here, not
// from events; finished ends it with the step's result and counts the
// step in the worker's metrics. A no-op when ctx carries no span
// (telemetry off or not installed).
func TemporalStep(ctx context.Context, s *session.Session, start engine.StartStep) (finished func(engine.StepResult)) {
	noop := func(engine.StepResult) {}
	t := installed.Load()
	parent := oteltrace.SpanContextFromContext(ctx)
	if t == nil || !parent.IsValid() || start.Phase < 0 || start.Phase >= len(s.Plan.Phases) ||
		start.Step < 0 || start.Step >= len(s.Plan.Phases[start.Phase].Steps) {
		return noop
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.on {
		return noop
	}
	activity := &span{ctx: SpanContext{Trace: TraceID(parent.TraceID()), Span: SpanID(parent.SpanID())}}
	phase := &s.Plan.Phases[start.Phase]
	tr := &trace{pipeline: s.X.Meta.Pipeline, phaseIndex: -1, redact: s.Redactor().String}
	tr.step = stepSpan(activity, s, phase, &phase.Steps[start.Step], start.Attempt, tr.redact, t.now())
	if t.workerSteps == nil {
		t.workerSteps = map[*session.Session]*trace{}
	}
	t.workerSteps[s] = tr
	return func(res engine.StepResult) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.workerSteps[s] != tr {
			return // Finish ended it: the worker stopped first
		}
		delete(t.workerSteps, s)
		t.endStep(s, tr, res, t.now())
	}
}

// sdkExporter hands the OpenTelemetry SDK's spans to the exporter here.
type sdkExporter struct{ t *Telemetry }

func (e sdkExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	converted := make([]*span, 0, len(spans))
	for _, s := range spans {
		converted = append(converted, fromSDK(s))
	}
	e.t.mu.Lock()
	e.t.ended = append(e.t.ended, converted...)
	e.t.mu.Unlock()
	return nil
}

func (sdkExporter) Shutdown(context.Context) error { return nil }

// fromSDK is an SDK span as a span here. The SDK's kinds are numbered
// as OTLP's; its status codes are not.
func fromSDK(s sdktrace.ReadOnlySpan) *span {
	sc := s.SpanContext()
	out := &span{ctx: SpanContext{Trace: TraceID(sc.TraceID()), Span: SpanID(sc.SpanID())}, name: s.Name(),
		kind: int(s.SpanKind()), start: s.StartTime(), end: s.EndTime(), attrs: fromSDKAttrs(s.Attributes())}
	if p := s.Parent(); p.IsValid() {
		out.parent = SpanID(p.SpanID())
	}
	for _, ev := range s.Events() {
		out.events = append(out.events, event{name: ev.Name, at: ev.Time, attrs: fromSDKAttrs(ev.Attributes)})
	}
	for _, l := range s.Links() {
		out.links = append(out.links, SpanContext{Trace: TraceID(l.SpanContext.TraceID()), Span: SpanID(l.SpanContext.SpanID())})
	}
	switch s.Status().Code {
	case codes.Error:
		out.status, out.statusText = statusError, s.Status().Description
	case codes.Ok:
		out.status = statusOK
	}
	return out
}

func fromSDKAttrs(kvs []attribute.KeyValue) []attr {
	out := make([]attr, 0, len(kvs))
	for _, kv := range kvs {
		var v any
		switch kv.Value.Type() {
		case attribute.BOOL:
			v = kv.Value.AsBool()
		case attribute.INT64:
			v = kv.Value.AsInt64()
		case attribute.FLOAT64:
			v = kv.Value.AsFloat64()
		case attribute.STRINGSLICE:
			v = kv.Value.AsStringSlice()
		default:
			v = kv.Value.String()
		}
		out = append(out, attr{string(kv.Key), v})
	}
	return out
}
