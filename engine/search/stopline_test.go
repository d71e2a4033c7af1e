package search

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine/store"
)

// stoppedInLog makes a session whose stop carries a state in its log
// (no state.json), the state line as given, and a transcript with text.
func (p *project) stoppedInLog(id, stateLine, text string) {
	p.t.Helper()
	x, err := p.st.Create(store.Meta{ID: id, Key: "k-" + id, Pipeline: "p", Created: time.Now()})
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := x.Append("Started", []byte(`{}`)); err != nil {
		p.t.Fatal(err)
	}
	p.write(x, "design", 1, "agent", false, text)
	if err := x.WriteIndex(store.Summary{ID: id, Key: x.Meta.Key, Pipeline: "p", Status: "paused"}); err != nil {
		p.t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		p.t.Fatal(err)
	}
	log, err := os.OpenFile(filepath.Join(x.Dir, "events.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		p.t.Fatal(err)
	}
	defer log.Close()
	if _, err := log.WriteString(stateLine + "\n"); err != nil {
		p.t.Fatal(err)
	}
}

// A session whose stop's state in its log cannot be read (written by a
// later format, or a line a power cut left garbled inside) indexes
// nothing of its snapshot, as an unreadable state.json does: the update
// goes on, and the other sessions, and its transcripts, are found.
func TestAnUnreadableStateInTheLogDoesNotStopTheSearch(t *testing.T) {
	p := newProject(t)
	p.stoppedInLog("s1", `{"seq":2,"type":"Paused","format":99,"state":{"phases":[]},"event":{}}`, "a kiwi of the future")
	p.stoppedInLog("s2", "{\"seq\":2,\"type\":\"Paused\",\"format\":2,\"state\":{\"phases\":[\x00\x00\x00\x00],\"event\":{}}", "a garbled kiwi")
	p.stoppedInLog("s3", `{"seq":2,"type":"Paused","format":2,"state":{"phases":[{"name":"design","notes":["keep the kiwi"]}]},"event":{}}`, "a plain kiwi")
	ix := p.open()
	update(t, ix)
	got := map[string]int{}
	for _, h := range find(t, ix, Query{Text: "kiwi"}) {
		got[h.Session+"/"+h.Kind]++
	}
	for _, want := range []string{"s1/transcript", "s2/transcript", "s3/transcript", "s3/note"} {
		if got[want] != 1 {
			t.Errorf("hits of kiwi: %v; want one of %s", got, want)
		}
	}
	if _, err := ix.Update(context.Background()); err != nil {
		t.Errorf("an update with nothing changed: %v", err)
	}
}

// A session whose log carries no stop's state (running, or killed before
// its first snapshot) is read for its snapshot once, not at every
// update: its log is scanned again only when it changes.
func TestALogWithoutAStopIsReadOnceForItsSnapshot(t *testing.T) {
	p := newProject(t)
	x, err := p.st.Create(store.Meta{ID: "s1", Key: "k-s1", Pipeline: "p", Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Append("Started", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := x.WriteIndex(store.Summary{ID: "s1", Key: x.Meta.Key, Pipeline: "p", Status: "paused"}); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	ix := p.open()
	update(t, ix)
	ctx := context.Background()
	known, load, err := ix.knownFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	list, err := p.st.List()
	if err != nil {
		t.Fatal(err)
	}
	if _, snapshots, err := ix.plan(ctx, list, known, load); err != nil || len(snapshots) != 0 {
		t.Errorf("after an update, the next plans %d snapshots to read (%v), want none", len(snapshots), err)
	}
}
