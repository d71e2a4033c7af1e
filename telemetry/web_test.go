package telemetry

// The tests of this package export in process, as the full build does.
import _ "github.com/pipeline-dev/pipeline/internal/web/nethttp"
