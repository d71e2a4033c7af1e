package mcpserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The folder's confinement: what is inside is taken, relative to the
// root; what leaves it, by .., an absolute path or a link, is refused.
func TestMCPConfinedFiles(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(root, "sub"), 0o755)
	os.Symlink(outside, filepath.Join(root, "out"))
	os.Symlink(filepath.Join(root, "sub"), filepath.Join(root, "in"))
	c, err := newConfined(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		arg, want string // want: the path relative to the root, or the error's words
		ok        bool
	}{
		{"", "phases.yaml", true},
		{"sub/phases.yaml", "sub/phases.yaml", true},
		{"sub/../phases.yaml", "phases.yaml", true},
		{"in/phases.yaml", "in/phases.yaml", true}, // a link that stays inside
		{filepath.Join(c.root, "x.yaml"), "x.yaml", true},
		{"../phases.yaml", "outside the folder", false},
		{"sub/../../phases.yaml", "outside the folder", false},
		{"/etc/passwd", "outside the folder", false},
		{"out/phases.yaml", "symbolic link", false},
		{"out/new/deeper.yaml", "symbolic link", false}, // not there yet
	} {
		got, err := c.file("file", tc.arg, "phases.yaml")
		switch {
		case tc.ok && err != nil:
			t.Errorf("%q: %v", tc.arg, err)
		case tc.ok && c.rel(got) != tc.want:
			t.Errorf("%q: %s, want %s", tc.arg, c.rel(got), tc.want)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want an error with %q", tc.arg, err, tc.want)
		}
	}
	if _, err := c.session("../x", ""); err == nil || !strings.Contains(err.Error(), "not a session id") {
		t.Errorf("a path for a session id: %v", err)
	}
}

func TestMCPParseURI(t *testing.T) {
	for _, tc := range []struct {
		uri, id, rel string
		ok           bool
	}{
		{"pipeline://sessions/20261125-093000123-a1b2c3", "20261125-093000123-a1b2c3", "", true},
		{"pipeline://sessions/x/transcripts/design/1-agent.log", "x", "transcripts/design/1-agent.log", true},
		{"pipeline://sessions/x/transcripts/../../state.json", "", "", false},
		{"pipeline://sessions/x/state.json", "", "", false},
		{"pipeline://sessions/x/transcripts/design/1-agent.prompt", "", "", false},
		{"pipeline://sessions/", "", "", false},
		{"file:///etc/passwd", "", "", false},
	} {
		id, rel, ok := parseURI(tc.uri)
		if ok != tc.ok || id != tc.id || rel != tc.rel {
			t.Errorf("%s: %q %q %v", tc.uri, id, rel, ok)
		}
	}
}
