//go:build !temporal

package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestTheCgroupLimitIsNotWatched checks that godebug.go's setting reaches
// the build (a //go:debug line is dropped silently when it is misplaced:
// after the package clause, or in a file the build leaves out). The
// runtime itself counts the setting before the counters exist, so its
// metric cannot tell.
func TestTheCgroupLimitIsNotWatched(t *testing.T) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("no build information in the test binary")
	}
	for _, s := range info.Settings {
		if s.Key == "DefaultGODEBUG" && strings.Contains(","+s.Value+",", ",updatemaxprocs=0,") {
			return
		}
	}
	t.Errorf("the build's DefaultGODEBUG lacks updatemaxprocs=0: the runtime watches the cgroup's CPU limit (settings %v)", info.Settings)
}
