//go:build temporal || profile

// Package profile is the CPU profile that PIPELINE_CPUPROFILE=FILE asks
// of a pipeline command, for work on the hot paths (see make bench).
// pipeline-temporal has it, and a build with the tag profile; the lean
// pipeline does not: linking runtime/pprof turns the runtime's memory
// profiling on, which samples allocations (a walk of the stack each)
// from the first package init of every start.
package profile

import (
	"io"
	"os"
	"runtime/pprof"
)

// Enabled: this build writes CPU profiles.
const Enabled = true

// StartCPU starts the CPU profile written to path, and returns what stops
// it. A profile that cannot be written is no profile: the command runs
// all the same. warn is unused here (see profile_off.go).
func StartCPU(path string, _ io.Writer) (stop func()) {
	f, err := os.Create(path)
	if err != nil {
		return func() {}
	}
	if pprof.StartCPUProfile(f) != nil {
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
