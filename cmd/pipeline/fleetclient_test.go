//go:build temporal

package main

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// A fleet client runs with one P and a GOGC of clientGC, unless the
// environment sets them: then the environment's stand.
func TestFleetClientRuntime(t *testing.T) {
	procs, gc := runtime.GOMAXPROCS(0), debug.SetGCPercent(100)
	t.Cleanup(func() {
		runtime.GOMAXPROCS(procs)
		debug.SetGCPercent(gc)
	})
	runtime.GOMAXPROCS(2)
	t.Setenv("GOMAXPROCS", "")
	t.Setenv("GOGC", "")
	asClient()
	if got, gotGC := runtime.GOMAXPROCS(0), debug.SetGCPercent(100); got != clientProcs || gotGC != clientGC {
		t.Errorf("GOMAXPROCS %d, GOGC %d; want %d and %d", got, gotGC, clientProcs, clientGC)
	}
	runtime.GOMAXPROCS(2)
	t.Setenv("GOMAXPROCS", "2")
	t.Setenv("GOGC", "100")
	asClient()
	if got, gotGC := runtime.GOMAXPROCS(0), debug.SetGCPercent(100); got != 2 || gotGC != 100 {
		t.Errorf("with GOMAXPROCS=2 and GOGC=100 set: GOMAXPROCS %d, GOGC %d", got, gotGC)
	}
}
