// Package stackgrow grows a goroutine's stack to what its work will need
// at once, while the goroutine is shallow.
//
// A goroutine starts with 2 KiB of stack, and the runtime doubles it
// whenever a call needs more, copying it: each copy walks every frame then
// on the stack and reads their stack maps from the binary's pclntab, pages
// that nothing else touches, which a short process pays for in page faults.
// Deep in a run (cobra, the plan's loading, the session's files, fmt) a
// copy costs tens of microseconds; at the goroutine's start, a few.
package stackgrow

// To32K makes the calling goroutine's stack 32 KiB, or leaves it when it
// is that already.
//
//go:noinline
func To32K() byte {
	var frame [20 << 10]byte
	return keep(frame[:])
}

// To16K makes the calling goroutine's stack 16 KiB, or leaves it when it
// is that already.
//
//go:noinline
func To16K() byte {
	var frame [10 << 10]byte
	return keep(frame[:])
}

// keep reads the frame so the compiler keeps it whole.
//
//go:noinline
func keep(b []byte) byte { return b[len(b)-1] }
