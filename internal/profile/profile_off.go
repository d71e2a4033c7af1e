//go:build !temporal && !profile

package profile

import (
	"fmt"
	"io"
)

// Enabled: this build writes no CPU profile (see profile.go).
const Enabled = false

// StartCPU says on warn that this build writes no CPU profile.
func StartCPU(_ string, warn io.Writer) (stop func()) {
	fmt.Fprintln(warn, "pipeline: PIPELINE_CPUPROFILE: this build writes no CPU profile: run the same command with pipeline-temporal, or build pipeline with go build -tags profile ./cmd/pipeline")
	return func() {}
}
