package session_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// lockWaitedFor reports whether /proc/locks shows a process waiting for
// a lock of the file of inode ino.
func lockWaitedFor(t *testing.T, ino uint64) bool {
	t.Helper()
	locks, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(locks), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 6 && fields[1] == "->" && strings.HasSuffix(fields[6], fmt.Sprintf(":%d", ino)) {
			return true
		}
	}
	return false
}

// A runner's Close makes no memory.lock, and still takes its turn with
// a writer of an older build, which locks that file alone: the file
// there and held, Close waits for it, and takes the request the writer
// left meanwhile.
func TestCloseTakesItsTurnWithAnOlderBuildsMemoryWriter(t *testing.T) {
	p := newProject(t, oneTrueStep)
	now := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	runner := p.mustOpen(session.Options{Create: session.Always})
	if _, err := runner.Apply(runner.Start(now)); err != nil {
		t.Fatal(err)
	}
	id := runner.ID()
	ref, err := session.Find(p.st, session.Options{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	// The older writer: memory.lock made and locked, the runner running.
	release, err := ref.X.WaitLock("memory.lock", true)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(ref.X.Dir, "memory.lock"))
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- runner.Close() }()
	deadline := time.Now().Add(testwait.Failsafe)
	for !lockWaitedFor(t, info.Sys().(*syscall.Stat_t).Ino) {
		select {
		case err := <-closed:
			t.Fatalf("Close ended (%v) while an older writer held memory.lock", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("Close never waited for memory.lock")
		}
		time.Sleep(time.Millisecond) // polling /proc/locks, not a synchronisation
	}
	request, err := json.Marshal(struct {
		At    time.Time           `json:"at"`
		Notes []engine.MemoryNote `json:"notes"`
	}{now, []engine.MemoryNote{{Kind: engine.NoteFact, Text: "left by an older writer"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ref.X.WriteFile(fmt.Sprintf("memory-request-%020d-abcd1234.json", now.UnixNano()), request); err != nil {
		t.Fatal(err)
	}
	release()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	state, _, err := ref.State()
	if err != nil {
		t.Fatal(err)
	}
	if len(state.WorkingSet.Pinned) != 1 || state.WorkingSet.Pinned[0].Text != "left by an older writer" {
		t.Errorf("the older writer's request was not taken by Close: %+v", state.WorkingSet.Pinned)
	}
	if left, _ := ref.X.Files("memory-request-"); len(left) > 0 {
		t.Errorf("requests stranded: %v", left)
	}

	// A session no writer touched: its Close makes no memory.lock.
	s := p.mustOpen(session.Options{Create: session.Always})
	if _, err := s.Apply(s.Start(now)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.X.Dir, "memory.lock")); !os.IsNotExist(err) {
		t.Errorf("Close made memory.lock: %v", err)
	}
}

// A pin racing the runner's Close is never stranded: it is recorded by
// the pin (the runner gone) or taken by the Close (the runner still
// there), each time.
func TestAPinRacingTheRunnersCloseIsNeverStranded(t *testing.T) {
	p := newProject(t, oneTrueStep)
	now := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	for i := range 30 {
		runner := p.mustOpen(session.Options{Create: session.Always})
		if _, err := runner.Apply(runner.Start(now)); err != nil {
			t.Fatal(err)
		}
		ref, err := session.Find(p.st, session.Options{ID: runner.ID()})
		if err != nil {
			t.Fatal(err)
		}
		pinned := make(chan error, 1)
		go func() {
			_, err := ref.Remember(now, []engine.MemoryNote{{Kind: engine.NoteFact, Text: fmt.Sprintf("fact %d", i)}}, nil)
			pinned <- err
		}()
		if err := runner.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-pinned; err != nil {
			t.Fatal(err)
		}
		state, _, err := ref.State()
		if err != nil {
			t.Fatal(err)
		}
		left, _ := ref.X.Files("memory-request-")
		if len(state.WorkingSet.Pinned) != 1 || len(left) > 0 {
			t.Fatalf("race %d: pinned %+v, requests stranded %v", i, state.WorkingSet.Pinned, left)
		}
		ref.Close()
	}
}
