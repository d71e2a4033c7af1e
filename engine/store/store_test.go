package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func newStore(t testing.TB) *Store {
	t.Helper()
	st, err := Open(filepath.Join(t.TempDir(), ".pipeline"))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// newSession is a new session s1 of st, closed when the test ends.
func newSession(t testing.TB, st *Store) *Session {
	t.Helper()
	x, err := st.Create(Meta{ID: "s1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

func TestEventsSurviveATornLastLine(t *testing.T) {
	st := newStore(t)
	x, err := st.Create(Meta{ID: "s1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := x.Append("Noted", []byte(fmt.Sprintf(`{"Notes":"%d"}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	x.Close()
	// A machine crash can leave half a line at the end.
	f, _ := os.OpenFile(filepath.Join(x.Dir, "events.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"seq":4,"type":"No`)
	f.Close()
	x, err = st.Session("s1")
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	var seen []int64
	x.Events(1, func(seq int64, typ string, _ []byte) error {
		seen = append(seen, seq)
		return nil
	})
	if fmt.Sprint(seen) != "[2 3]" || x.Seq() != 3 {
		t.Fatalf("events after 1: %v, seq %d", seen, x.Seq())
	}
}

func TestSnapshotAndFormat(t *testing.T) {
	st := newStore(t)
	x, _ := st.Create(Meta{ID: "s1", Key: "k", Created: time.Now()})
	defer x.Close()
	if err := x.WriteSnapshot(7, []byte(`{"status":"paused"}`), Summary{ID: "s1", Key: "k", Status: "paused"}); err != nil {
		t.Fatal(err)
	}
	seq, state, err := x.ReadSnapshot()
	if err != nil || seq != 7 || string(state) != `{"status":"paused"}` {
		t.Fatalf("snapshot %d %s %v", seq, state, err)
	}
	list, _ := st.List()
	if len(list) != 1 || list[0].Status != "paused" {
		t.Fatalf("list %+v", list)
	}
	// Format 1 wrote the same snapshot.
	os.WriteFile(filepath.Join(x.Dir, "state.json"), []byte(`{"format":1,"seq":1,"state":{}}`), 0o600)
	if seq, _, err := x.ReadSnapshot(); err != nil || seq != 1 {
		t.Fatalf("a format-1 snapshot: %d %v", seq, err)
	}
	os.WriteFile(filepath.Join(x.Dir, "state.json"), []byte(`{"format":3,"seq":1,"state":{}}`), 0o600)
	if _, _, err := x.ReadSnapshot(); err == nil || !contains(err.Error(), "format 3") {
		t.Fatalf("a format-3 snapshot: %v", err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestLock(t *testing.T) {
	st := newStore(t)
	first, err := st.Lock("k", Holder{PID: 42, Session: "s1", Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Lock("k", Holder{PID: 43})
	var locked *LockedError
	if !errors.As(err, &locked) || locked.Holder.PID != 42 || !contains(err.Error(), "pid 42") {
		t.Fatalf("second lock: %v", err)
	}
	if !st.Held("k") {
		t.Fatal("Held says free")
	}
	first.Release()
	if st.Held("k") {
		t.Fatal("Held after release")
	}
	second, err := st.Lock("k", Holder{PID: 43})
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	second.Release()
}

// sessions on disk: listing reads the index, not each session.
func BenchmarkList10000Sessions(b *testing.B) {
	st := storeOfSessions(b, 10000, func(i int) string { return fmt.Sprint(i % 50) }, "completed")
	b.ResetTimer()
	for b.Loop() {
		list, err := st.List()
		if err != nil || len(list) != 10000 {
			b.Fatalf("%d sessions, %v", len(list), err)
		}
	}
}

// A session has a line per snapshot: the index of a store has a few per
// session, and every run lists it.
func BenchmarkList1000SessionsOfThreeLines(b *testing.B) {
	st := storeOfSessions(b, 1000, func(int) string { return "k" }, "running", "paused", "completed")
	b.ResetTimer()
	for b.Loop() {
		list, err := st.List()
		if err != nil || len(list) != 1000 || list[0].Status != "completed" {
			b.Fatalf("%d sessions, %v", len(list), err)
		}
	}
}

// A read error in the event log is an error, not the end of the log: a
// resume must not continue from a state with events missing.
func TestEventsReportsReadError(t *testing.T) {
	st := newStore(t)
	x, err := st.Create(Meta{ID: "s1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if _, err := x.Append("Noted", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	// A folder in the log's place: it opens, and reading it fails (EISDIR).
	log := filepath.Join(x.Dir, "events.jsonl")
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(log, 0o700); err != nil {
		t.Fatal(err)
	}
	err = x.Events(0, func(int64, string, []byte) error { return nil })
	if err == nil {
		t.Fatal("Events over an unreadable log returned no error")
	}
}

// Session took any id to a folder: "" opened the sessions folder itself,
// a .new- prefix a session still being made, a pattern whatever it
// matched, and a path a folder outside the store (creating an
// events.jsonl there).
func TestSessionOpensOnlyASessionFolder(t *testing.T) {
	st := newStore(t)
	for _, id := range []string{"s-a", "s-b"} {
		x, err := st.Create(Meta{ID: id, Key: "k"})
		if err != nil {
			t.Fatal(err)
		}
		x.Close()
	}
	// A session whose making was cut short, and a folder outside the store
	// that looks like a session.
	for dir, id := range map[string]string{filepath.Join(st.Root, "sessions", newPrefix+"s-c"): "s-c", filepath.Join(st.Root, "outside"): "../outside"} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "meta.json"), []byte(`{"format":1,"id":"`+id+`"}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"", ".", "..", "s-", "nope", newPrefix + "s-c", newPrefix, "s-[a]", "s-?", "../outside", `..\outside`} {
		x, err := st.Session(id)
		if err == nil {
			x.Close()
		}
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("Session(%q): %v, want ErrNotFound", id, err)
		}
	}
	if _, err := os.Stat(filepath.Join(st.Root, "outside", "events.jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Session wrote outside the sessions folder: %v", err)
	}
}

// A snapshot that was not written is not listed: the index keeps saying
// what the files say.
func TestWriteSnapshotErrorLeavesTheIndex(t *testing.T) {
	st := newStore(t)
	x, err := st.Create(Meta{ID: "s1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := os.RemoveAll(x.Dir); err != nil {
		t.Fatal(err)
	}
	if err := x.WriteSnapshot(3, []byte(`{}`), Summary{ID: "s1", Key: "k", Status: "paused"}); err == nil {
		t.Fatal("WriteSnapshot into a removed session succeeded")
	}
	list, err := st.List()
	if err != nil || len(list) != 1 || list[0].Status != "running" {
		t.Errorf("index after a failed snapshot: %+v %v, want s1 still running", list, err)
	}
}

// A session opened for reading writes nothing: not even the event log of
// a session cut short before its first event.
func TestReadSessionWritesNothing(t *testing.T) {
	st := newStore(t)
	x, err := st.Create(Meta{ID: "s-read", Key: "k", Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	x.Close()
	log := filepath.Join(st.Root, "sessions", "s-read", "events.jsonl")
	os.Remove(log)
	r, err := st.ReadSession("s-re")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := os.Stat(log); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadSession made the event log: %v", err)
	}
	if _, err := r.Append("Started", []byte(`{}`)); err == nil {
		t.Error("Append on a session opened for reading")
	}
	if err := r.WriteSnapshot(0, []byte(`{}`), Summary{ID: "s-read"}); err == nil {
		t.Error("WriteSnapshot on a session opened for reading")
	}
	n := 0
	if err := r.Events(0, func(int64, string, []byte) error { n++; return nil }); err != nil || n != 0 {
		t.Errorf("events of a session with no log: %d, %v", n, err)
	}
}
