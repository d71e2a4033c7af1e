package steps

import (
	"bufio"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/internal/proctest"
)

func start(t *testing.T, script string) (*Process, *bufio.Reader) {
	t.Helper()
	p, err := Start(Command{Args: []string{"sh", "-c", script}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(time.Second) })
	return p, bufio.NewReader(p.Stdout)
}

// readLine waits for the child to print a line: the child is ready when
// it says so, not after a sleep.
func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the child's output: %v", err)
	}
	return strings.TrimSpace(line)
}

func TestStopKillsAChildThatIgnoresSIGINT(t *testing.T) {
	p, out := start(t, `trap "" INT; echo ready; while :; do sleep 1; done`)
	readLine(t, out)
	p.Stop(100 * time.Millisecond)
	if code, _ := p.Wait(); code != -1 || p.Signal() != syscall.SIGKILL {
		t.Fatalf("exit %d, signal %v; want killed by SIGKILL after the grace period", code, p.Signal())
	}
}

func TestStopInterruptsACooperativeChild(t *testing.T) {
	p, out := start(t, `trap "echo interrupted; exit 0" INT; echo ready; while :; do sleep 1; done`)
	readLine(t, out)
	p.Stop(time.Minute)
	if code, _ := p.Wait(); code != 0 {
		t.Fatalf("exit %d; want the child's own exit after SIGINT", code)
	}
	if got := readLine(t, out); got != "interrupted" {
		t.Fatalf("child printed %q", got)
	}
}

func TestStopKillsGrandchildren(t *testing.T) {
	// The grandchild ignores SIGINT too, and would outlive its parent.
	p, out := start(t, `(trap "" INT; exec sleep 600) & echo $!; wait`)
	grandchild, err := strconv.Atoi(readLine(t, out))
	if err != nil {
		t.Fatal(err)
	}
	p.Stop(100 * time.Millisecond)
	proctest.AwaitExit(t, grandchild)
}

func TestGrandchildrenDieWithTheirStep(t *testing.T) {
	// The step ends normally, leaving a background process behind.
	p, out := start(t, `sleep 600 & echo $!`)
	grandchild, err := strconv.Atoi(readLine(t, out))
	if err != nil {
		t.Fatal(err)
	}
	if code, err := p.Wait(); code != 0 || err != nil {
		t.Fatalf("exit %d, %v", code, err)
	}
	proctest.AwaitExit(t, grandchild)
}

func TestExitCodes(t *testing.T) {
	p, _ := start(t, "exit 7")
	if code, _ := p.Wait(); code != 7 {
		t.Fatalf("exit %d, want 7", code)
	}
	if _, err := Start(Command{Args: []string{"/no/such/program"}}); err == nil {
		t.Fatal("starting a missing program gave no error")
	}
}
