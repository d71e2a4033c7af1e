package store

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A key's digest is written over in place: the same inode each time (no
// temporary file made, no inode deleted), read back as written; and what
// a kill -9 between the write and the cut leaves (the new digest's head
// on the old one's tail) is taken for none, never for a digest.
func TestADigestIsWrittenInPlaceAndATornOneIsNone(t *testing.T) {
	st := storeOfTwoKeys(t)
	path := filepath.Join(st.Root, keysFolder, "k")
	inode := func() uint64 {
		t.Helper()
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return info.Sys().(*syscall.Stat_t).Ino
	}
	long := mustRead(t, path)
	d, err := parseDigest("k", long)
	if err != nil {
		t.Fatal(err)
	}
	first := inode()
	short := d
	short.briefs = short.briefs[:1]
	st.writeDigest(&short)
	if inode() != first {
		t.Error("the digest was replaced by another file, not written in place")
	}
	written := mustRead(t, path)
	back, err := parseDigest("k", written)
	if err != nil || len(back.briefs) != 1 || back.offset != d.offset {
		t.Errorf("the shorter digest read back as %+v, %v", back, err)
	}
	if len(written) >= len(long) {
		t.Fatalf("the shorter digest is %d bytes, the longer %d: this test proves nothing", len(written), len(long))
	}
	torn := append(append([]byte{}, written...), long[len(written):]...)
	if got, err := parseDigest("k", torn); err == nil {
		t.Errorf("a torn digest was taken for one: %+v", got)
	}
	if names, _ := os.ReadDir(filepath.Join(st.Root, keysFolder)); len(names) != 1 {
		t.Errorf("the keys folder holds %v", names)
	}
}
