package osrand

import (
	"bytes"
	"testing"
)

// Read fills the whole buffer, beyond the 256 bytes one getrandom(2)
// call is sure to give, and two reads differ: 64 zero bytes, or the
// same 64 bytes twice, would be a chance of 2^-512.
func TestReadFillsTheBufferWithFreshBytes(t *testing.T) {
	for _, n := range []int{1, 16, 64, 4096} {
		a, b := make([]byte, n), make([]byte, n)
		Read(a)
		Read(b)
		if n >= 16 && (bytes.Equal(a, b) || bytes.Equal(a, make([]byte, n))) {
			t.Errorf("%d bytes: two reads %x and %x", n, a, b)
		}
		if n == 4096 && bytes.Equal(a[4000:], make([]byte, 96)) {
			t.Errorf("the end of a 4096-byte read is left zero")
		}
	}
	if h := Hex(16); len(h) != 32 || h == Hex(16) {
		t.Errorf("Hex(16) = %q", h)
	}
}
