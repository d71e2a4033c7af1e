package steps

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/internal/proctest"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu      sync.Mutex
	running *Running
	output  strings.Builder
	warned  []string
	live    Live
	lines   chan string
	partial string
	// warnings gets each warning as it comes, without blocking.
	warnings chan string
}

func newRecorder() *recorder {
	return &recorder{lines: make(chan string, 100), warnings: make(chan string, 100)}
}

func (o *recorder) Started(r *Running) {
	o.mu.Lock()
	o.running = r
	o.mu.Unlock()
}

func (o *recorder) Output(text []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.output.Write(text)
	o.partial += string(text)
	for {
		i := strings.IndexByte(o.partial, '\n')
		if i < 0 {
			return
		}
		select {
		case o.lines <- o.partial[:i]:
		default:
		}
		o.partial = o.partial[i+1:]
	}
}

func (o *recorder) Observe(live *Live) {
	o.mu.Lock()
	o.live = *live
	o.live.Tail = nil
	o.mu.Unlock()
}

func (o *recorder) Warn(message string) {
	o.mu.Lock()
	o.warned = append(o.warned, message)
	o.mu.Unlock()
	select {
	case o.warnings <- message:
	default:
	}
}

// awaitLine waits for a line of the step's output that contains want.
func (o *recorder) awaitLine(t *testing.T, want string) string {
	t.Helper()
	deadline := time.After(testwait.Failsafe)
	for {
		select {
		case line := <-o.lines:
			if strings.Contains(line, want) {
				return line
			}
		case <-deadline:
			t.Fatalf("no line %q from the step", want)
		}
	}
}

// testMark is a mark of this test's own.
func testMark() string {
	return fmt.Sprintf("PIPELINE_TEST_MARK=%d-%d", os.Getpid(), rand.Uint64())
}

// shellStep is a step running script with mark in its environment.
func shellStep(script, mark string) Step {
	env := os.Environ()
	if mark != "" {
		env = append(env, mark)
	}
	return Step{Command: Command{Args: []string{"sh", "-c", script}, Env: env, Mark: mark}, Grace: 5 * time.Second}
}

// execute runs a step and fails the test if it has not ended after a
// generous deadline: the hang the tests here pin.
func execute(t *testing.T, ctx context.Context, step Step, obs Observer) Result {
	t.Helper()
	var transcript strings.Builder
	step.Transcript = &syncWriter{w: &transcript}
	done := make(chan Result, 1)
	go func() {
		res, err := (&Executor{}).Execute(ctx, step, obs)
		if err != nil {
			t.Errorf("execute: %v", err)
		}
		done <- res
	}()
	select {
	case res := <-done:
		res.Output += "\n--- transcript\n" + transcript.String()
		return res
	case <-time.After(testwait.Failsafe):
		t.Fatal("the step never ended")
	}
	return Result{}
}

type syncWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// daemon is a shell line that starts script in a session of its own, as
// a daemon does: it prints "pid N" once it has left the step's session
// and process group; script touches $READY (ready) when it is under way.
func daemon(script string) string {
	return `setsid sh -c 'echo "pid $$"; ` + script + `'`
}

const ready = `: > "$READY"; `

// awaitDaemon ends a step's script once its daemon is ready, so that the
// daemon has left the step's group when the step ends.
const awaitDaemon = `
until [ -e "$READY" ]; do sleep 0.01; done`

var pidLine = regexp.MustCompile(`(?m)^pid (\d+)$`)

// pids are the process ids a step printed as "pid N" lines.
func pids(t *testing.T, output string) []int {
	t.Helper()
	var list []int
	for _, m := range pidLine.FindAllStringSubmatch(output, -1) {
		pid, _ := strconv.Atoi(m[1])
		list = append(list, pid)
	}
	if len(list) == 0 {
		t.Fatalf("the step printed no pid:\n%s", output)
	}
	return list
}

