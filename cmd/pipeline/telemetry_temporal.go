//go:build temporal

package main

import (
	"github.com/pipeline-dev/pipeline/engine/temporal"
	"github.com/pipeline-dev/pipeline/telemetry"
)

// The Temporal clients of pipeline-temporal (and the workers made from
// them) carry telemetry's tracing interceptor when OTEL_* configure an
// endpoint, and a worker's steps get spans of their own under their
// activities'.
func init() {
	temporal.Interceptors = telemetry.TemporalInterceptors
	temporal.StepTraced = telemetry.TemporalStep
}
