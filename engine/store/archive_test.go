package store

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hideS3cr3t is a filter that redacts one word: it shows that every file but meta.json
// passes through the export's filter.
type hideS3cr3t struct{}

func (hideS3cr3t) Write(chunk []byte) []byte {
	return bytes.ReplaceAll(chunk, []byte("s3cr3t"), []byte("[REDACTED]"))
}
func (hideS3cr3t) Flush() []byte { return nil }

const testID = "20261125-093000123-a1b2c3"

var extraFiles = []string{"spec-at-pause.md", "spec-at-pause.sha256"}

// exportedSession makes a session in a project's store, with every kind
// of file a session has, and exports it.
func exportedSession(t *testing.T) (*Store, []byte) {
	t.Helper()
	project := t.TempDir()
	st, err := Open(filepath.Join(project, ".pipeline"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	file, spec := filepath.Join(project, "phases.yaml"), filepath.Join(project, "specs", "a.md")
	k := st.Key(file, spec)
	created := time.Date(2026, 11, 25, 9, 30, 0, 0, time.UTC)
	x, err := st.Create(Meta{ID: testID, Pipeline: "p", File: file, Spec: spec, Key: k, Created: created})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []string{`{"At":"2026-11-25T09:30:00Z"}`, `{"Notes":"the token is s3cr3t"}`} {
		if _, err := x.Append("Noted", []byte(ev)); err != nil {
			t.Fatal(err)
		}
	}
	sum := Summary{ID: testID, Key: k, Pipeline: "p", File: file, Spec: spec, Status: "paused", Phase: "design",
		PauseReason: "checkpoint", Tokens: 42, CostUSD: 0.5, Created: created, Updated: created.Add(time.Minute)}
	if err := x.WriteSnapshot(2, []byte(`{"status":"paused"}`), sum); err != nil {
		t.Fatal(err)
	}
	tr, err := x.CreateTranscript("design", 1, "agent")
	if err != nil {
		t.Fatal(err)
	}
	tr.WriteString("agent: working\n[CHECKPOINT] s3cr3t draft\n")
	tr.Close()
	for n, content := range map[string]string{"spec-at-pause.md": "# Spec\n", "spec-at-pause.sha256": "abc\n",
		"step-process": "1234 boot", "pause-request.txt": "stop"} {
		if err := x.WriteFile(n, []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	x.Close()
	var b bytes.Buffer
	m, err := st.Export(testID, &b, ExportOptions{Summary: sum, Files: extraFiles, Filter: func() Filter { return hideS3cr3t{} }, Now: created})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range m.Files {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, " "); got != "meta.json state.json events.jsonl spec-at-pause.md spec-at-pause.sha256 transcripts/design/1-agent.log" {
		t.Errorf("exported %s", got)
	}
	return st, b.Bytes()
}

// importStore is a store in another project: another checkout.
func importStore(t *testing.T) *Store {
	t.Helper()
	st, err := Open(filepath.Join(t.TempDir(), "other-checkout", ".pipeline"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func importOptions() ImportOptions {
	return ImportOptions{Files: extraFiles, Holder: Holder{PID: os.Getpid()}}
}

func TestExportImportRoundTrip(t *testing.T) {
	from, archive := exportedSession(t)
	to := importStore(t)
	got, err := to.Import(context.Background(), bytes.NewReader(archive), importOptions())
	if err != nil {
		t.Fatal(err)
	}
	if got.Unchanged || got.Replaced || got.Meta.ID != testID {
		t.Errorf("imported %+v", got)
	}
	wantFile, wantSpec := filepath.Join(to.Base(), "phases.yaml"), filepath.Join(to.Base(), "specs", "a.md")
	if got.Meta.File != wantFile || got.Meta.Spec != wantSpec {
		t.Errorf("the imported session runs %s %s, want the files of its new project", got.Meta.File, got.Meta.Spec)
	}
	src, dst := filepath.Join(from.Root, "sessions", testID), filepath.Join(to.Root, "sessions", testID)
	for _, n := range []string{"events.jsonl", "state.json", "spec-at-pause.md", "transcripts/design/1-agent.log"} {
		a, _ := os.ReadFile(filepath.Join(src, n))
		b, err := os.ReadFile(filepath.Join(dst, n))
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		if want := bytes.ReplaceAll(a, []byte("s3cr3t"), []byte("[REDACTED]")); !bytes.Equal(b, want) {
			t.Errorf("%s: %q, want %q", n, b, want)
		}
		assertMode(t, filepath.Join(dst, n), 0o600)
	}
	for _, n := range []string{"step-process", "pause-request.txt"} {
		if _, err := os.Stat(filepath.Join(dst, n)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s went with the session: %v", n, err)
		}
	}
	assertMode(t, dst, 0o700)
	assertNoTempFiles(t, to.Root)
	list, err := to.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("listed %+v %v", list, err)
	}
	if s := list[0]; s.ID != testID || s.Key != got.Meta.Key || s.Key != to.Key(wantFile, wantSpec) || s.Status != "paused" ||
		s.Phase != "design" || s.Tokens != 42 || s.File != wantFile || s.Spec != wantSpec {
		t.Errorf("listed %+v", s)
	}
	x, err := to.ReadSession(testID)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if x.Seq() != 2 {
		t.Errorf("the imported log ends at event %d", x.Seq())
	}
	seq, state, err := x.ReadSnapshot()
	if err != nil || seq != 2 || string(state) != `{"status":"paused"}` {
		t.Errorf("snapshot %d %s %v", seq, state, err)
	}

	// The same archive again: nothing to do.
	again, err := to.Import(context.Background(), bytes.NewReader(archive), importOptions())
	if err != nil || !again.Unchanged {
		t.Errorf("a second import: %+v %v", again, err)
	}
}

// A session that is already there with other content is not replaced,
// unless asked; then the archive's takes its place.
func TestImportRefusesToReplaceUnlessAsked(t *testing.T) {
	from, archive := exportedSession(t)
	to := importStore(t)
	if _, err := to.Import(context.Background(), bytes.NewReader(archive), importOptions()); err != nil {
		t.Fatal(err)
	}
	x, err := from.Session(testID)
	if err != nil {
		t.Fatal(err)
	}
	x.Append("Noted", []byte(`{"Notes":"more"}`))
	x.Close()
	var b bytes.Buffer
	if _, err := from.Export(testID, &b, ExportOptions{Files: extraFiles, Summary: Summary{Status: "paused"}}); err != nil {
		t.Fatal(err)
	}
	_, err = to.Import(context.Background(), bytes.NewReader(b.Bytes()), importOptions())
	var exists *ExistsError
	if !errors.As(err, &exists) || !strings.Contains(err.Error(), "events.jsonl") {
		t.Fatalf("importing a newer version: %v", err)
	}
	o := importOptions()
	o.Replace = true
	// Not while it runs.
	x, _ = to.Session(testID)
	lock, err := to.Lock(x.Meta.Key, Holder{PID: 1, Session: testID})
	x.Close()
	if err != nil {
		t.Fatal(err)
	}
	var locked *LockedError
	if _, err := to.Import(context.Background(), bytes.NewReader(b.Bytes()), o); !errors.As(err, &locked) {
		t.Errorf("replacing a running session: %v", err)
	}
	lock.Release()
	got, err := to.Import(context.Background(), bytes.NewReader(b.Bytes()), o)
	if err != nil || !got.Replaced {
		t.Fatalf("replacing: %+v %v", got, err)
	}
	x, err = to.ReadSession(testID)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if x.Seq() != 3 {
		t.Errorf("the replaced session ends at event %d, want 3", x.Seq())
	}
	assertNoTempFiles(t, to.Root)
	if left, _ := filepath.Glob(filepath.Join(to.Root, "sessions", ".*")); len(left) > 0 {
		t.Errorf("left %v", left)
	}
}

// entry is one entry of a tar, for the hostile archives.
type entry struct {
	hdr  tar.Header
	body []byte
}

func readArchive(t *testing.T, archive []byte) []entry {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var out []entry
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		out = append(out, entry{*hdr, body})
	}
}

func writeArchive(t *testing.T, entries []entry) []byte {
	t.Helper()
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		hdr := e.hdr
		if err := tw.WriteHeader(&hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.body); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	gz.Close()
	return b.Bytes()
}

// withManifest rewrites the manifest of entries with change.
func withManifest(t *testing.T, entries []entry, change func(m *Manifest)) []entry {
	t.Helper()
	var m Manifest
	if err := json.Unmarshal(entries[0].body, &m); err != nil {
		t.Fatal(err)
	}
	change(&m)
	body, _ := json.Marshal(m)
	out := append([]entry{{entries[0].hdr, body}}, entries[1:]...)
	out[0].hdr.Size = int64(len(body))
	return out
}

// withFile adds a file to an archive, listed in its manifest as it is.
func withFile(t *testing.T, entries []entry, hdr tar.Header, body []byte, listedName string) []entry {
	t.Helper()
	hdr.Size = int64(len(body))
	entries = withManifest(t, entries, func(m *Manifest) {
		m.Files = append(m.Files, ArchivedFile{Name: listedName, Size: int64(len(body)), SHA256: sha(body)})
	})
	return append(entries, entry{hdr, body})
}

// Import trusts nothing in an archive: every hostile one is refused
// before anything is written, and the store is left as it was.
func TestImportRefusesHostileArchives(t *testing.T) {
	_, archive := exportedSession(t)
	base := readArchive(t, archive)
	reg := func(n string) tar.Header { return tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644} }
	meta := func(change func(m map[string]any)) []entry {
		var m map[string]any
		if err := json.Unmarshal(base[1].body, &m); err != nil {
			t.Fatal(err)
		}
		change(m)
		body, _ := json.Marshal(m)
		entries := withManifest(t, base, func(mf *Manifest) {
			mf.Files[0].Size, mf.Files[0].SHA256 = int64(len(body)), sha(body)
		})
		entries[1] = entry{entries[1].hdr, body}
		entries[1].hdr.Size = int64(len(body))
		return entries
	}
	for _, c := range []struct {
		name    string
		archive []byte
		max     int64
		want    string
	}{
		{"not gzip", []byte("PK\x03\x04 a zip"), 0, "gzip'd tar"},
		{"no manifest first", writeArchive(t, base[1:]), 0, "first entry is"},
		{"other kind", writeArchive(t, withManifest(t, base, func(m *Manifest) { m.Kind = "backup" })), 0, `says "backup"`},
		{"other format", writeArchive(t, withManifest(t, base, func(m *Manifest) { m.Format = 7 })), 0, "archive is in format 7; this pipeline reads format 1"},
		{"other store format", writeArchive(t, withManifest(t, base, func(m *Manifest) { m.StoreFormat = 9 })), 0, "in format 9"},
		{"session id a path", writeArchive(t, withManifest(t, base, func(m *Manifest) { m.Session = "../x" })), 0, `session "../x"`},
		{"session id the start of one", writeArchive(t, withManifest(t, base, func(m *Manifest) { m.Session = "2026" })), 0, "whole session id"},
		{"absolute path", writeArchive(t, withFile(t, base, reg("/etc/cron.d/x"), []byte("x"), "state.json.bak")), 0, "not a file of a session"},
		{"absolute entry", writeArchive(t, append(base, entry{reg("/etc/cron.d/x"), nil})), 0, `"/etc/cron.d/x" is not a path inside the archive`},
		{"dot-dot entry", writeArchive(t, append(base, entry{reg(testID + "/../../x"), nil})), 0, "(absolute, or with ..)"},
		{"backslash entry", writeArchive(t, append(base, entry{reg(testID + `\..\x`), nil})), 0, "(absolute, or with ..)"},
		{"dot-dot listed", writeArchive(t, withFile(t, base, reg(testID+"/transcripts/../../x"), []byte("x"), "transcripts/../../x")), 0, "not a file of a session"},
		{"step-process", writeArchive(t, withFile(t, base, reg(testID+"/step-process"), []byte("1"), "step-process")), 0, `lists "step-process"`},
		{"symlink", writeArchive(t, append(base, entry{tar.Header{Typeflag: tar.TypeSymlink, Name: testID + "/transcripts/design/2-agent.log", Linkname: "/etc/passwd"}, nil})), 0, "is a symbolic link"},
		{"hard link", writeArchive(t, append(base, entry{tar.Header{Typeflag: tar.TypeLink, Name: testID + "/transcripts/design/2-agent.log", Linkname: "/etc/passwd"}, nil})), 0, "is a hard link"},
		{"device", writeArchive(t, append(base, entry{tar.Header{Typeflag: tar.TypeChar, Name: testID + "/transcripts/design/2-agent.log", Devmajor: 1, Devminor: 3}, nil})), 0, "is a device"},
		{"pipe", writeArchive(t, append(base, entry{tar.Header{Typeflag: tar.TypeFifo, Name: testID + "/transcripts/design/2-agent.log"}, nil})), 0, "is a named pipe"},
		{"not listed", writeArchive(t, append(base, entry{reg(testID + "/transcripts/design/2-agent.log"), nil})), 0, "is not listed"},
		{"twice", writeArchive(t, append(base, base[len(base)-1])), 0, "comes twice"},
		{"listed, absent", writeArchive(t, base[:len(base)-1]), 0, "which the archive does not hold"},
		{"size differs", writeArchive(t, withManifest(t, base, func(m *Manifest) { m.Files[1].Size++ })), 0, "; manifest.json says"},
		{"hash differs", writeArchive(t, withManifest(t, base, func(m *Manifest) { m.Files[1].SHA256 = strings.Repeat("0", 64) })), 0, "does not match its size and SHA-256"},
		{"meta with absolute paths", writeArchive(t, meta(func(m map[string]any) { m["file"] = "/etc/phases.yaml" })), 0, "absolute paths"},
		{"meta of another session", writeArchive(t, meta(func(m map[string]any) { m["id"] = "20261125-093000123-ffffff" })), 0, "names session"},
		{"meta with another key", writeArchive(t, meta(func(m map[string]any) { m["key"] = "abc" })), 0, "not the one of its paths"},
		{"torn log", writeArchive(t, withManifest(t, replaceBody(base, testID+"/events.jsonl", []byte(`{"seq":1,"type":"Noted","event":{}}`+"\n"+`{"seq":2,`)),
			func(m *Manifest) {
				fixListing(m, "events.jsonl", []byte(`{"seq":1,"type":"Noted","event":{}}`+"\n"+`{"seq":2,`))
			})), 0, "ends in part of a line"},
		{"log out of order", writeArchive(t, withManifest(t, replaceBody(base, testID+"/events.jsonl", []byte(`{"seq":2,"type":"Noted","event":{}}`+"\n")),
			func(m *Manifest) { fixListing(m, "events.jsonl", []byte(`{"seq":2,"type":"Noted","event":{}}`+"\n")) })), 0, "is not event 1"},
		// A tar bomb: what the manifest declares is refused before a byte
		// is written, whatever the entries say.
		{"declared too big", writeArchive(t, withManifest(t, base, func(m *Manifest) { m.Files[1].Size = 1 << 40 })), 0, "more than 4 GiB"},
		{"too big for the limit", writeArchive(t, withFile(t, base, reg(testID+"/transcripts/design/2-agent.log"), make([]byte, 2<<20), "transcripts/design/2-agent.log")),
			1 << 20, "more than 1 MiB"},
		{"entry bigger than declared", writeArchive(t, append(withManifest(t, base, func(m *Manifest) {
			m.Files = append(m.Files, ArchivedFile{Name: "transcripts/design/2-agent.log", Size: 10, SHA256: strings.Repeat("0", 64)})
		}), entry{tar.Header{Typeflag: tar.TypeReg, Name: testID + "/transcripts/design/2-agent.log", Size: 3 << 20}, make([]byte, 3<<20)})), 0, "is 3145728 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			to := importStore(t)
			o := importOptions()
			o.CheckID = func(id string) error {
				if len(id) != len(testID) {
					return errors.New("not a whole session id")
				}
				return nil
			}
			o.MaxSize = c.max
			_, err := to.Import(context.Background(), bytes.NewReader(c.archive), o)
			var archiveErr *ArchiveError
			if !errors.As(err, &archiveErr) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v; want an ArchiveError with %q", err, c.want)
			}
			if left, _ := os.ReadDir(filepath.Join(to.Root, "sessions")); len(left) > 0 {
				t.Errorf("left in the store: %v", left)
			}
			if list, _ := to.List(); len(list) > 0 {
				t.Errorf("listed %+v", list)
			}
			if _, err := os.Stat("/etc/cron.d/x"); err == nil {
				t.Error("a file was written outside the store")
			}
		})
	}
}

func replaceBody(entries []entry, n string, body []byte) []entry {
	out := append([]entry(nil), entries...)
	for i := range out {
		if out[i].hdr.Name == n {
			out[i].body, out[i].hdr.Size = body, int64(len(body))
		}
	}
	return out
}

func fixListing(m *Manifest, n string, body []byte) {
	for i := range m.Files {
		if m.Files[i].Name == n {
			m.Files[i].Size, m.Files[i].SHA256 = int64(len(body)), sha(body)
		}
	}
}