// Regression: a step whose daemon (setsid) kept standard output open
// hung the runner until the daemon exited, and neither its timeout nor an
// interrupt could end it. Each way a step leaves a process behind: the
// step ends when its own process does, and nothing it started is left.
func TestStepDaemonsAreKilledWhenTheStepEnds(t *testing.T) {
	for name, script := range map[string]string{
		"setsid daemon holding the output":   daemon(ready+`exec sleep 600`) + " &" + awaitDaemon,
		"setsid daemon with its own output":  daemon(ready+`exec sleep 600 </dev/null >/dev/null 2>&1`) + " &" + awaitDaemon,
		"daemon orphaned while the step ran": `sh -c '` + strings.ReplaceAll(daemon(ready+`exec sleep 600`), `'`, `'\''`) + ` &'` + awaitDaemon + `; echo orphaned`,
		"daemon clearing its environment":    daemon(`env -i sleep 600 & echo "pid $!"; `+ready+`wait`) + " &" + awaitDaemon,
		"background job in the group":        `sleep 600 & echo "pid $!"`,
		"nohup job ignoring SIGHUP":          `nohup sleep 600 >/dev/null 2>&1 & echo "pid $!"`,
	} {
		t.Run(name, func(t *testing.T) {
			step := shellStep(script, testMark())
			step.Command.Env = append(step.Command.Env, "READY="+filepath.Join(t.TempDir(), "ready"))
			res := execute(t, context.Background(), step, newRecorder())
			if res.ExitCode != 0 || res.OutputHeld {
				t.Fatalf("exit %d, output held %v:\n%s", res.ExitCode, res.OutputHeld, res.Output)
			}
			for _, pid := range pids(t, res.Output) {
				proctest.AwaitExit(t, pid)
				if !slices.ContainsFunc(res.Leftovers, func(l Leftover) bool { return l.PID == pid }) {
					t.Errorf("leftovers %v lack %d", res.Leftovers, pid)
				}
			}
			if !strings.Contains(res.Output, "pipeline: the step left") {
				t.Errorf("the transcript does not say what was left:\n%s", res.Output)
			}
		})
	}
}

// A timeout, an interrupt, and a second interrupt end a step while a
// daemon it started holds its output.
func TestStepHeldByADaemonStillStops(t *testing.T) {
	script := daemon(ready+"exec sleep 600") + " &" + awaitDaemon + `; trap "" INT; echo started; while :; do sleep 1; done`
	shellStep := func(script, mark string) Step {
		step := shellStep(script, mark)
		step.Command.Env = append(step.Command.Env, "READY="+filepath.Join(t.TempDir(), "ready"))
		return step
	}
	t.Run("timeout", func(t *testing.T) {
		// The timeout must fire once the daemon holds the output: on a
		// busy machine starting it can take longer than a timeout short
		// enough for a test, so a step cut before "started" is run again
		// with twice the time.
		for timeout := 200 * time.Millisecond; ; timeout *= 2 {
			step := shellStep(script, testMark())
			step.Timeout, step.Grace = timeout, 100*time.Millisecond
			res := execute(t, context.Background(), step, newRecorder())
			if !res.TimedOut {
				t.Fatalf("not timed out: %+v", res)
			}
			if strings.Contains(res.Output, "started\n") {
				proctest.AwaitExit(t, pids(t, res.Output)[0])
				return
			}
			if timeout > testwait.Failsafe {
				t.Fatalf("the step never started its daemon within its timeout:\n%s", res.Output)
			}
		}
	})
	t.Run("interrupt", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		obs := newRecorder()
		step := shellStep(script, testMark())
		step.Grace = 100 * time.Millisecond
		go func() {
			obs.awaitLine(t, "started")
			cancel()
		}()
		res := execute(t, ctx, step, obs)
		if !res.Stopped {
			t.Fatalf("not stopped: %+v", res)
		}
		proctest.AwaitExit(t, pids(t, res.Output)[0])
	})
	t.Run("second interrupt", func(t *testing.T) {
		obs := newRecorder()
		step := shellStep(script, testMark())
		step.Grace = time.Hour
		go func() {
			obs.awaitLine(t, "started")
			obs.mu.Lock()
			r := obs.running
			obs.mu.Unlock()
			r.Stop(step.Grace)
			r.Stop(0)
		}()
		res := execute(t, context.Background(), step, obs)
		if !res.Stopped || res.ExitCode != -1 {
			t.Fatalf("not killed: %+v", res)
		}
		proctest.AwaitExit(t, pids(t, res.Output)[0])
	})
}

// A process that left the step's session and has no mark to be known by
// (no Mark given here) cannot be told from other children: it is left,
// but the step still ends, and says why it stopped reading.
func TestOutputHeldByAProcessThatEscapedIsLeft(t *testing.T) {
	step := shellStep(daemon(ready+"exec sleep 600")+" &"+awaitDaemon, "")
	step.Command.Env = append(step.Command.Env, "READY="+filepath.Join(t.TempDir(), "ready"))
	res := execute(t, context.Background(), step, newRecorder())
	escaped := pids(t, res.Output)[0]
	t.Cleanup(func() {
		syscall.Kill(escaped, syscall.SIGKILL)
		proctest.AwaitExit(t, escaped)
		var status syscall.WaitStatus
		syscall.Wait4(escaped, &status, syscall.WNOHANG, nil)
	})
	if !res.OutputHeld || !strings.Contains(res.Output, "kept its output open") {
		t.Fatalf("output held %v:\n%s", res.OutputHeld, res.Output)
	}
	if err := syscall.Kill(escaped, 0); err != nil {
		t.Fatalf("the escaped process is gone (%v): this test proves nothing", err)
	}
}

