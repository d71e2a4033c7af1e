package profile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStartCPU: a build with the profile writes a gzipped pprof profile
// once stopped, and says nothing; the lean build writes no file and says
// why, naming the builds that have it.
func TestStartCPU(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	var warn bytes.Buffer
	StartCPU(path, &warn)()
	content, err := os.ReadFile(path)
	if !Enabled {
		if err == nil {
			t.Errorf("the lean build wrote %s", path)
		}
		if !strings.Contains(warn.String(), "PIPELINE_CPUPROFILE: this build writes no CPU profile") || !strings.Contains(warn.String(), "pipeline-temporal") {
			t.Errorf("warning = %q", warn.String())
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	// pprof writes its protocol buffer gzipped.
	if len(content) < 2 || content[0] != 0x1f || content[1] != 0x8b {
		t.Errorf("%s is not a gzipped profile: % x", path, content[:min(8, len(content))])
	}
	if warn.Len() != 0 {
		t.Errorf("a build with the profile warned: %q", warn.String())
	}
}

// TestStartCPUUnwritable: a profile that cannot be created stops nothing
// and does not panic: the command runs all the same.
func TestStartCPUUnwritable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no-such-folder", "cpu.pprof")
	var warn bytes.Buffer
	StartCPU(path, &warn)()
	if _, err := os.Stat(path); err == nil {
		t.Errorf("%s was written", path)
	}
}
