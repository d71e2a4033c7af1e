package main

// mainStackFrame is the size of growStack's frame: enough that the main
// goroutine's stack is grown at once to the 32 KiB that a run reaches
// (cobra, plan loading, session open and the run loop).
const mainStackFrame = 20 << 10

// growStack grows the main goroutine's stack once, while it holds only
// this frame, run's and main's. Left to grow by doubling as a run goes
// deeper, the runtime copies the stack three times (to 8, 16 then 32
// KiB), each copy walking every frame then on it and reading their stack
// maps from pclntab, pages of the binary that nothing else touches: 3 %
// of the CPU of pipeline run of one true step (perf: runtime.newstack,
// copystack, getStackMap). pipeline --version, which stays shallow, does
// without: the frame's zeroing costs it 5 page faults.
//
//go:noinline
func growStack() byte {
	var frame [mainStackFrame]byte
	return keepFrame(frame[:])
}

// keepFrame reads the frame so the compiler keeps it whole.
//
//go:noinline
func keepFrame(b []byte) byte { return b[len(b)-1] }
