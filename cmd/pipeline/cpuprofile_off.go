//go:build !temporal && !profile

package main

import (
	"fmt"
	"os"
)

// startCPUProfile says that this build writes no CPU profile (see
// cpuprofile.go).
func startCPUProfile(string) (stop func()) {
	fmt.Fprintln(os.Stderr, "pipeline: PIPELINE_CPUPROFILE: this build writes no CPU profile: run the same command with pipeline-temporal, or build pipeline with go build -tags profile ./cmd/pipeline")
	return func() {}
}
