package termsafe

import "testing"

// The table of special bytes, written out, is what its rule says: the C0
// controls but tab and line feed, DEL and 0xC2.
func TestSpecialBytesAreTheRule(t *testing.T) {
	for c := range 256 {
		want := (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f || c == 0xc2
		if special[c] != want {
			t.Errorf("special[%#x] = %v, want %v", c, special[c], want)
		}
	}
}
