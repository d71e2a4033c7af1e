package store

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// holderSession is the session a lock-holding child writes as its holder.
const holderSession = "s-child"

// holdLockAsChild is the child side of startHolder: it takes the lock of
// key "k" in the store named by the environment, says "locked", and
// holds it until its standard input closes.
func holdLockAsChild(t *testing.T) {
	st, err := Open(os.Getenv("PIPELINE_STORE_TEST_DIR"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := st.Lock("k", Holder{PID: os.Getpid(), Session: holderSession, Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("locked\n")
	io.Copy(io.Discard, os.Stdin)
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// startHolder starts a child process holding key "k" of st and returns
// once it holds it; closing stdin makes the child release it and end.
func startHolder(t *testing.T, st *Store) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := childCommand(t, "PIPELINE_STORE_TEST_DIR="+st.Root)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "locked\n" {
		t.Fatalf("the holder did not take the lock: %q %v", line, err)
	}
	return cmd, stdin
}

func TestLockHeldByAnotherProcess(t *testing.T) {
	if isChild(t) {
		holdLockAsChild(t)
		return
	}
	st := newStore(t)
	cmd, _ := startHolder(t, st)
	if !st.Held("k") {
		t.Error("Held says free while another process holds the lock")
	}
	_, err := st.Lock("k", Holder{PID: os.Getpid(), Session: "s2"})
	var locked *LockedError
	if !errors.As(err, &locked) {
		t.Fatalf("Lock while another process holds it: %v, want a LockedError", err)
	}
	pid := cmd.Process.Pid
	if locked.Holder.PID != pid || locked.Holder.Session != holderSession ||
		!strings.Contains(err.Error(), "pid "+strconv.Itoa(pid)) || !strings.Contains(err.Error(), "pipeline pause "+holderSession) {
		t.Errorf("LockedError %+v (%q), want pid %d, session %s", locked.Holder, err, pid, holderSession)
	}

	// A killed holder (no Release) leaves the lock free.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if st.Held("k") {
		t.Error("Held says held after the holder was killed")
	}
	l, err := st.Lock("k", Holder{PID: os.Getpid(), Session: "s2"})
	if err != nil {
		t.Fatalf("Lock after the holder was killed: %v", err)
	}
	defer l.Release()
	if h, err := st.Holder("k"); err != nil || h.Session != "s2" || h.PID != os.Getpid() {
		t.Errorf("holder after taking the lock: %+v %v", h, err)
	}
}

func TestWaitReleasedWhenTheHolderReleases(t *testing.T) {
	if isChild(t) {
		holdLockAsChild(t)
		return
	}
	st := newStore(t)
	cmd, stdin := startHolder(t, st)
	queries := 0
	released := st.waitReleased("k", time.Minute, func() {
		// The lock was found held: have the holder release it now.
		if queries++; queries == 1 {
			stdin.Close()
		}
	})
	if !released {
		t.Fatal("WaitReleased says the lock is still held after its holder released it")
	}
	if queries == 0 {
		t.Error("WaitReleased never found the lock held: it did not wait")
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("holder: %v", err)
	}
}

func TestWaitReleasedOnAFreeLock(t *testing.T) {
	st := newStore(t)
	if !st.WaitReleased("never-locked", time.Minute) {
		t.Error("WaitReleased on a key never locked says held")
	}
	l, err := st.Lock("k", Holder{PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Errorf("a second Release: %v", err)
	}
	if !st.WaitReleased("k", time.Minute) {
		t.Error("WaitReleased on a released lock says held")
	}
}

// Issue 8: on a timeout WaitReleased closed its descriptor while a
// goroutine was still blocked in flock on it; the goroutine outlived the
// call, and the descriptor's number, reused by the next open, could have
// it lock the wrong file.
func TestWaitReleasedLeavesNoGoroutineBehind(t *testing.T) {
	st := newStore(t)
	l, err := st.Lock("k", Holder{PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if st.WaitReleased("k", 50*time.Millisecond) {
		t.Fatal("WaitReleased says released while the lock is held")
	}
	if stacks := goroutinesIn("(*Store).WaitReleased"); stacks != "" {
		t.Errorf("a goroutine of WaitReleased outlived the call:\n%s", stacks)
	}
	if !st.Held("k") {
		t.Error("the lock is no longer held after WaitReleased timed out")
	}
}

// goroutinesIn returns the stacks of the goroutines that run, or were
// created by, a function whose name contains fn.
func goroutinesIn(fn string) string {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var found []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			found = append(found, g)
		}
	}
	return strings.Join(found, "\n\n")
}

func TestLockCallsOnAStoreThatCannotHoldLocks(t *testing.T) {
	// A file where the store's locks folder should be.
	st := newStore(t)
	if err := os.WriteFile(filepath.Join(st.Root, "locks"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if l, err := st.Lock("k", Holder{PID: os.Getpid()}); err == nil {
		l.Release()
		t.Error("Lock succeeded without a locks folder")
	}
	if st.Held("k") {
		t.Error("Held says held for a lock file that cannot exist")
	}
	if _, err := st.Holder("k"); err == nil {
		t.Error("Holder of a lock file that cannot exist gave no error")
	}
	if !st.WaitReleased("k", time.Minute) {
		t.Error("WaitReleased says held for a lock file that cannot exist")
	}
}

func TestLockedErrorWithAnUnreadableHolder(t *testing.T) {
	st := newStore(t)
	l, err := st.Lock("k", Holder{PID: os.Getpid(), Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	// A holder cut short (a crash between truncating and writing): the
	// lock still refuses, and says it is held.
	if err := os.WriteFile(filepath.Join(st.Root, "locks", "k.lock"), []byte(`{"pid":`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Holder("k"); err == nil {
		t.Error("Holder of a cut holder gave no error")
	}
	_, err = st.Lock("k", Holder{PID: os.Getpid()})
	var locked *LockedError
	if !errors.As(err, &locked) {
		t.Errorf("Lock of a held lock with an unreadable holder: %v, want a LockedError", err)
	}
}
