//go:build temporal || profile

package main

import (
	"os"
	"runtime/pprof"
)

// startCPUProfile starts the CPU profile that PIPELINE_CPUPROFILE=FILE
// asks for, and returns what stops it. pipeline-temporal has it, and a
// build with the tag profile; the lean pipeline does not: linking
// runtime/pprof turns the runtime's memory profiling on, which samples
// allocations (a walk of the stack each) from the first package init of
// every start.
func startCPUProfile(path string) (stop func()) {
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