// All the output a step wrote before it exited is read, however slowly
// the reader takes it: the drain stops only what comes after.
func TestDrainReadsWhatTheStepWrote(t *testing.T) {
	// 4 MiB is more than the pipe holds: the step exits only once most of
	// it was read; the observer is slow on purpose.
	obs := &slowRecorder{recorder: newRecorder()}
	step := shellStep(`sleep 600 & echo "pid $!"; head -c 4194304 /dev/zero | tr '\0' x; echo; echo end`, testMark())
	res := execute(t, context.Background(), step, obs)
	proctest.AwaitExit(t, pids(t, obs.text())[0])
	if !strings.HasSuffix(obs.text(), "x\nend\n") || strings.Count(obs.text(), "x") != 4<<20 {
		t.Fatalf("the output was cut: %d bytes, ending %q", len(obs.text()), obs.text()[max(0, len(obs.text())-20):])
	}
	if res.OutputHeld {
		t.Error("output held, with the daemon killed")
	}
}

type slowRecorder struct{ *recorder }

func (o *slowRecorder) Output(text []byte) {
	// A view behind a slow terminal: each chunk takes a while.
	deadline := time.Now().Add(time.Millisecond)
	for time.Now().Before(deadline) {
	}
	o.recorder.Output(text)
}

func (o *slowRecorder) text() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.output.String()
}

// Steps have no terminal: reading /dev/tty fails at once rather than
// stopping the step (SIGTTIN) until its idle timeout; standard input is
// empty.
func TestStepsHaveNoTerminal(t *testing.T) {
	res := execute(t, context.Background(), shellStep(`read x < /dev/tty; echo "tty $?"; read y; echo "stdin $? [$y]"`, ""), newRecorder())
	if !strings.Contains(res.Output, "stdin 1 []") || strings.Contains(res.Output, "tty 0") {
		t.Fatalf("output:\n%s", res.Output)
	}
}

// A stopped process is reported once the step is silent, and an
// interrupt still ends the step at once: SIGCONT follows the SIGINT.
func TestStoppedStepIsReportedAndInterruptible(t *testing.T) {
	obs := newRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	step := shellStep(`echo "pid $$"; kill -STOP $$; echo continued`, "")
	step.Grace = time.Hour
	done := make(chan Result, 1)
	go func() { done <- execute(t, ctx, step, obs) }()
	obs.awaitLine(t, "pid ")
	select {
	case warning := <-obs.warnings:
		if !strings.Contains(warning, "is stopped") {
			t.Fatalf("warning %q", warning)
		}
	case <-time.After(testwait.Failsafe):
		t.Fatal("no report of the stopped step")
	}
	cancel()
	res := <-done
	if !res.Stopped || res.ExitCode != -1 {
		t.Fatalf("%+v", res)
	}
}

// What a killed runner's steps left running is found by its mark, though
// it left the step's session and went to init, and what it started with
// its environment cleared goes with it.
func TestKillMarkedFindsWhatADeadRunnerLeft(t *testing.T) {
	mark := testMark()
	cmd := exec.Command("sh", "-c", daemon(`env -i sleep 600 & echo "pid $!"; `+ready+`wait`)+" &"+awaitDaemon)
	dir := t.TempDir()
	cmd.Env = append(os.Environ(), mark, "READY="+filepath.Join(dir, "ready"))
	// A file, not a pipe: the daemons keep their standard output, and the
	// test waits only for sh.
	out, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = out
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	printed, _ := os.ReadFile(out.Name())
	left := pids(t, string(printed))
	if len(left) != 2 {
		t.Fatalf("pids %v", left)
	}
	killed := KillMarked(mark)
	for _, pid := range left {
		proctest.AwaitExit(t, pid)
		if !slices.ContainsFunc(killed, func(l Leftover) bool { return l.PID == pid }) {
			t.Errorf("killed %v, not %d", killed, pid)
		}
	}
	if again := KillMarked(mark); len(again) != 0 {
		t.Errorf("a second sweep killed %v", again)
	}
}
