package main

import "testing"

// TestTracedExitReadsWhatTheHelperHoldsAsItExits checks -exitcost's two
// measures on its helper: stopped at its exit, a program that locked six
// goroutines to threads and wrote 2 MiB holds those threads (beside its
// main one and the runtime's monitor) and 2 MiB of anonymous memory more
// than one that did neither; and each exit leaves a stamp the wait
// comes after.
func TestTracedExitReadsWhatTheHelperHoldsAsItExits(t *testing.T) {
	work := t.TempDir()
	helper := buildHelper(work, "exit-helper", exitHelper)
	exitStamp(work)
	bareThreads, bareKB := tracedExit(work, exitShape{0, 0}.env(work), []string{helper})
	threads, kb := tracedExit(work, exitShape{6, 2048}.env(work), []string{helper})
	t.Logf("at exit: bare %d threads %d KiB; six goroutines locked, 2 MiB written: %d threads %d KiB", bareThreads, bareKB, threads, kb)
	if bareThreads < 1 || threads < 6+2 || threads <= bareThreads {
		t.Errorf("threads at exit: %d bare, %d with six goroutines locked, want at least 8 and more than bare", bareThreads, threads)
	}
	if bareKB <= 0 || kb < bareKB+2048 {
		t.Errorf("anonymous memory at exit: %d KiB bare, %d KiB with 2 MiB written, want at least 2048 KiB more", bareKB, kb)
	}

	times := exitTimes(helper, work, []exitShape{{0, 0}, {2, 512}}, 3)
	for i, shape := range times {
		if len(shape) != 3 {
			t.Fatalf("shape %d: %d times, want 3", i, len(shape))
		}
		if shape[0] <= 0 || shape[2] > 5e6 {
			t.Errorf("shape %d: exit times %v µs, want each after its stamp and within 5 s", i, shape)
		}
	}
}
