package steps

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pipeline-dev/pipeline/internal/clock"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// noEvents is a parser that reads nothing: it makes the executor read
// standard output and error apart.
type noEvents struct{}

func (noEvents) Line([]byte) []Event { return nil }

// TestARunningStepHasOnlyItsReaders checks that while a step runs, the
// executor has started no goroutine but the readers of its output: the
// caller of Execute waits for the child itself. Every goroutine more is
// handed to another thread when it wakes (a futex wake-up, a context
// switch, at times a new thread); a goroutine that waited for the child
// was one.
func TestARunningStepHasOnlyItsReaders(t *testing.T) {
	for _, c := range []struct {
		name    string
		parser  Parser
		readers int
	}{
		{"output merged", nil, 1},
		{"output and error apart", noEvents{}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "go.fifo")
			if err := unix.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			step := shellStep(`read _ < "$0"`, "")
			step.Command.Args = append(step.Command.Args, fifo)
			step.Parser = c.parser
			// A fake clock: no tick fires, and starts a goroutine, meanwhile.
			x := &Executor{Clock: clock.NewFake(time.Date(2026, 11, 28, 5, 0, 0, 0, time.UTC))}
			done := make(chan Result, 1)
			go func() {
				res, err := x.Execute(context.Background(), step, newRecorder())
				if err != nil {
					t.Errorf("execute: %v", err)
				}
				done <- res
			}()
			deadline := time.Now().Add(testwait.Failsafe)
			for parkedReaders() < c.readers {
				if time.Now().After(deadline) {
					t.Fatalf("%d of the step's %d readers are waiting for output", parkedReaders(), c.readers)
				}
				runtime.Gosched()
			}
			if started := startedBySteps(); len(started) != c.readers {
				t.Errorf("the running step has %d goroutines started by the executor, want its %d readers:\n%s",
					len(started), c.readers, bytes.Join(started, []byte("\n\n")))
			}
			// The shell waits for a writer to open the fifo: this lets it go.
			w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			w.WriteString("go\n")
			w.Close()
			select {
			case res := <-done:
				if res.ExitCode != 0 {
					t.Fatalf("exit %d: %s", res.ExitCode, res.Output)
				}
			case <-time.After(testwait.Failsafe):
				t.Fatal("the step never ended")
			}
		})
	}
}

// parkedReaders counts the executor's readers waiting for output.
func parkedReaders() int {
	n := 0
	for _, g := range testwait.Goroutines() {
		if bytes.Contains(g, []byte("[IO wait")) && bytes.Contains(g, []byte("steps.(*Running).read")) {
			n++
		}
	}
	return n
}

// startedBySteps are the goroutines that a function of this package
// started (its tests' own aside).
func startedBySteps() [][]byte {
	var started [][]byte
	for _, g := range testwait.Goroutines() {
		_, creator, ok := bytes.Cut(g, []byte("\ncreated by "))
		if ok && bytes.HasPrefix(creator, []byte("github.com/pipeline-dev/pipeline/steps.")) &&
			!bytes.Contains(creator[:bytes.IndexByte(append(creator, '\n'), '\n')], []byte("Test")) {
			started = append(started, g)
		}
	}
	return started
}
