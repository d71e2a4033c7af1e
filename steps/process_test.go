package steps

import (
	"bufio"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// awaitExit blocks until pid has exited, through a pidfd: an event, not a
// polling loop. It fails after a generous limit rather than hang.
func awaitExit(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return // already gone
	}
	if err != nil {
		t.Fatalf("pidfd_open(%d): %v", pid, err)
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 10_000)
	if err != nil || n != 1 {
		t.Fatalf("process %d still runs (poll %d, %v)", pid, n, err)
	}
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
	awaitExit(t, grandchild)
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
	awaitExit(t, grandchild)
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
