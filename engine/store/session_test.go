package store

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// assertMode fails unless path has exactly the permission bits want.
func assertMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != want {
		t.Errorf("%s has mode %v, want %v", path, got, want)
	}
}

func TestOpenMakesAPrivateStoreKeptOutOfGit(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".pipeline")
	if _, err := Open(root); err != nil {
		t.Fatal(err)
	}
	assertMode(t, filepath.Join(root, "sessions"), 0o700)
	ignore := filepath.Join(root, ".gitignore")
	assertMode(t, ignore, 0o600)
	content, err := os.ReadFile(ignore)
	if err != nil || !strings.HasSuffix(string(content), "\n*\n") {
		t.Errorf(".gitignore %q %v, want it to ignore everything", content, err)
	}
	// A .gitignore the user changed is theirs.
	if err := os.WriteFile(ignore, []byte("sessions/\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(root); err != nil {
		t.Fatal(err)
	}
	if content, _ := os.ReadFile(ignore); string(content) != "sessions/\n" {
		t.Errorf("a second Open rewrote .gitignore: %q", content)
	}
	if _, err := Open(filepath.Join(ignore, "below-a-file")); err == nil {
		t.Error("Open under a file made a store")
	}
}

func TestCreateWritesAWholePrivateSession(t *testing.T) {
	st := newStore(t)
	created := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	meta := Meta{ID: "20261125-100000-abc", Pipeline: "p", File: "/w/phases.yaml", Spec: "/w/spec.md", Key: "k", Created: created}
	x, err := st.Create(meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	assertMode(t, x.Dir, 0o700)
	if _, err := os.Lstat(filepath.Join(x.Dir, "transcripts")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a new session has transcripts/ before a step wrote a byte: %v", err)
	}
	assertMode(t, filepath.Join(x.Dir, "meta.json"), 0o600)
	assertMode(t, filepath.Join(x.Dir, "events.jsonl"), 0o600)
	if left, _ := filepath.Glob(filepath.Join(st.Root, "sessions", newPrefix+"*")); len(left) > 0 {
		t.Errorf("Create left %v", left)
	}

	// Found by its id and by a unique prefix, with the meta it was made with.
	for _, id := range []string{meta.ID, "20261125-1000"} {
		x, err := st.Session(id)
		if err != nil {
			t.Fatalf("Session(%q): %v", id, err)
		}
		x.Close()
		want := meta
		want.Format = Format
		if !x.Meta.Created.Equal(want.Created) {
			t.Errorf("Session(%q) created %v, want %v", id, x.Meta.Created, want.Created)
		}
		x.Meta.Created, want.Created = time.Time{}, time.Time{}
		if x.Meta != want {
			t.Errorf("Session(%q) meta %+v, want %+v", id, x.Meta, want)
		}
	}
	list, err := st.List()
	if err != nil || len(list) != 1 || list[0].ID != meta.ID || list[0].Status != "running" || list[0].Spec != meta.Spec {
		t.Errorf("index after Create: %+v %v", list, err)
	}
	// The same id twice is refused: the first session is not replaced.
	if x, err := st.Create(meta); err == nil {
		x.Close()
		t.Error("a second Create with the same id succeeded")
	}
}

func TestSessionRefusesAMetaItCannotRead(t *testing.T) {
	st := newStore(t)
	cases := []struct {
		name, meta, want string
	}{
		{"no-meta", "", "meta.json"},
		{"bad-meta", "{", "meta.json is not readable"},
		{"format-3", `{"format":3,"id":"format-3"}`, "is in format 3; this pipeline reads formats 1 to 2"},
		{"other-id", `{"format":1,"id":"../outside"}`, `meta.json names session "../outside"`},
	}
	for _, c := range cases {
		dir := filepath.Join(st.Root, "sessions", c.name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if c.meta != "" {
			if err := os.WriteFile(filepath.Join(dir, "meta.json"), []byte(c.meta), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if x, err := st.Session(c.name); err == nil || !strings.Contains(err.Error(), c.want) {
			if err == nil {
				x.Close()
			}
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}

func TestEventsRefusesABadLineBeforeTheEnd(t *testing.T) {
	st := newStore(t)
	x, err := st.Create(Meta{ID: "s1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	x.Close()
	log := filepath.Join(x.Dir, "events.jsonl")
	content := `{"seq":1,"type":"Started","event":{}}` + "\n" + "not an event\n"
	if err := os.WriteFile(log, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Session("s1"); err == nil || !strings.Contains(err.Error(), "events.jsonl line 2 is not readable") {
		t.Errorf("opening a log with a bad line 2: %v", err)
	}
	// A line that starts like an event and is not JSON is refused by Events.
	content = `{"seq":1,"type":"Started","event":{}}` + "\n" + `{"seq":2,"type":` + "\n"
	if err := os.WriteFile(log, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	x, err = st.Session("s1")
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	err = x.Events(0, func(int64, string, []byte) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "event 2 is not readable") {
		t.Errorf("Events over a broken event 2: %v", err)
	}
}

func TestEventsReadsLongLinesWholeAndStopsOnError(t *testing.T) {
	st := newStore(t)
	x, err := st.Create(Meta{ID: "s1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	// Longer than the reader's 256 KiB buffer.
	long, _ := json.Marshal(map[string]string{"Notes": strings.Repeat("n", 600<<10)})
	for _, payload := range [][]byte{[]byte(`{}`), long, []byte(`{}`)} {
		if _, err := x.Append("Noted", payload); err != nil {
			t.Fatal(err)
		}
	}
	var got []int
	err = x.Events(0, func(seq int64, typ string, payload []byte) error {
		if typ != "Noted" {
			t.Errorf("event %d has type %q", seq, typ)
		}
		got = append(got, len(payload))
		return nil
	})
	if err != nil || len(got) != 3 || got[1] != len(long) {
		t.Fatalf("events %v %v, want 3 with the second %d bytes long", got, err, len(long))
	}
	stop := errors.New("stop")
	calls := 0
	err = x.Events(0, func(int64, string, []byte) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("Events after fn failed: %v, %d calls", err, calls)
	}
}

func TestReadSnapshotWithoutOrWithABrokenSnapshot(t *testing.T) {
	st := newStore(t)
	x, err := st.Create(Meta{ID: "s1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if seq, state, err := x.ReadSnapshot(); seq != 0 || state != nil || err != nil {
		t.Errorf("no snapshot: %d %s %v", seq, state, err)
	}
	if err := os.WriteFile(filepath.Join(x.Dir, "state.json"), []byte(`{"format":1,`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := x.ReadSnapshot(); err == nil || !strings.Contains(err.Error(), "state.json is not readable") {
		t.Errorf("a cut snapshot: %v", err)
	}
}

func TestWriteFile(t *testing.T) {
	st := newStore(t)
	x, err := st.Create(Meta{ID: "s1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if content, err := x.ReadFile("pause-request"); content != nil || err != nil {
		t.Errorf("ReadFile of a missing file: %q %v, want nil, nil", content, err)
	}
	if err := x.WriteFile("pause-request", []byte("a long first request\n")); err != nil {
		t.Fatal(err)
	}
	// A shorter content replaces the longer one whole.
	if err := x.WriteFile("pause-request", []byte("second\n")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(x.Dir, "pause-request")
	assertMode(t, path, 0o600)
	if content, err := x.ReadFile("pause-request"); string(content) != "second\n" || err != nil {
		t.Errorf("ReadFile: %q %v, want the second content", content, err)
	}
	assertNoTempFiles(t, x.Dir)
	if err := x.RemoveFile("pause-request"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after RemoveFile: %v", err)
	}
	if err := x.RemoveFile("pause-request"); err != nil {
		t.Errorf("RemoveFile of a missing file: %v", err)
	}
	if err := x.WriteFile(filepath.Join("no-such-folder", "f"), []byte("x")); err == nil {
		t.Error("WriteFile into a missing folder succeeded")
	}
	// A folder in the way: it is a reading error, not a missing file.
	if err := os.Mkdir(filepath.Join(x.Dir, "a-folder"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := x.ReadFile("a-folder"); err == nil {
		t.Error("ReadFile of a folder gave no error")
	}
	if err := x.WriteFile("a-folder", []byte("x")); err == nil {
		t.Error("WriteFile over a folder succeeded")
	}
	assertNoTempFiles(t, x.Dir)
}

func TestCreateTranscriptAppends(t *testing.T) {
	st := newStore(t)
	x, err := st.Create(Meta{ID: "s1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	path := x.TranscriptPath("build", 2, "test")
	if want := filepath.Join(x.Dir, "transcripts", "build", "2-test.log"); path != want {
		t.Errorf("TranscriptPath %s, want %s", path, want)
	}
	for _, text := range []string{"first\n", "second\n"} {
		f, err := x.CreateTranscript("build", 2, "test")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(text); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if content, _ := os.ReadFile(path); string(content) != "first\nsecond\n" {
		t.Errorf("transcript %q, want both writes in order", content)
	}
	assertMode(t, filepath.Dir(filepath.Dir(path)), 0o700)
	assertMode(t, filepath.Dir(path), 0o700)
	assertMode(t, path, 0o600)
}
