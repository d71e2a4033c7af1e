package stackgrow

import (
	"testing"
	"unsafe"
)

// deep uses some n bytes of stack.
//
//go:noinline
func deep(n int) byte {
	var frame [512]byte
	frame[n%len(frame)] = byte(n)
	if n <= len(frame) {
		return frame[0]
	}
	return deep(n-len(frame)) + frame[n%len(frame)]
}

// movedBy tells whether the calling goroutine's stack moved (was copied
// to a larger one) while it used n bytes of stack after grow.
func movedBy(grow func() byte, n int) bool {
	moved := make(chan bool)
	go func() {
		grow()
		var here byte
		before := uintptr(unsafe.Pointer(&here))
		deep(n)
		moved <- uintptr(unsafe.Pointer(&here)) != before
	}()
	return <-moved
}

// A goroutine grown at its start does not move as it goes as deep as
// the size it was grown to allows; one left alone moves.
func TestAGrownStackDoesNotMove(t *testing.T) {
	none := func() byte { return 0 }
	// Well within each size: a frame of deep is more than its 512 bytes
	// (more again under -race).
	if !movedBy(none, 10<<10) {
		t.Fatal("a goroutine that used 10 KiB of stack did not move: the test cannot tell a grown stack")
	}
	if movedBy(To16K, 10<<10) {
		t.Error("after To16K, 10 KiB of stack moved the goroutine")
	}
	if movedBy(To32K, 24<<10) {
		t.Error("after To32K, 24 KiB of stack moved the goroutine")
	}
	if !movedBy(To16K, 28<<10) {
		t.Error("after To16K, 28 KiB of stack did not move the goroutine: the test cannot tell")
	}
}
