package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// withStateLine makes session s1 of st with a Started event and then
// line, written as it is, and returns it opened for reading.
func withStateLine(t *testing.T, st *Store, line string) *Session {
	t.Helper()
	x, err := st.Create(Meta{ID: "s1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Append("Started", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	log, err := os.OpenFile(filepath.Join(x.Dir, "events.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	if _, err := log.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
	r, err := st.ReadSession("s1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// A state line's snapshot is as of the line's place in the log, the
// number the open's scan (and an import's check) read first: a forged
// line that says another seq further on (JSON takes the last of a key
// given twice) does not have its reader apply again, or skip, events.
func TestAStateLineIsAsOfItsPlaceInTheLog(t *testing.T) {
	for _, line := range []string{
		`{"seq":2,"type":"Completed","format":2,"state":{"status":"completed"},"event":{},"seq":1}`,
		`{"seq":2,"type":"Completed","format":2,"state":{"status":"completed"},"event":{},"seq":9}`,
	} {
		x := withStateLine(t, newStore(t), line)
		if seq, state, err := x.ReadSnapshot(); err != nil || seq != 2 || string(state) != `{"status":"completed"}` {
			t.Errorf("ReadSnapshot of %s: %d %s %v; want 2, the line's place", line, seq, state, err)
		}
	}
}

// A state line without a state is not a snapshot of nothing: read, it
// would have its reader start from an empty state and skip every event
// up to it (a session that reads as never started).
func TestAStateLineWithoutAStateIsNotReadable(t *testing.T) {
	for _, line := range []string{
		`{"seq":2,"type":"Completed","format":2,"event":{}}`,
		`{"seq":2,"type":"Completed","format":2,"state":null,"event":{}}`,
	} {
		x := withStateLine(t, newStore(t), line)
		if seq, state, err := x.ReadSnapshot(); err == nil {
			t.Errorf("ReadSnapshot of %s: %d %s, want an error", line, seq, state)
		}
	}
}

// An archive whose log holds a stop's state after its state.json is
// refused: this pipeline never writes one (a session with a state.json
// takes no state line; an older build writes state.json only, after),
// and its readers would disagree (status reads the line, search and the
// dashboard state.json). So is a state line with no state.
func TestImportRefusesForgedStateLines(t *testing.T) {
	_, archive := exportedSession(t)
	base := readArchive(t, archive)
	var log []byte
	for _, e := range base {
		if e.hdr.Name == testID+"/events.jsonl" {
			log = e.body
		}
	}
	if bytes.Count(log, []byte("\n")) != 2 {
		t.Fatalf("the exported log: %s", log)
	}
	for name, line := range map[string]string{
		"state line after state.json": `{"seq":3,"type":"Completed","format":2,"state":{"status":"completed"},"event":{}}`,
		"state line with no state":    `{"seq":3,"type":"Completed","format":2,"state":null,"event":{}}`,
	} {
		t.Run(name, func(t *testing.T) {
			body := append(append([]byte(nil), log...), line+"\n"...)
			forged := writeArchive(t, withManifest(t, replaceBody(base, testID+"/events.jsonl", body),
				func(m *Manifest) { fixListing(m, "events.jsonl", body) }))
			_, err := importStore(t).Import(context.Background(), bytes.NewReader(forged), importOptions())
			var archiveErr *ArchiveError
			if !errors.As(err, &archiveErr) || !strings.Contains(err.Error(), "line 3") {
				t.Errorf("%v; want an ArchiveError on line 3", err)
			}
		})
	}
}

// A state.json as of the same event as the log's last state line was
// written after it by a reader that rebuilt the state (an older build,
// which knows no state line, replays the log through the phases.yaml of
// now: `pipeline complete` of main before the change, run on a session
// paused by a gate whose phases.yaml then changed, wrote the replay's
// "running" beside the stop's "paused: phase-complete"). The line is
// what the run decided, and is read.
func TestAStateLineIsReadBeforeAStateJSONOfTheSameEvent(t *testing.T) {
	st := newStore(t)
	stoppedSession(t, st, `{"status":"paused"}`)
	other, err := st.Session("s1")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.WriteSnapshot(2, []byte(`{"status":"running"}`), Summary{ID: "s1", Key: "k", Status: "running"}); err != nil {
		t.Fatal(err)
	}
	r, err := st.ReadSession("s1")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if seq, state, err := r.ReadSnapshot(); err != nil || seq != 2 || string(state) != `{"status":"paused"}` {
		t.Errorf("ReadSnapshot: %d %s %v; want the stop's own state, of event 2", seq, state, err)
	}
}
