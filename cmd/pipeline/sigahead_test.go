package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A step that waits until the file go is there: a signal always finds it
// running.
const waitingStep = `version: 1
phases: [{name: one, steps: [{run: "test -f go || exec sleep 60"}]}]
`

// fifoFile is a file a command reads, made a FIFO to hold the command in
// its read.
type fifoFile struct{ name, content string }

// startBlockedOn starts pipeline with args in dir, where files are FIFOs,
// read in their order: the command waits in its read of the first until
// feed writes them, each as the command opens it, and puts regular files
// in their place for what opens them again. It returns once the command
// has opened the first.
func startBlockedOn(t *testing.T, dir string, files []fifoFile, args ...string) (run *started, feed func()) {
	t.Helper()
	for _, f := range files {
		if err := syscall.Mkfifo(filepath.Join(dir, f.name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run = pipelineStart(t, dir, args...)
	// Opening the writing end waits for the command to open the reading
	// end.
	first, err := os.OpenFile(filepath.Join(dir, files[0].name), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { first.Close() })
	return run, func() {
		for i, f := range files {
			path := filepath.Join(dir, f.name)
			w := first
			if i > 0 {
				if w, err = os.OpenFile(path, os.O_WRONLY, 0); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := w.WriteString(f.content); err != nil {
				t.Fatal(err)
			}
			// A regular file takes the FIFO's place before the command
			// reads its end: if it opens the file again, it reads that.
			write(t, dir, f.name+".new", f.content)
			if err := os.Rename(path+".new", path); err != nil {
				t.Fatal(err)
			}
			w.Close()
		}
	}
}

// startBlockedOnPlan starts pipeline run with args, held in the read of
// phases.yaml, before its plan is loaded and its session opened.
func startBlockedOnPlan(t *testing.T, dir, plan string, args ...string) (run *started, feed func()) {
	t.Helper()
	return startBlockedOn(t, dir, []fifoFile{{"phases.yaml", plan}}, append([]string{"run", "phases.yaml"}, args...)...)
}

// output is what the run printed, once it has ended (exit).
func (s *started) output() string {
	var lines []string
	for {
		select {
		case line := <-s.lines:
			lines = append(lines, line)
		default:
			return strings.Join(lines, "\n")
		}
	}
}

// runSignals are the signals a run catches, as bits of a /proc mask.
const runSignals = 1<<(syscall.SIGHUP-1) | 1<<(syscall.SIGINT-1) | 1<<(syscall.SIGQUIT-1) |
	1<<(syscall.SIGPIPE-1) | 1<<(syscall.SIGTERM-1)

// awaitSignalsCaught waits until the process catches the run's signals:
// the Go runtime's signal thread, the one thread that blocks signals,
// lets all five through once signal.Notify has asked for them.
func awaitSignalsCaught(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(failsafe)
	for time.Now().Before(deadline) {
		tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/status")
		for _, task := range tasks {
			if blocked, ok := signalsBlocked(task); ok && blocked != 0 && blocked&runSignals == 0 {
				return
			}
		}
		time.Sleep(time.Millisecond) // polling a condition
	}
	t.Fatalf("process %d does not catch the run's signals", pid)
}

// signalsBlocked is a thread's SigBlk mask from its /proc status file.
func signalsBlocked(statusFile string) (uint64, bool) {
	data, err := os.ReadFile(statusFile)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if mask, ok := strings.CutPrefix(line, "SigBlk:"); ok {
			v, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64)
			return v, err == nil
		}
	}
	return 0, false
}

// killedBy fails the test unless the command ended killed by sig.
func (s *started) killedBy(t *testing.T, sig syscall.Signal) {
	t.Helper()
	s.exit(t)
	if ws := s.cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != sig {
		t.Fatalf("wait status %v, want killed by %v; stderr: %s", ws, sig, s.stderr.String())
	}
}

// Regression: a signal that came while the plan loaded or the session
// opened, before the run caught signals, killed the runner by the
// signal's default action. pipeline run catches them from its first
// instant, and such a signal is the run's: it stops the first step as it
// starts, and pauses.
func TestSignalBeforeTheRunPausesTheRun(t *testing.T) {
	for _, c := range []struct {
		sig   syscall.Signal
		cause string
	}{
		{syscall.SIGINT, "interrupted (SIGINT)"},
		{syscall.SIGTERM, "terminated (SIGTERM)"},
		{syscall.SIGHUP, "the terminal hung up (SIGHUP)"},
	} {
		t.Run(c.sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			run, feed := startBlockedOnPlan(t, dir, waitingStep)
			awaitSignalsCaught(t, run.cmd.Process.Pid)
			if err := run.cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			feed()
			if code := run.exit(t); code != exitPaused {
				t.Fatalf("exit %d, want %d (paused); stderr: %s", code, exitPaused, run.stderr.String())
			}
			if out := run.output(); !strings.Contains(out, c.cause+": stopping the step, then pausing") {
				t.Errorf("output: %s", out)
			}
			if s := status(t, dir); s.Status != "paused" || s.PauseReason != "interrupted" {
				t.Fatalf("status %+v", s)
			}
			// The pause is an ordinary one: resume runs the step again.
			write(t, dir, "go", "")
			if r := pipeline(t, dir, "resume"); r.code != 0 {
				t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
			}
		})
	}
}

// A SIGPIPE that is not the runner's output closing asks for nothing,
// before the run as during it: the run goes on.
func TestStraySIGPIPEBeforeTheRunIsIgnored(t *testing.T) {
	dir := t.TempDir()
	run, feed := startBlockedOnPlan(t, dir, "version: 1\nphases: [{name: one, steps: [{run: \"touch started\"}]}]\n")
	awaitSignalsCaught(t, run.cmd.Process.Pid)
	if err := run.cmd.Process.Signal(syscall.SIGPIPE); err != nil {
		t.Fatal(err)
	}
	feed()
	if code := run.exit(t); code != 0 {
		t.Fatalf("exit %d, want 0; stderr: %s", code, run.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "started")); err != nil {
		t.Errorf("the step did not run: %v", err)
	}
}

// A run that ends before it runs (its plan has problems) gives the
// signals back: a Ctrl+C that came meanwhile ends the process by SIGINT,
// as it did when it came before anything was caught.
func TestCtrlCBeforeARunThatNeverStartsEndsTheProcess(t *testing.T) {
	dir := t.TempDir()
	run, feed := startBlockedOnPlan(t, dir, "version: 1\nphases: [{name: one, steps: [{}]}]\n")
	awaitSignalsCaught(t, run.cmd.Process.Pid)
	if err := run.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	feed()
	run.killedBy(t, syscall.SIGINT)
}

// run --status of many specs runs a session for each: the signals caught
// for one run are given back before them, and a Ctrl+C that came while
// the specs were read ends the process, as it did before.
func TestCtrlCBeforeManySpecsRunEndsTheProcess(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", waitingStep)
	planned := "---\nstatus: planned\n---\n# spec\n"
	run, feed := startBlockedOn(t, dir, []fifoFile{{"a.md", planned}, {"b.md", planned}},
		"run", "phases.yaml", "--spec", "a.md", "--spec", "b.md", "--status", "planned")
	awaitSignalsCaught(t, run.cmd.Process.Pid)
	if err := run.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	feed()
	run.killedBy(t, syscall.SIGINT)
	if _, err := os.Stat(filepath.Join(dir, ".pipeline")); err == nil {
		t.Error("a session was started")
	}
}

// run --watch does not end with its run: it gets no head start, and
// Ctrl+C before the run ends the process, as it always has.
func TestCtrlCBeforeAWatchedRunEndsTheProcess(t *testing.T) {
	dir := t.TempDir()
	run, _ := startBlockedOnPlan(t, dir, waitingStep, "--watch")
	if err := run.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	run.killedBy(t, syscall.SIGINT)
}

// resume catches the signals from its first instant too: a SIGINT while
// it reads the pipeline's file stops the step it resumes as it starts,
// and the session is paused again.
func TestSignalBeforeTheResumedRunPausesIt(t *testing.T) {
	dir := t.TempDir()
	run, feed := startBlockedOnPlan(t, dir, waitingStep)
	awaitSignalsCaught(t, run.cmd.Process.Pid)
	if err := run.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	feed()
	if code := run.exit(t); code != exitPaused {
		t.Fatalf("run: exit %d; stderr: %s", code, run.stderr.String())
	}
	id := status(t, dir).ID
	if err := os.Remove(filepath.Join(dir, "phases.yaml")); err != nil {
		t.Fatal(err)
	}
	resume, feed := startBlockedOn(t, dir, []fifoFile{{"phases.yaml", waitingStep}}, "resume")
	awaitSignalsCaught(t, resume.cmd.Process.Pid)
	if err := resume.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	feed()
	if code := resume.exit(t); code != exitPaused {
		t.Fatalf("resume: exit %d, want %d (paused); stderr: %s", code, exitPaused, resume.stderr.String())
	}
	if out := resume.output(); !strings.Contains(out, "interrupted (SIGINT): stopping the step, then pausing") {
		t.Errorf("output: %s", out)
	}
	if s := status(t, dir); s.ID != id || s.Status != "paused" || s.PauseReason != "interrupted" {
		t.Fatalf("status %+v", s)
	}
}

// A write to a closed standard error before the run raises a SIGPIPE,
// which the signals caught ahead take where it used to end the process.
// A command that then ends without a run (here: none of the specs has the
// status asked for, said on the closed standard error) still ends by
// SIGPIPE, as it did, and not with exit 0.
func TestClosedOutputBeforeARunThatNeverStartsEndsTheProcessBySIGPIPE(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", waitingStep)
	for _, name := range []string{"a.md", "b.md"} {
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	cmd := exec.Command(binary, "run", "phases.yaml", "--spec", "a.md", "--spec", "b.md", "--status", "planned")
	cmd.Dir, cmd.Env, cmd.Stderr = dir, append(os.Environ(), "CI=true"), w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { cmd.Process.Kill() })
	awaitSignalsCaught(t, cmd.Process.Pid)
	for _, name := range []string{"a.md", "b.md"} {
		// Each open waits for the command to open the spec for reading.
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("---\nstatus: done\n---\n")
		f.Close()
	}
	err = cmd.Wait()
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGPIPE {
		t.Fatalf("wait status %v (%v), want killed by SIGPIPE", ws, err)
	}
}
