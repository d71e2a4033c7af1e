package main

import (
	"os"
	"testing"
)

// TestTracedExitReadsWhatTheHelperHoldsAsItExits checks -exitcost's two
// measures on its helper: stopped at its exit, a program that locked six
// goroutines to threads, wrote 2 MiB and mapped and read its own binary
// holds those threads (beside its main one and the runtime's monitor),
// 2 MiB of anonymous memory more and most of its binary's pages more
// than one that did none of it; and each exit leaves a stamp the wait
// comes after.
func TestTracedExitReadsWhatTheHelperHoldsAsItExits(t *testing.T) {
	work := t.TempDir()
	helper := buildHelper(work, "exit-helper", exitHelper, "")
	exitStamp(work)
	bare := tracedExit(work, exitShape{}.env(work), []string{helper})
	more := tracedExit(work, exitShape{6, 2048, helper}.env(work), []string{helper})
	t.Logf("at exit: bare %+v; six goroutines locked, 2 MiB written, itself mapped: %+v", bare, more)
	if bare.threads < 1 || more.threads < 6+2 || more.threads <= bare.threads {
		t.Errorf("threads at exit: %d bare, %d with six goroutines locked, want at least 8 and more than bare", bare.threads, more.threads)
	}
	if bare.anonKB <= 0 || more.anonKB < bare.anonKB+2048 {
		t.Errorf("anonymous memory at exit: %d KiB bare, %d KiB with 2 MiB written, want at least 2048 KiB more", bare.anonKB, more.anonKB)
	}
	info, err := os.Stat(helper)
	if err != nil {
		t.Fatal(err)
	}
	if want := bare.fileKB + int(info.Size()>>10)*3/4; more.fileKB < want {
		t.Errorf("files mapped at exit: %d KiB bare, %d KiB with itself mapped again and read (%d KiB), want at least %d", bare.fileKB, more.fileKB, info.Size()>>10, want)
	}

	times := exitTimes(helper, work, []exitShape{{}, {2, 512, helper}}, 3)
	for i, shape := range times {
		if len(shape) != 3 {
			t.Fatalf("shape %d: %d times, want 3", i, len(shape))
		}
		if shape[0] <= 0 || shape[2] > 5e6 {
			t.Errorf("shape %d: exit times %v µs, want each after its stamp and within 5 s", i, shape)
		}
	}
}
