package osrand

import (
	"os"
	"os/exec"
	"regexp"
	"testing"

	"golang.org/x/sys/unix"
)

// droppable is a mapping's flag in /proc/self/smaps for memory mapped
// with MAP_DROPPABLE, which a Go process maps for one thing: the states
// of the vDSO's getrandom, at its first call.
var droppable = regexp.MustCompile(`(?m)^VmFlags:.* dp( |$)`)

// TestReadMapsNoVDSOState: a process that reads randomness through Read
// maps no state for the vDSO's getrandom (its page faults are a short
// command's cost for a few random bytes), where one that calls
// unix.Getrandom does: each is asked in a process of its own, the test
// binary run again.
func TestReadMapsNoVDSOState(t *testing.T) {
	if how := os.Getenv("OSRAND_TEST_CHILD"); how != "" {
		b := make([]byte, 16)
		if how == "unix" {
			_, _ = unix.Getrandom(b, 0)
		} else {
			Read(b)
			_ = Hex(6)
		}
		smaps, err := os.ReadFile("/proc/self/smaps")
		if err != nil {
			t.Fatal(err)
		}
		os.Stdout.Write(smaps)
		return
	}
	mapsDroppable := func(how string) bool {
		cmd := exec.Command(os.Args[0], "-test.run=^TestReadMapsNoVDSOState$", "-test.count=1")
		cmd.Env = append(os.Environ(), "OSRAND_TEST_CHILD="+how)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", how, err, out)
		}
		return droppable.Match(out)
	}
	if !mapsDroppable("unix") {
		t.Skip("unix.Getrandom mapped no droppable memory here (a kernel before 6.11 has no vDSO getrandom): nothing to tell Read apart from it")
	}
	if mapsDroppable("read") {
		t.Errorf("a process that called Read and Hex mapped the vDSO's getrandom states")
	}
}
