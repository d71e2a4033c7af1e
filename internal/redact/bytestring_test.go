package redact

import "testing"

// byteString, written out, holds every byte value at its own index.
func TestByteStringHoldsEveryByteAtItsIndex(t *testing.T) {
	for i, b := range byteString {
		if int(b) != i {
			t.Fatalf("byteString[%d] = %d", i, b)
		}
	}
}
