package steps

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// What a SIGINT reached is read after it was sent, by start time: a
// process that started well before it counts as reached (it is not
// interrupted again), one that started about when it was sent does not
// (it may have been forked after it, or have taken it before its exec).
func TestGroupReachedByStartTime(t *testing.T) {
	p, out := start(t, `sleep 30 & echo "started $!"; wait`)
	line := readLine(t, out)
	sleepPid, err := strconv.Atoi(strings.TrimPrefix(line, "started "))
	if err != nil {
		t.Fatalf("the step printed %q", line)
	}
	// The instants are the processes' own start times, not the clock when
	// the test got here: on a busy machine that can be long after both.
	leader, ok := readStat(p.Pid())
	sleeper, ok2 := readStat(sleepPid)
	if !ok || !ok2 {
		t.Fatalf("no /proc/PID/stat for sh (%v) or sleep (%v)", ok, ok2)
	}
	if reached := groupReached(p.Pid(), leader.started); len(reached) != 0 {
		t.Errorf("a SIGINT sent as the group started reached %v for sure, want none", reached)
	}
	later := groupReached(p.Pid(), max(leader.started, sleeper.started)+youngProcess+2*statTick)
	if comm, ok := later[p.Pid()]; !ok || comm != "sh" {
		t.Errorf("a SIGINT sent later: reached %v, want the leader sh among them", later)
	}
	if len(later) != 2 {
		t.Errorf("a SIGINT sent later: reached %v, want sh and sleep", later)
	}
}

// Interrupt alone interrupts the step: no Stop is needed for the SIGINT
// (Stop, called after, only waits).
func TestInterruptReachesTheStep(t *testing.T) {
	p, out := start(t, `trap 'echo interrupted; exit 0' INT; echo ready; while :; do sleep 0.01; done`)
	if line := readLine(t, out); line != "ready" {
		t.Fatalf("the step printed %q", line)
	}
	p.Interrupt()
	if line := readLine(t, out); line != "interrupted" {
		t.Fatalf("after Interrupt the step printed %q, want interrupted", line)
	}
	if code, _ := p.Wait(); code != 0 {
		t.Errorf("exit %d, want 0 from the trap", code)
	}
	if sig := p.Signal(); sig != 0 && sig != syscall.SIGINT {
		t.Errorf("ended by %v", sig)
	}
	p.Stop(time.Second) // after the end: returns at once
}
