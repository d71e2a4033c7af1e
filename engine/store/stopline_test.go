package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// stoppedSession makes session s1 with two events, the second a stop
// carrying state, and returns it open.
func stoppedSession(t *testing.T, st *Store, state string) *Session {
	t.Helper()
	x, err := st.Create(Meta{ID: "s1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	if _, err := x.Append("Started", []byte(`{"At":"2026-11-28T06:00:00Z"}`)); err != nil {
		t.Fatal(err)
	}
	if !x.TakesState(len(state)) {
		t.Fatal("a new session of one event does not take its stop's state in its log")
	}
	if seq, err := x.AppendState("Completed", []byte(`{"At":"2026-11-28T06:00:01Z"}`), []byte(state)); err != nil || seq != 2 {
		t.Fatalf("AppendState: %d %v", seq, err)
	}
	return x
}

// A stop's state in the log is the session's snapshot: no state.json is
// made, a reader of the session finds the state as of the stop, and the
// event readers see the event as Append would have written it.
func TestAStopInTheLogIsTheSnapshot(t *testing.T) {
	st := newStore(t)
	x := stoppedSession(t, st, `{"status":"completed"}`)
	if _, err := os.Stat(filepath.Join(x.Dir, "state.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state.json: %v, want none", err)
	}
	r, err := st.ReadSession("s1")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	seq, state, err := r.ReadSnapshot()
	if err != nil || seq != 2 || string(state) != `{"status":"completed"}` {
		t.Fatalf("ReadSnapshot: %d %s %v; want 2 and the stop's state", seq, state, err)
	}
	var types, payloads []string
	if err := r.Events(0, func(_ int64, typ string, payload []byte) error {
		types, payloads = append(types, typ), append(payloads, string(payload))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(types, ",") != "Started,Completed" || payloads[1] != `{"At":"2026-11-28T06:00:01Z"}` {
		t.Errorf("events %v %v", types, payloads)
	}
	file, content, err := st.ReadSnapshotFile("s1")
	if err != nil || file.Rel != StateFile || string(content) != `{"format":2,"seq":2,"state":{"status":"completed"}}` {
		t.Errorf("ReadSnapshotFile: %+v %s %v", file, content, err)
	}
}

// A stop whose log cannot be synced is taken back: the log is as it was,
// the next event takes its number, and the snapshot is the one before.
func TestAStopWhoseSyncFailsIsTakenBackOutOfTheLog(t *testing.T) {
	st := newStore(t)
	x := stoppedSession(t, st, `{"status":"paused"}`)
	before, err := os.ReadFile(filepath.Join(x.Dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	syncLog = func(*os.File) error { return syscall.EIO }
	defer func() { syncLog = fdatasyncLog }()
	if _, err := x.AppendState("Completed", []byte(`{"At":"2026-11-28T06:00:02Z"}`), []byte(`{"status":"completed"}`)); !errors.Is(err, syscall.EIO) {
		t.Fatalf("AppendState whose sync fails: %v, want EIO", err)
	}
	after, _ := os.ReadFile(filepath.Join(x.Dir, "events.jsonl"))
	if !bytes.Equal(after, before) || x.Seq() != 2 {
		t.Errorf("the log after a stop whose sync failed (seq %d):\n%s\nwant:\n%s", x.Seq(), after, before)
	}
	if seq, state, err := x.ReadSnapshot(); err != nil || seq != 2 || string(state) != `{"status":"paused"}` {
		t.Errorf("the snapshot after a stop taken back: %d %s %v; want the pause's", seq, state, err)
	}
	if seq, err := x.Append("Noted", []byte(`{}`)); err != nil || seq != 3 {
		t.Errorf("the next event: %d %v, want 3", seq, err)
	}
}

// The later snapshot wins: a state.json written after a stop in the log
// (a resumed run's), and a stop in the log after a state.json.
func TestTheLaterSnapshotIsRead(t *testing.T) {
	st := newStore(t)
	x := stoppedSession(t, st, `{"status":"paused"}`)
	if _, err := x.Append("Resumed", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := x.WriteSnapshot(3, []byte(`{"status":"running"}`), Summary{ID: "s1", Key: "k", Status: "running"}); err != nil {
		t.Fatal(err)
	}
	if x.TakesState(10) {
		t.Error("a session with a state.json takes a stop's state in its log")
	}
	read := func() (int64, string) {
		t.Helper()
		r, err := st.ReadSession("s1")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		seq, state, err := r.ReadSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		return seq, string(state)
	}
	if seq, state := read(); seq != 3 || state != `{"status":"running"}` {
		t.Errorf("with state.json after the stop: %d %s", seq, state)
	}
	// Written by hand (TakesState says no): the log's later state wins.
	if _, err := x.AppendState("Completed", []byte(`{}`), []byte(`{"status":"completed"}`)); err != nil {
		t.Fatal(err)
	}
	if seq, state := read(); seq != 4 || state != `{"status":"completed"}` {
		t.Errorf("with a stop in the log after state.json: %d %s", seq, state)
	}
}

// A log at the bound takes no more states: the stop writes state.json.
func TestALongLogTakesNoState(t *testing.T) {
	st := newStore(t)
	x := stoppedSession(t, st, `{}`)
	if _, err := x.Append("Noted", []byte(`{"Notes":"`+strings.Repeat("n", StateInLogMost)+`"}`)); err != nil {
		t.Fatal(err)
	}
	if x.TakesState(2) {
		t.Error("a log past StateInLogMost takes a stop's state")
	}
}

// A session written before stops carried their state (state.json, plain
// event lines) reads as ever.
func TestASessionWithOnlyStateJSONReads(t *testing.T) {
	st := newStore(t)
	x, err := st.Create(Meta{ID: "s1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for _, typ := range []string{"Started", "Completed"} {
		if _, err := x.Append(typ, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.WriteSnapshot(2, []byte(`{"status":"completed"}`), Summary{ID: "s1", Key: "k", Status: "completed"}); err != nil {
		t.Fatal(err)
	}
	r, err := st.ReadSession("s1")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if seq, state, err := r.ReadSnapshot(); err != nil || seq != 2 || string(state) != `{"status":"completed"}` {
		t.Errorf("ReadSnapshot: %d %s %v", seq, state, err)
	}
}

// A line is a stop's only by its first fields: an event whose payload
// says "format" is not, nor is a type that JSON escapes.
func TestIsStateLine(t *testing.T) {
	for line, want := range map[string]bool{
		`{"seq":2,"type":"Completed","format":2,"state":{},"event":{}}`:   true,
		`{"seq":2,"type":"Completed","event":{"format":2,"state":{}}}`:    false,
		`{"seq":2,"type":"Com\"pleted","format":2,"state":{},"event":{}}`: false,
		`{"seq":2,"type":"Completed\\","format":2,"state":{},"event":{}}`: false,
		`{"seq":2,"type":"Completed","event":{}}`:                         false,
		`{"seq":2}`: false,
		`{"type":"Completed","seq":2,"format":2,"state":{},"event":{}}`:             false,
		`{"seq":12345,"type":"StepFinished","format":1,"state":{"a":1},"event":{}}`: true,
	} {
		if got := isStateLine([]byte(line)); got != want {
			t.Errorf("isStateLine(%s) = %v, want %v", line, got, want)
		}
	}
	if _, err := stateLineJSON(1, `a"b`, []byte(`{}`), []byte(`{}`)); err == nil {
		t.Error("a type JSON escapes was given a state line")
	}
}
