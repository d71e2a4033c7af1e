// Package telemetry exports OpenTelemetry traces and metrics of the
// sessions this process runs: a span per run or resume of a session, per
// phase, per attempt and per step, with the GenAI conventions' attributes
// for models and tokens; counters of steps, tokens, cost, retries and
// pauses, and histograms of step and phase durations. It builds them from
// the events the session service records (session.Observer), in one
// place, so that neither the engine nor the drivers know of it.
//
// It is off unless an OTLP endpoint is configured (OTEL_EXPORTER_OTLP_*
// or phases.yaml's telemetry: block), and costs nothing then: no package
// of it runs code at start-up, and it reads its environment only when a
// session records its first event. It speaks OTLP over HTTP with protobuf
// (http/protobuf), encoded here: the OpenTelemetry Go exporters link gRPC
// and the protobuf runtime, whose package initialisation every command
// of the local binary would pay. An export is bounded (ExportTimeout),
// an unreachable collector is one warning, and nothing here changes a
// session's outcome.
package telemetry

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

// ExportTimeout bounds the export at the end of a command.
const ExportTimeout = 2 * time.Second

// DefaultMetricInterval is how often a long-running command exports its
// metrics when OTEL_METRIC_EXPORT_INTERVAL does not say.
const DefaultMetricInterval = 60 * time.Second

// Protocol is the only OTLP protocol this exporter speaks.
const Protocol = "http/protobuf"

// Config is where and as what the telemetry is exported.
type Config struct {
	// TracesURL and MetricsURL are the OTLP/HTTP endpoints, full URLs
	// (.../v1/traces, .../v1/metrics).
	TracesURL, MetricsURL string
	// Headers go with every export (OTEL_EXPORTER_OTLP_HEADERS): never
	// said anywhere, they may hold keys.
	Headers map[string]string
	// Resource names this process: service.name and the rest.
	Resource map[string]string
	// MetricInterval is how often metrics are exported while the
	// process runs.
	MetricInterval time.Duration
	// Warnings are what the configuration holds that is not used as
	// written (a protocol other than http/protobuf).
	Warnings []string
}

// Getenv reads the environment; tests replace it.
type Getenv func(string) string

// Resolve is the configuration of the standard OTEL_* variables over a
// pipeline's telemetry: block (nil: none). ok is false when telemetry is
// off: no endpoint, or OTEL_SDK_DISABLED=true.
func Resolve(getenv Getenv, block *spec.Telemetry) (c Config, ok bool) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return Config{}, false
	}
	var fromBlock spec.Telemetry
	if block != nil {
		fromBlock = *block
	}
	base := firstSet(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), fromBlock.Endpoint)
	c.TracesURL = signalURL(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), base, "v1/traces")
	c.MetricsURL = signalURL(getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"), base, "v1/metrics")
	if c.TracesURL == "" && c.MetricsURL == "" {
		return Config{}, false
	}
	if p := strings.TrimSpace(firstSet(getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), fromBlock.Protocol)); p != "" && p != Protocol {
		c.Warnings = append(c.Warnings, fmt.Sprintf(
			"OTLP protocol %q is not spoken here: exporting with %s (point the endpoint at the collector's OTLP/HTTP port, 4318 by default)", p, Protocol))
	}
	c.Headers = parsePairs(getenv("OTEL_EXPORTER_OTLP_HEADERS"))
	c.Resource = map[string]string{}
	for k, v := range fromBlock.ResourceAttributes {
		c.Resource[k] = v
	}
	for k, v := range parsePairs(getenv("OTEL_RESOURCE_ATTRIBUTES")) {
		c.Resource[k] = v
	}
	if name := firstSet(getenv("OTEL_SERVICE_NAME"), fromBlock.ServiceName); name != "" {
		c.Resource["service.name"] = name
	} else if c.Resource["service.name"] == "" {
		c.Resource["service.name"] = "pipeline"
	}
	c.MetricInterval = DefaultMetricInterval
	if ms, err := strconv.Atoi(strings.TrimSpace(getenv("OTEL_METRIC_EXPORT_INTERVAL"))); err == nil && ms > 0 {
		c.MetricInterval = time.Duration(ms) * time.Millisecond
	}
	return c, true
}

func firstSet(values ...string) string {
	for _, v := range values {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}

// signalURL is a signal's endpoint: its own variable as it is, or the
// base endpoint with the signal's path appended, as the OTLP exporter
// specification says.
func signalURL(own, base, path string) string {
	if own = strings.TrimSpace(own); own != "" {
		return own
	}
	if base == "" {
		return ""
	}
	return strings.TrimRight(base, "/") + "/" + path
}

// parsePairs reads key1=value1,key2=value2 with percent-encoded values
// (OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS); a malformed
// pair is left out.
func parsePairs(s string) map[string]string {
	out := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			continue
		}
		if dec, err := url.PathUnescape(strings.TrimSpace(v)); err == nil {
			v = dec
		}
		out[k] = strings.TrimSpace(v)
	}
	return out
}
