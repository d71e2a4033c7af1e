package lazy

import (
	"sync"
	"sync/atomic"
	"testing"
)

var built atomic.Int32

var counted = Value[*int]{New: func() *int {
	built.Add(1)
	n := 42
	return &n
}}

// Get builds the value once, on the first call, however many goroutines
// ask at once, and every call gets that one value.
func TestGetBuildsOnceOnFirstUse(t *testing.T) {
	if n := built.Load(); n != 0 {
		t.Fatalf("built %d times before the first Get", n)
	}
	var wg sync.WaitGroup
	got := make([]*int, 8)
	for i := range got {
		wg.Go(func() { got[i] = counted.Get() })
	}
	wg.Wait()
	for i, p := range got {
		if p != got[0] || *p != 42 {
			t.Errorf("Get %d = %p (%d), want %p", i, p, *p, got[0])
		}
	}
	if n := built.Load(); n != 1 {
		t.Errorf("built %d times, want once", n)
	}
}
