package spec

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
)

// keyHash writes each part as fmt's "%d %s\n" would: the keys of the
// cache's entries do not change.
func TestKeyHashWritesWhatFmtWould(t *testing.T) {
	parts := [][3]string{{"phases.yaml", "", "/x"}, {"/a b/phases.yaml", "spec.md", ""}, {"", "", ""}, {strings.Repeat("é", 300), "\n", "%d"}}
	for _, p := range parts {
		h := keyHash(p[0], p[1], p[2])
		if h == nil {
			t.Fatal("no build ID")
		}
		want := sha256.New()
		for _, part := range []string{cacheMagic, buildID(), p[0], p[1], p[2]} {
			fmt.Fprintf(want, "%d %s\n", len(part), part)
		}
		if !bytes.Equal(h.Sum(nil), want.Sum(nil)) {
			t.Errorf("keyHash%q is not fmt's", p)
		}
	}
}

// readChecked gives the n bytes read and whether their CRC-32 is sum,
// across chunks of its buffer, and refuses a reader that ends short.
func TestReadChecked(t *testing.T) {
	for _, n := range []int{0, 1, 100, 32 << 10, 32<<10 + 1, 100 << 10} {
		data := bytes.Repeat([]byte("0123456789abcdefghijklmnopqrstuvwxyz"), n/36+2)
		sum := crc32.ChecksumIEEE(data[:n])
		got, ok := readChecked(bytes.NewReader(data), n, sum)
		if !ok || got != string(data[:n]) {
			t.Errorf("%d bytes: ok %v, %d bytes read, same: %v", n, ok, len(got), got == string(data[:n]))
		}
		if _, ok := readChecked(bytes.NewReader(data), n, sum+1); ok && n > 0 {
			t.Errorf("%d bytes: a wrong checksum passed", n)
		}
		if n > 0 {
			if _, ok := readChecked(bytes.NewReader(data[:n-1]), n, sum); ok {
				t.Errorf("%d bytes: a reader one byte short passed", n)
			}
		}
	}
}
