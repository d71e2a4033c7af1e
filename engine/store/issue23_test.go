package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Issue 23, item 27: a .pipeline that is a dangling symbolic link made
// run say "mkdir .pipeline: file exists", and the read commands "no
// sessions yet". The store says it is a link, where it points, and what
// to do; so for a link on a folder above it, and for a link that loops.
func TestIssue23DanglingStateLinkIsNamed(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, root, link, target string
		want                     []string
	}{
		{"the state folder", filepath.Join(dir, "a", ".pipeline"), filepath.Join(dir, "a", ".pipeline"), filepath.Join(dir, "gone"),
			[]string{"is a dangling symbolic link to " + filepath.Join(dir, "gone"), "mkdir -p " + filepath.Join(dir, "gone"), "rm " + filepath.Join(dir, "a", ".pipeline")}},
		{"relative target", filepath.Join(dir, "b", ".pipeline"), filepath.Join(dir, "b", ".pipeline"), "../elsewhere/state",
			[]string{"dangling symbolic link to ../elsewhere/state", "mkdir -p " + filepath.Join(dir, "elsewhere", "state")}},
		{"a folder above", filepath.Join(dir, "c", "state", ".pipeline"), filepath.Join(dir, "c", "state"), filepath.Join(dir, "nowhere"),
			[]string{filepath.Join(dir, "c", "state") + " is a dangling symbolic link"}},
		{"a loop", filepath.Join(dir, "d", ".pipeline"), filepath.Join(dir, "d", ".pipeline"), filepath.Join(dir, "d", ".pipeline"),
			[]string{"leads back to itself (a loop)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := os.MkdirAll(filepath.Dir(c.link), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(c.target, c.link); err != nil {
				t.Fatal(err)
			}
			for what, open := range map[string]func(string) (*Store, error){"Open": Open, "OpenExisting": OpenExisting} {
				st, err := open(c.root)
				if err == nil {
					st.Close()
					t.Fatalf("%s: no error", what)
				}
				if errors.Is(err, ErrNoStore) || !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s: %v (%T), want a missing file (exit 2), not ErrNoStore", what, err, err)
				}
				for _, want := range c.want {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("%s: %q does not say %q", what, err, want)
					}
				}
				if strings.Contains(err.Error(), "file exists") {
					t.Errorf("%s: %q still says mkdir's words", what, err)
				}
			}
		})
	}
}

// Issue 23, item 27: pipeline sessions said "no sessions yet" and exited 0
// when .pipeline/sessions was a file: OpenExisting took it for a store
// with no sessions. It is an error that names the file (ENOTDIR: exit 2).
func TestIssue23SessionsFileIsNotNoSessions(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".pipeline")
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "sessions"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := OpenExisting(root)
	if err == nil || errors.Is(err, ErrNoStore) || !errors.Is(err, syscall.ENOTDIR) || !strings.Contains(err.Error(), "file named sessions") {
		t.Fatalf("OpenExisting: %v; want a file named sessions said, ENOTDIR, not ErrNoStore", err)
	}
	// A link there is refused as any link in the store is.
	if err := os.Remove(filepath.Join(root, "sessions")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(root, "sessions")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenExisting(root); !errors.Is(err, ErrSymlink) {
		t.Fatalf("OpenExisting with a link: %v, want ErrSymlink", err)
	}
}

// Issue 23, item 25: a line of index.tsv with the id ../../../pwned was
// listed by sessions, and clean stopped on it (exit 1) after removing
// other sessions. A line pipeline did not write (an id that is not one
// name of the sessions folder, a key that is not one, a field that is no
// number) is skipped with one warning naming the file and the line, and
// never acted on; the sessions around it list, and go, as before.
func TestIssue23ForgedIndexLineIsSkippedWithAWarning(t *testing.T) {
	st := newStore(t)
	var warnings strings.Builder
	st.Warn = &warnings
	for _, id := range []string{"s1", "s2"} {
		x, err := st.Create(Meta{ID: id, Key: "k"})
		if err != nil {
			t.Fatal(err)
		}
		x.Close()
	}
	outside := filepath.Join(filepath.Dir(st.Root), "pwned")
	if err := os.MkdirAll(outside, 0o700); err != nil {
		t.Fatal(err)
	}
	forged := []string{
		"../../../pwned\tk\tcompleted\t\t\t0\t0\t1\t1\tp\t\tphases.yaml\n",
		"../pwned\tk\tcompleted\t\t\t0\t0\t1\t1\tp\t\tphases.yaml\n",
		"a/b\tk\tfailed\t\t\t0\t0\t1\t1\tp\t\tphases.yaml\n",
		".new-x\tk\tfailed\t\t\t0\t0\t1\t1\tp\t\tphases.yaml\n",
		"s3\x00\tk\tfailed\t\t\t0\t0\t1\t1\tp\t\tphases.yaml\n",
		"s4\tk\tfailed\t\t\tmany\t0\t1\t1\tp\t\tphases.yaml\n",
	}
	f, err := os.OpenFile(filepath.Join(st.Root, IndexName), os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range forged {
		f.WriteString(line)
	}
	f.Close()
	for i := 0; i < 2; i++ {
		list, err := st.List()
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 2 || list[0].ID != "s2" || list[1].ID != "s1" {
			t.Fatalf("List: %v, want s2 and s1 alone", list)
		}
	}
	said := warnings.String()
	if n := strings.Count(said, "\n"); n != len(forged) {
		t.Errorf("%d warnings for %d forged lines (listed twice), want one each:\n%s", n, len(forged), said)
	}
	for _, want := range []string{"index.tsv line 3 is not a line of the sessions index", `"../../../pwned\tk\tcompleted`, "line 8", "skipped"} {
		if !strings.Contains(said, want) {
			t.Errorf("warnings do not say %q:\n%s", want, said)
		}
	}
	// clean's way: every session listed goes, nothing outside the store.
	for _, s := range []string{"s1", "s2"} {
		if err := st.Remove(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CompactIndex(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("the folder outside the store: %v", err)
	}
	content, _ := os.ReadFile(filepath.Join(st.Root, IndexName))
	if strings.Contains(string(content), "pwned") {
		t.Errorf("the compacted index keeps a forged line:\n%s", content)
	}
}
