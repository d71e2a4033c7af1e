package telemetry

import (
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

func env(vars map[string]string) Getenv { return func(k string) string { return vars[k] } }

func TestResolveIsOffWithoutAnEndpointOrWhenDisabled(t *testing.T) {
	if _, ok := Resolve(env(nil), nil); ok {
		t.Error("on with nothing set")
	}
	if _, ok := Resolve(env(nil), &spec.Telemetry{ServiceName: "x"}); ok {
		t.Error("on with a service name and no endpoint")
	}
	if _, ok := Resolve(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:4318", "OTEL_SDK_DISABLED": "TRUE"}), nil); ok {
		t.Error("on under OTEL_SDK_DISABLED=true")
	}
}

// The OTEL_* variables go over the telemetry: block, key by key.
func TestResolveEnvironmentOverTheBlock(t *testing.T) {
	block := &spec.Telemetry{Endpoint: "http://block:4318/", ServiceName: "from-block",
		ResourceAttributes: map[string]string{"team": "a", "deployment.environment.name": "ci"}}
	c, ok := Resolve(env(nil), block)
	if !ok || c.TracesURL != "http://block:4318/v1/traces" || c.MetricsURL != "http://block:4318/v1/metrics" ||
		c.Resource["service.name"] != "from-block" || c.Resource["team"] != "a" || c.MetricInterval != DefaultMetricInterval {
		t.Errorf("from the block: %+v", c)
	}
	c, ok = Resolve(env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://env:4318",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://traces:9999/custom",
		"OTEL_SERVICE_NAME":                  "from-env",
		"OTEL_RESOURCE_ATTRIBUTES":           "team=b,host.name=my%20box,broken",
		"OTEL_EXPORTER_OTLP_HEADERS":         "x-api-key=secret",
		"OTEL_EXPORTER_OTLP_PROTOCOL":        "grpc",
		"OTEL_METRIC_EXPORT_INTERVAL":        "1500",
	}), block)
	if !ok || c.TracesURL != "http://traces:9999/custom" || c.MetricsURL != "http://env:4318/v1/metrics" ||
		c.Resource["service.name"] != "from-env" || c.Resource["team"] != "b" || c.Resource["host.name"] != "my box" ||
		c.Resource["deployment.environment.name"] != "ci" || c.Headers["x-api-key"] != "secret" ||
		c.MetricInterval != 1500*time.Millisecond || len(c.Warnings) != 1 {
		t.Errorf("from the environment: %+v", c)
	}
	if c, _ := Resolve(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://e:4318"}), nil); c.Resource["service.name"] != "pipeline" {
		t.Errorf("default service name: %v", c.Resource)
	}
}

func TestTraceparentRoundTrips(t *testing.T) {
	c := SpanContext{Trace: newTraceID(), Span: newSpanID()}
	back, ok := ParseTraceparent(c.Traceparent())
	if !ok || back != c {
		t.Fatalf("%s read back as %v %v", c.Traceparent(), back, ok)
	}
	for _, bad := range []string{"", "01-" + c.Traceparent()[3:], "00-" + "0000000000000000000000000000000" + "0-" + "1111111111111111-01", "00-zz"} {
		if _, ok := ParseTraceparent(bad); ok {
			t.Errorf("%q taken", bad)
		}
	}
}

// A warning names the endpoint without its password.
func TestShownURLMasksThePassword(t *testing.T) {
	if got := shownURL("https://user:s3cret@collector:4318/v1/traces"); got != "https://user:xxxxx@collector:4318/v1/traces" {
		t.Errorf("shown as %s", got)
	}
}
