package steps

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// TestWaitingStepsHoldNoThreads checks that steps being waited for are
// parked in the network poller, not each holding a thread blocked in a
// wait system call: 16 steps running side by side add fewer than 16
// threads to the process.
func TestWaitingStepsHoldNoThreads(t *testing.T) {
	const steps = 16
	before := threads(t)
	var started []*Process
	for range steps {
		p, err := Start(Command{Args: []string{"sleep", "60"}})
		if err != nil {
			t.Fatal(err)
		}
		started = append(started, p)
	}
	t.Cleanup(func() {
		for _, p := range started {
			p.Stop(0)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for parkedWaits() < steps {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d waits for the steps are parked in the poller", parkedWaits(), steps)
		}
		runtime.Gosched()
	}
	if added := threads(t) - before; added >= steps {
		t.Fatalf("%d steps waited for added %d threads", steps, added)
	}
}

// parkedWaits counts the goroutines in waitChild that wait in the
// network poller.
func parkedWaits() int {
	n := 0
	for _, g := range testwait.Goroutines() {
		if bytes.Contains(g, []byte("[IO wait")) && bytes.Contains(g, []byte("steps.waitChild")) {
			n++
		}
	}
	return n
}

// threads is the number of this process's threads.
func threads(t *testing.T) int {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if value, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads line in /proc/self/status")
	return 0
}
