package telemetry

import (
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The spans written by hand read back, field by field, with the
// generated types of opentelemetry-proto: what a collector decodes.
func TestEncodedTracesDecodeAsOTLP(t *testing.T) {
	start := time.Date(2026, 11, 27, 10, 0, 0, 123, time.UTC)
	root := &span{ctx: SpanContext{Trace: newTraceID(), Span: newSpanID()}, name: "session demo", kind: kindInternal,
		start: start, end: start.Add(3 * time.Second), status: statusError, statusText: "failed: boom"}
	root.set("pipeline.name", "demo")
	root.set("process.exit.code", int64(-2))
	root.set("pipeline.cost_usd", 0.25)
	root.set("pipeline.step.unfinished", true)
	root.set("pipeline.files", []string{"a.go", "b.go"})
	first := SpanContext{Trace: newTraceID(), Span: newSpanID()}
	root.links = []SpanContext{first}
	child := root.child("step build", start.Add(time.Second))
	child.end = start.Add(2 * time.Second)
	child.addEvent("trigger", start.Add(1500*time.Millisecond), attr{"pipeline.trigger", "tokens"})

	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(encodeTraces(map[string]string{"service.name": "svc"}, "v1.2.3", []*span{root, child}), &req); err != nil {
		t.Fatal(err)
	}
	rs := req.GetResourceSpans()
	if len(rs) != 1 || len(rs[0].GetScopeSpans()) != 1 {
		t.Fatalf("want one resource and one scope: %v", &req)
	}
	if got := attrsOf(rs[0].GetResource().GetAttributes()); got["service.name"] != "svc" {
		t.Errorf("resource: %v", got)
	}
	ss := rs[0].GetScopeSpans()[0]
	if ss.GetScope().GetName() != ScopeName || ss.GetScope().GetVersion() != "v1.2.3" {
		t.Errorf("scope: %v", ss.GetScope())
	}
	spans := ss.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("want 2 spans, got %d", len(spans))
	}
	r, c := spans[0], spans[1]
	if [16]byte(r.GetTraceId()) != root.ctx.Trace || [8]byte(r.GetSpanId()) != root.ctx.Span || len(r.GetParentSpanId()) != 0 {
		t.Errorf("root ids: %x %x %x", r.GetTraceId(), r.GetSpanId(), r.GetParentSpanId())
	}
	if r.GetName() != "session demo" || r.GetKind() != tracepb.Span_SPAN_KIND_INTERNAL ||
		r.GetStartTimeUnixNano() != uint64(start.UnixNano()) || r.GetEndTimeUnixNano() != uint64(start.Add(3*time.Second).UnixNano()) {
		t.Errorf("root: %v", r)
	}
	got := attrsOf(r.GetAttributes())
	if got["pipeline.name"] != "demo" || got["process.exit.code"] != int64(-2) || got["pipeline.cost_usd"] != 0.25 ||
		got["pipeline.step.unfinished"] != true || len(got["pipeline.files"].([]string)) != 2 {
		t.Errorf("root attributes: %v", got)
	}
	if r.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR || r.GetStatus().GetMessage() != "failed: boom" {
		t.Errorf("status: %v", r.GetStatus())
	}
	if len(r.GetLinks()) != 1 || [16]byte(r.GetLinks()[0].GetTraceId()) != first.Trace || [8]byte(r.GetLinks()[0].GetSpanId()) != first.Span {
		t.Errorf("links: %v", r.GetLinks())
	}
	if [8]byte(c.GetParentSpanId()) != root.ctx.Span || [16]byte(c.GetTraceId()) != root.ctx.Trace {
		t.Errorf("child is not the root's: %v", c)
	}
	if ev := c.GetEvents(); len(ev) != 1 || ev[0].GetName() != "trigger" || attrsOf(ev[0].GetAttributes())["pipeline.trigger"] != "tokens" ||
		ev[0].GetTimeUnixNano() != uint64(start.Add(1500*time.Millisecond).UnixNano()) {
		t.Errorf("events: %v", c.GetEvents())
	}
}

// Metrics written by hand read back as OTLP sums and histograms.
func TestEncodedMetricsDecodeAsOTLP(t *testing.T) {
	start := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	m := newMeters(start)
	m.add(MetricSteps, 1, true, attr{"pipeline.phase", "design"})
	m.add(MetricSteps, 1, true, attr{"pipeline.phase", "design"})
	m.add(MetricCost, 0.5, false, attr{"pipeline.phase", "design"})
	m.record(MetricStepDuration, 0.3, attr{"pipeline.phase", "design"})
	m.record(MetricStepDuration, 7, attr{"pipeline.phase", "design"})

	var req colmetricpb.ExportMetricsServiceRequest
	if err := proto.Unmarshal(encodeMetrics(map[string]string{"service.name": "svc"}, "dev", start, start.Add(time.Minute), m.snapshot()), &req); err != nil {
		t.Fatal(err)
	}
	metrics := req.GetResourceMetrics()[0].GetScopeMetrics()[0].GetMetrics()
	byName := map[string]int{}
	for i, mt := range metrics {
		byName[mt.GetName()] = i
	}
	steps := metrics[byName[MetricSteps]]
	if steps.GetUnit() != "{step}" || !steps.GetSum().GetIsMonotonic() || steps.GetSum().GetDataPoints()[0].GetAsInt() != 2 ||
		steps.GetSum().GetAggregationTemporality() != 2 {
		t.Errorf("steps: %v", steps)
	}
	if cost := metrics[byName[MetricCost]].GetSum().GetDataPoints()[0]; cost.GetAsDouble() != 0.5 ||
		cost.GetStartTimeUnixNano() != uint64(start.UnixNano()) || attrsOf(cost.GetAttributes())["pipeline.phase"] != "design" {
		t.Errorf("cost: %v", cost)
	}
	h := metrics[byName[MetricStepDuration]].GetHistogram()
	p := h.GetDataPoints()[0]
	if p.GetCount() != 2 || p.GetSum() != 7.3 || p.GetMin() != 0.3 || p.GetMax() != 7 ||
		len(p.GetExplicitBounds()) != len(durationBounds) || len(p.GetBucketCounts()) != len(durationBounds)+1 {
		t.Fatalf("histogram: %v", p)
	}
	// 0.3 s in (0.1, 0.5], 7 s in (5, 10].
	if p.GetBucketCounts()[1] != 1 || p.GetBucketCounts()[4] != 1 {
		t.Errorf("buckets: %v over %v", p.GetBucketCounts(), p.GetExplicitBounds())
	}
}

func attrsOf(kvs []*commonpb.KeyValue) map[string]any {
	out := map[string]any{}
	for _, kv := range kvs {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.GetKey()] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.GetKey()] = v.IntValue
		case *commonpb.AnyValue_DoubleValue:
			out[kv.GetKey()] = v.DoubleValue
		case *commonpb.AnyValue_BoolValue:
			out[kv.GetKey()] = v.BoolValue
		case *commonpb.AnyValue_ArrayValue:
			var list []string
			for _, e := range v.ArrayValue.GetValues() {
				list = append(list, e.GetStringValue())
			}
			out[kv.GetKey()] = list
		}
	}
	return out
}
