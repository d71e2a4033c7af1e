//go:build temporal

package temporaltest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/internal/proctest"
	"github.com/pipeline-dev/pipeline/internal/testwait"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// greet is the trivial workflow the smoke test runs: no activity, no timer.
func greet(_ workflow.Context, name string) (string, error) {
	return "hello " + name, nil
}

// run starts greet on the task queue and waits for its result.
func run(t *testing.T, c client.Client, id, name string) client.WorkflowRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Failsafe)
	defer cancel()
	r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "smoke"}, greet, name)
	if err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	var got string
	if err := r.Get(ctx, &got); err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	if want := "hello " + name; got != want {
		t.Fatalf("%s returned %q, want %q", id, got, want)
	}
	return r
}

// The dev server starts, runs a workflow on a worker of the test, restarts
// on the same port and database (the first execution is still there,
// completed), runs another, and leaves no process behind.
func TestDevServerRunsAWorkflowAcrossARestart(t *testing.T) {
	s := StartDevServer(t)
	c := s.Client(t)
	w := worker.New(c, "smoke", worker.Options{})
	w.RegisterWorkflow(greet)
	if err := w.Start(); err != nil {
		t.Fatalf("worker: %v", err)
	}
	defer w.Stop()

	first := run(t, c, "smoke-1", "first")
	t.Logf("dev server started in %v, RSS %s after a workflow", s.StartTime().Round(time.Millisecond), rss(s.PID()))

	pid := s.PID()
	s.Restart(t)
	assertGone(t, pid, 0) // the new server has the port
	if s.PID() == pid {
		t.Fatalf("Restart kept pid %d", pid)
	}

	// The client and the worker reconnect to the new process by themselves.
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Failsafe)
	defer cancel()
	d, err := c.DescribeWorkflow(ctx, "smoke-1", first.GetRunID())
	if err != nil {
		t.Fatalf("describe smoke-1 after the restart: %v", err)
	}
	if d.Status != enums.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Fatalf("smoke-1 after the restart: %v, want completed", d.Status)
	}
	var got string
	if err := c.GetWorkflow(ctx, "smoke-1", first.GetRunID()).Get(ctx, &got); err != nil || got != "hello first" {
		t.Fatalf("the result of smoke-1 after the restart: %q, %v; want %q", got, err, "hello first")
	}
	run(t, c, "smoke-2", "second")
	t.Logf("dev server restarted in %v, RSS %s after a workflow", s.StartTime().Round(time.Millisecond), rss(s.PID()))

	// What the test's clean-up does, checked here.
	w.Stop()
	c.Close()
	pid = s.PID()
	begin := time.Now()
	s.stop(t)
	t.Logf("dev server stopped in %v", time.Since(begin).Round(time.Millisecond))
	assertGone(t, pid, s.port)
}

// A test under the tag with no CLI fails, and says what to run.
func TestStartDevServerWithoutTheCLIFails(t *testing.T) {
	t.Setenv(EnvCLI, "")
	rec := &recorder{TB: t}
	done := make(chan struct{})
	go func() { // Fatalf ends the goroutine through runtime.Goexit
		defer close(done)
		StartDevServer(rec)
	}()
	<-done
	if !rec.failed || !strings.Contains(rec.msg, "make test") || !strings.Contains(rec.msg, "install-temporal.sh") {
		t.Fatalf("StartDevServer without %s: failed %v, %q; want a failure that says to run make test or the script", EnvCLI, rec.failed, rec.msg)
	}
}

type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = true
	r.msg = strings.TrimSpace(strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " "))
	runtime.Goexit()
}

// assertGone checks that the process and its whole group have exited and,
// unless port is 0, that the port is free again.
func assertGone(t *testing.T, pid, port int) {
	t.Helper()
	proctest.AwaitExit(t, pid)
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process group %d still has members (kill -0: %v)", pid, err)
	}
	if port == 0 {
		return
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Errorf("port %d still taken after the stop: %v", port, err)
		return
	}
	l.Close()
}

// rss reads the resident set size of pid from /proc (Linux only).
func rss(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return "unknown"
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
