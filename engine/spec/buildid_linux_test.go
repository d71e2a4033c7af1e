package spec

import (
	"encoding/binary"
	"testing"
)

// The build ID read where the loader mapped the executable is the one
// its file holds.
func TestMappedBuildIDIsTheFilesOne(t *testing.T) {
	mapped, file := mappedBuildID(), fileBuildID()
	if file == "" {
		t.Fatal("the test binary's file has no build ID")
	}
	if mapped != file {
		t.Fatalf("mapped build ID %q, the file's %q", mapped, file)
	}
}

func note(name string, typ uint32, desc string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(name)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(desc)))
	b = binary.LittleEndian.AppendUint32(b, typ)
	b = append(b, name...)
	b = append(b, make([]byte, pad4(uint32(len(name)))-len(name))...)
	b = append(b, desc...)
	return append(b, make([]byte, pad4(uint32(len(desc)))-len(desc))...)
}

// The Go build ID is found among other notes, and a note cut short or
// of another type or owner is none.
func TestGoBuildIDNote(t *testing.T) {
	goNote := note("Go\x00\x00", noteGoBuildID, "abc/defgh")
	for _, tt := range []struct {
		name  string
		notes []byte
		want  string
	}{
		{"alone", goNote, "abc/defgh"},
		{"after GNU's", append(note("GNU\x00", 3, "0123456789abcdef0123"), goNote...), "abc/defgh"},
		{"another type", note("Go\x00\x00", 1, "abc"), ""},
		{"another owner", note("Gx\x00\x00", noteGoBuildID, "abc"), ""},
		{"cut short", goNote[:len(goNote)-4], ""},
		{"a header alone", goNote[:12], ""},
		{"nothing", nil, ""},
		{"a size past the end", binary.LittleEndian.AppendUint32(append([]byte{4, 0, 0, 0}, 0xff, 0xff, 0xff, 0xff), noteGoBuildID), ""},
	} {
		if got := goBuildIDNote(tt.notes); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
