package redact

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestByteSetIsASetOfBytes: random sets, checked against a [256]bool,
// every byte asked.
func TestByteSetIsASetOfBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		var set byteSet
		var want [256]bool
		for range rng.IntN(40) {
			c := byte(rng.IntN(256))
			set.add(c)
			want[c] = true
		}
		for c := range 256 {
			if set.has(byte(c)) != want[c] {
				t.Fatalf("byte %d: has %v, want %v", c, set.has(byte(c)), want[c])
			}
		}
	}
}

// TestDefaultMatcherBuildAllocatesLittle: the matcher every run builds
// (no secrets, the rules' anchors) costs at most 12 KB of heap (8.7 KB
// now); with two [256]bool a pass it cost 24 KB, pages each run touched
// for the first time. The heap's counts are the process's: a goroutine an
// earlier test of the package left allocating adds to them (seen under
// -race: 14.4 KB in 61 allocations where the build made 54), so the
// least of a few builds is the build's own.
func TestDefaultMatcherBuildAllocatesLittle(t *testing.T) {
	buildRedactMatcher(nil) // the rules and tables built once, outside the count
	least, allocs := uint64(math.MaxUint64), uint64(0)
	for range 5 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		m := buildRedactMatcher(nil)
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(m)
		if len(m.passes) == 0 {
			t.Fatal("the default matcher has no passes")
		}
		if got := after.TotalAlloc - before.TotalAlloc; got < least {
			least, allocs = got, after.Mallocs-before.Mallocs
		}
	}
	t.Logf("building the default matcher: %d bytes, %d allocations", least, allocs)
	if least > 12<<10 {
		t.Errorf("building the default matcher allocated %d bytes, want at most 12 KB", least)
	}
}
