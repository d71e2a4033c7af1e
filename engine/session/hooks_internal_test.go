package session

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// A hook that runs past its timeout is killed, with its whole process
// group, and the error says so.
func TestHookTimesOut(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	out, err := runHook(context.Background(), "echo before; sleep 300", dir, nil, nil, 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "timed out after 200ms") {
		t.Fatalf("err %v, want a timeout", err)
	}
	if out != "before\n" {
		t.Errorf("output %q", out)
	}
	// Bounded by the timeout and the output's grace, not by the sleep.
	if elapsed := time.Since(start); elapsed > testwait.Failsafe {
		t.Errorf("took %s", elapsed)
	}
}

// A hook has no terminal: one that asks on /dev/tty fails at once.
func TestHookHasNoTerminal(t *testing.T) {
	out, err := runHook(context.Background(), "echo x > /dev/tty", t.TempDir(), nil, nil, 10*time.Second)
	if err == nil {
		t.Fatalf("writing to /dev/tty worked: %q", out)
	}
}

// What a hook prints is kept up to a bound.
func TestHookOutputIsBounded(t *testing.T) {
	out, err := runHook(context.Background(), "head -c 200000 /dev/zero | tr '\\\\0' a", t.TempDir(), nil, nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > hookOutputLimit+100 || !strings.HasSuffix(out, "[output cut at 64 KiB]\n") {
		t.Errorf("%d bytes kept, ending %q", len(out), out[max(len(out)-40, 0):])
	}
}
