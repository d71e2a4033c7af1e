package main

import (
	"bytes"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The tests' own pipelines export only where they say: a developer's
// OTEL_* variables are not theirs.
func init() {
	outerCI = append(outerCI, "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_HEADERS", "TRACEPARENT")
}

// otlpCollector is an OTLP/HTTP collector on 127.0.0.1 that keeps the
// spans it is sent, decoded with opentelemetry-proto's types.
type otlpCollector struct {
	*httptest.Server
	mu      sync.Mutex
	spans   []*tracepb.Span
	metrics int
	// services are the service.name of the resources sent.
	services []string
	// totals are the last export's metrics: a sum's total over its
	// series, a histogram's count.
	totals map[string]float64
	// arrived says that an export came (awaitSpans).
	arrived chan struct{}
}

func newOTLPCollector(t *testing.T) *otlpCollector {
	c := &otlpCollector{arrived: make(chan struct{}, 1)}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		defer c.mu.Unlock()
		defer func() {
			select {
			case c.arrived <- struct{}{}:
			default: // one unread is enough: the waiter looks at all
			}
		}()
		switch r.URL.Path {
		case "/v1/traces":
			var req coltracepb.ExportTraceServiceRequest
			if err := proto.Unmarshal(body, &req); err != nil {
				t.Errorf("the traces sent are not OTLP: %v", err)
			}
			for _, rs := range req.GetResourceSpans() {
				for _, kv := range rs.GetResource().GetAttributes() {
					if kv.GetKey() == "service.name" {
						c.services = append(c.services, kv.GetValue().GetStringValue())
					}
				}
				for _, ss := range rs.GetScopeSpans() {
					c.spans = append(c.spans, ss.GetSpans()...)
				}
			}
		case "/v1/metrics":
			c.metrics++
			var req colmetricpb.ExportMetricsServiceRequest
			if err := proto.Unmarshal(body, &req); err != nil {
				t.Errorf("the metrics sent are not OTLP: %v", err)
			}
			c.totals = map[string]float64{}
			for _, rm := range req.GetResourceMetrics() {
				for _, sm := range rm.GetScopeMetrics() {
					for _, m := range sm.GetMetrics() {
						for _, p := range m.GetSum().GetDataPoints() {
							c.totals[m.GetName()] += float64(p.GetAsInt()) + p.GetAsDouble()
						}
						for _, p := range m.GetHistogram().GetDataPoints() {
							c.totals[m.GetName()] += float64(p.GetCount())
						}
					}
				}
			}
		default:
			t.Errorf("unexpected path %s", r.URL.Path)
		}
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *otlpCollector) spanNamed(name string) []*tracepb.Span {
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

// A step sees TRACEPARENT naming its own span: the trace of the run, and
// the span exported for that step.
func TestTelemetryStepSeesTraceparentOfItsOwnSpan(t *testing.T) {
	collector := newOTLPCollector(t)
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
name: tp
phases:
  - name: only
    steps:
      - {name: first, run: 'echo "$TRACEPARENT" > first.txt'}
      - {name: second, run: 'echo "$TRACEPARENT" > second.txt'}
`)
	r := pipelineEnv(t, dir, append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL), "run")
	if r.code != 0 || strings.Contains(r.stderr, "telemetry") {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	roots := collector.spanNamed("session tp")
	if len(roots) != 1 {
		t.Fatalf("want one session span, got %d", len(roots))
	}
	for _, step := range []string{"first", "second"} {
		content, err := os.ReadFile(filepath.Join(dir, step+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(strings.TrimSpace(string(content)), "-")
		if len(parts) != 4 || parts[0] != "00" || parts[3] != "01" {
			t.Fatalf("step %s saw TRACEPARENT %q", step, content)
		}
		spans := collector.spanNamed("step " + step)
		if len(spans) != 1 {
			t.Fatalf("want one span of step %s, got %d", step, len(spans))
		}
		if got := hex.EncodeToString(spans[0].GetSpanId()); got != parts[2] {
			t.Errorf("step %s saw span %s, its span is %s", step, parts[2], got)
		}
		if got := hex.EncodeToString(spans[0].GetTraceId()); got != parts[1] || got != hex.EncodeToString(roots[0].GetTraceId()) {
			t.Errorf("step %s saw trace %s; its span's is %s, the session's %x", step, parts[1], got, roots[0].GetTraceId())
		}
	}
}

// An endpoint where nothing answers never holds the run up: it ends as
// it would have, at most ExportTimeout (2 s) after its steps, with one
// warning — whether the port is closed or something there takes the
// connection and says nothing.
func TestTelemetryUnreachableCollectorIsOneWarning(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String()
	closed.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	for name, endpoint := range map[string]string{"closed port": closedURL, "silent server": "http://" + silent.Addr().String()} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "phases.yaml", `version: 1
name: unreachable
phases:
  - name: one
    steps: [{name: a, run: "echo one"}]
  - name: two
    steps: [{name: b, run: 'echo two; date +%s.%N > ended.txt'}]
`)
			r := pipelineEnv(t, dir, append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint), "run")
			exited := time.Now()
			if r.code != 0 {
				t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			content, err := os.ReadFile(filepath.Join(dir, "ended.txt"))
			if err != nil {
				t.Fatal(err)
			}
			secs, err := strconv.ParseFloat(strings.TrimSpace(string(content)), 64)
			if err != nil {
				t.Fatal(err)
			}
			ended := time.Unix(0, int64(secs*1e9))
			if after := exited.Sub(ended); after > 3*time.Second {
				t.Errorf("the run exited %s after its last step ended", after)
			}
			if n := strings.Count(r.stderr, "pipeline: telemetry:"); n != 1 {
				t.Errorf("want one warning, got %d:\n%s", n, r.stderr)
			}
			if !strings.Contains(r.stderr, strings.TrimPrefix(endpoint, "http://")) {
				t.Errorf("the warning does not say where:\n%s", r.stderr)
			}
		})
	}
}

// Without an endpoint, telemetry is off: nothing is kept for it.
func TestTelemetryOffKeepsNothing(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nname: off\nphases:\n  - name: one\n    steps: [{name: a, run: 'echo \"[$TRACEPARENT]\"'}]\n")
	r := pipeline(t, dir, "run")
	if r.code != 0 || !strings.Contains(r.stdout, "[]") || strings.Contains(r.stderr, "telemetry") {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, ".pipeline", "*", "*", "telemetry-trace"))
	more, _ := filepath.Glob(filepath.Join(dir, ".pipeline", "*", "telemetry-trace"))
	if len(matches)+len(more) != 0 {
		t.Errorf("telemetry off kept %v %v", matches, more)
	}
}

// The telemetry: block of phases.yaml configures the export when no
// OTEL_* variable does: its endpoint, service name and resource; the
// metrics go there too.
func TestTelemetryFromPhasesYAML(t *testing.T) {
	collector := newOTLPCollector(t)
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
name: configured
telemetry:
  endpoint: `+collector.URL+`
  service_name: from-yaml
phases:
  - name: only
    steps: [{name: a, run: "echo hi"}]
`)
	if r := pipeline(t, dir, "run"); r.code != 0 || strings.Contains(r.stderr, "pipeline: telemetry:") {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	collector.mu.Lock()
	services, metrics := collector.services, collector.metrics
	collector.mu.Unlock()
	if len(services) != 1 || services[0] != "from-yaml" || metrics != 1 {
		t.Errorf("want one export of traces from service from-yaml and one of metrics, got %v and %d", services, metrics)
	}
	if len(collector.spanNamed("step a")) != 1 {
		t.Errorf("no span of step a")
	}
	collector.mu.Lock()
	totals := collector.totals
	collector.mu.Unlock()
	if totals["pipeline.steps"] != 1 || totals["pipeline.step.duration"] != 1 || totals["pipeline.phase.duration"] != 1 || totals["pipeline.pauses"] != 0 {
		t.Errorf("metrics: %v", totals)
	}
	// OTEL_SDK_DISABLED=true goes over the block: nothing is sent.
	r := pipelineEnv(t, dir, append(os.Environ(), "OTEL_SDK_DISABLED=true"), "run", "--new")
	collector.mu.Lock()
	defer collector.mu.Unlock()
	if r.code != 0 || len(collector.services) != 1 || collector.metrics != 1 {
		t.Errorf("with OTEL_SDK_DISABLED=true: exit %d, exports %v and %d", r.code, collector.services, collector.metrics)
	}
}

// A retry is a new attempt: its own span under the phase, the retry
// scheduled an event of the attempt that failed, a failed step's span an
// error; the retries counted.
func TestTelemetryRetryIsANewAttempt(t *testing.T) {
	collector := newOTLPCollector(t)
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
name: retries
defaults:
  retry:
    when: exit_code != 0
    backoff: duration("10ms")
    escalate_when: attempt > 5
phases:
  - name: flaky
    steps: [{name: try, run: 'if [ -f once ]; then exit 0; fi; touch once; exit 1'}]
`)
	r := pipelineEnv(t, dir, append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL), "run")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	phase := collector.spanNamed("phase flaky")
	first, second := collector.spanNamed("attempt 1"), collector.spanNamed("attempt 2")
	if len(phase) != 1 || len(first) != 1 || len(second) != 1 {
		t.Fatalf("want one phase span and two attempts, got %d, %d, %d", len(phase), len(first), len(second))
	}
	for _, a := range []*tracepb.Span{first[0], second[0]} {
		if !bytes.Equal(a.GetParentSpanId(), phase[0].GetSpanId()) {
			t.Errorf("%s is not under the phase", a.GetName())
		}
	}
	scheduled := false
	for _, ev := range first[0].GetEvents() {
		scheduled = scheduled || ev.GetName() == "retry scheduled"
	}
	if !scheduled {
		t.Errorf("attempt 1 has no retry scheduled event: %v", first[0].GetEvents())
	}
	tries := collector.spanNamed("step try")
	if len(tries) != 2 {
		t.Fatalf("want two spans of step try, got %d", len(tries))
	}
	failed := 0
	for _, s := range tries {
		if s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR {
			failed++
		}
	}
	collector.mu.Lock()
	retries := collector.totals["pipeline.retries"]
	collector.mu.Unlock()
	if failed != 1 || retries != 1 {
		t.Errorf("want one failed step and one retry, got %d and %v", failed, retries)
	}
}
