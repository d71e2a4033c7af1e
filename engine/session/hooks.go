package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
)

// HookTimeout is how long one hook command may run before it is killed.
const HookTimeout = engine.HookTimeout

// hookOutputLimit bounds what is kept of a hook's output.
const hookOutputLimit = 64 << 10

// hookOutputGrace is how long a hook's output is read after the hook
// exited: a process it started in the background that keeps the output
// open does not hold the runner.
const hookOutputGrace = 250 * time.Millisecond

// HookEvents are the on: events the session's state calls for (see
// engine.HookEvents).
func HookEvents(s engine.State) []string { return engine.HookEvents(s) }

// StatusReport is the session's status as pipeline status -o json prints
// it.
func (s *Session) StatusReport() engine.StatusReport { return s.statusReportOf(s.state) }

func (s *Session) statusReportOf(st engine.State) engine.StatusReport {
	r := engine.Report(s.Plan, st)
	m := s.X.Meta
	r.ID, r.Pipeline, r.File, r.Spec, r.Created = m.ID, m.Pipeline, m.File, m.Spec, m.Created
	return r
}

// RunHooks runs the plan's on: commands for where the run left the
// session, one after another, each with a timeout (HookTimeout when
// timeout is 0): in the folder of phases.yaml, through sh -c, in a
// session of its own (no terminal), with PIPELINE_SESSION, PIPELINE_PHASE,
// PIPELINE_STATUS, PIPELINE_REASON and PIPELINE_NOTE set and the status
// JSON on standard input. Their output, redacted, goes to the transcript
// of the phase the session stopped in (on.<event>). A hook that fails is
// said; it changes nothing of the session.
func (s *Session) RunHooks(ctx context.Context, timeout time.Duration, say func(format string, args ...any)) {
	s.RunHooksOf(ctx, s.state, timeout, say)
}

// RunHooksOf is RunHooks for the session standing as st: a fleet
// worker's copy of the session, whose state the workflow holds. The
// plan's notifications go after the hooks.
func (s *Session) RunHooksOf(ctx context.Context, st engine.State, timeout time.Duration, say func(format string, args ...any)) {
	events := HookEvents(st)
	defer s.notify(ctx, st, events, say)
	var lines int
	for _, ev := range events {
		lines += len(s.Plan.Hooks.For(ev))
	}
	if lines == 0 {
		return
	}
	if timeout <= 0 {
		timeout = HookTimeout
	}
	redact := s.Redactor().String
	report := s.statusReportOf(st)
	status, _ := json.MarshalIndent(report, "", "  ")
	status = []byte(redact(string(status)) + "\n")
	reason, note := report.PauseReason, report.PauseNote
	if report.Status == string(engine.StatusFailed) {
		reason, note = "failed", report.FailReason
	}
	env := append(os.Environ(), "PIPELINE_SESSION="+s.ID(), "PIPELINE_PHASE="+report.Phase,
		"PIPELINE_STATUS="+report.Status, "PIPELINE_REASON="+redact(reason), "PIPELINE_NOTE="+redact(note))
	if s.Plan.Spec != "" {
		env = append(env, "PIPELINE_SPEC="+s.Plan.Spec)
	}
	for _, ev := range events {
		for _, line := range s.Plan.Hooks.For(ev) {
			out, err := runHook(ctx, line, s.Dir(), env, status, timeout)
			text := redact(out)
			s.keepHookOutput(st, ev, line, text, err)
			if err != nil {
				say("pipeline: on %s: %q failed: %v (its output is in pipeline logs)", ev, line, err)
			} else {
				say("on %s: ran %q", ev, line)
			}
		}
	}
}

// keepHookOutput writes a hook's command line, output and end to the
// transcript of the phase the session stopped in.
func (s *Session) keepHookOutput(st engine.State, event, line, output string, err error) {
	phase := ""
	if i := st.Phase; i >= 0 && i < len(s.Plan.Phases) {
		phase = s.Plan.Phases[i].Name
	}
	if phase == "" || s.broken != nil {
		return
	}
	f, ferr := s.Transcript(phase, max(st.Attempt, 1), "on."+event)
	if ferr != nil {
		return
	}
	defer f.Close()
	end := "exited 0"
	if err != nil {
		end = err.Error()
	}
	fmt.Fprintf(f, "pipeline: on %s: %s\n%s", event, s.Redactor().String(line), output)
	if output != "" && !strings.HasSuffix(output, "\n") {
		fmt.Fprintln(f)
	}
	fmt.Fprintf(f, "pipeline: on %s: %s\n", event, end)
}

// runHook runs one shell line and returns its output (standard output and
// error together, the first hookOutputLimit bytes). It never waits past
// timeout, nor more than hookOutputGrace for an output a background
// process keeps open; what the hook left in its process group is killed.
func runHook(ctx context.Context, line, dir string, env []string, stdin []byte, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	var out limitedBuffer
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &out, &out
	// A session of its own: no terminal to read a password from, and a
	// process group to kill.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = hookOutputGrace
	err := cmd.Run()
	if cmd.Process != nil {
		// A background process of the hook (a daemon holding its output)
		// goes with it.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		err = fmt.Errorf("timed out after %s and was killed", timeout)
	case errors.Is(err, exec.ErrWaitDelay):
		// It exited 0; what it left running held the output and was
		// stopped.
		err = nil
	}
	return out.String(), err
}

// limitedBuffer keeps the first hookOutputLimit bytes written to it.
type limitedBuffer struct {
	b         bytes.Buffer
	truncated bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := hookOutputLimit - l.b.Len(); room < len(p) {
		l.truncated = true
		l.b.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return l.b.Write(p)
}

func (l *limitedBuffer) String() string {
	if l.truncated {
		return l.b.String() + "\n[output cut at 64 KiB]\n"
	}
	return l.b.String()
}
