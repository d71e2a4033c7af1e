package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestCompactIndexKeepsTheLatestLineOfEachSessionOnDisk(t *testing.T) {
	st := newStore(t)
	at := func(min int) time.Time { return time.Date(2026, 11, 25, 10, min, 0, 0, time.UTC) }
	for _, id := range []string{"s1", "s2", "s3"} {
		x, err := st.Create(Meta{ID: id, Key: "k-" + id, Pipeline: "p", Spec: "/w/" + id + ".md", Created: at(0)})
		if err != nil {
			t.Fatal(err)
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
	}
	update := func(sum Summary) {
		t.Helper()
		if err := st.index(sum); err != nil {
			t.Fatal(err)
		}
	}
	latest := map[string]Summary{}
	for min := 1; min <= 3; min++ {
		for _, id := range []string{"s1", "s2", "s3"} {
			sum := Summary{ID: id, Key: "k-" + id, Pipeline: "p", Spec: "/w/" + id + ".md", Status: "running",
				Phase: "build", Tokens: 100 * min, CostUSD: 0.25 * float64(min), Created: at(0), Updated: at(min)}
			if min == 3 && id == "s1" {
				// Tabs and line ends in free text must not break the line.
				sum.Status, sum.PauseReason = "paused", "asked\tby\nhand"
			}
			update(sum)
			latest[id] = sum
		}
	}
	// Lines a crash or a hand edit can leave: not read, and not kept; a
	// session whose last line is one keeps its line before.
	index := filepath.Join(st.Root, indexName)
	f, err := os.OpenFile(index, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("not\ta\tsummary\ns3\tcut\tshort\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Remove("s2"); err != nil {
		t.Fatal(err)
	}

	if err := st.CompactIndex(); err != nil {
		t.Fatal(err)
	}
	content, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	want := string(st.portable(latest["s1"]).indexLine()) + string(st.portable(latest["s3"]).indexLine())
	if string(content) != want {
		t.Errorf("compacted index:\n%s\nwant one line for each session on disk, the latest:\n%s", content, want)
	}
	assertMode(t, index, 0o600)
	assertNoTempFiles(t, st.Root)

	list, err := st.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != "s3" || list[1].ID != "s1" {
		t.Fatalf("list after compaction: %+v", list)
	}
	s1 := list[1]
	if s1.Status != "paused" || s1.PauseReason != "asked by hand" || s1.Tokens != 300 || s1.CostUSD != 0.75 ||
		!s1.Updated.Equal(at(3)) || !s1.Created.Equal(at(0)) || s1.Spec != "/w/s1.md" || s1.Key != "k-s1" {
		t.Errorf("s1 after compaction: %+v", s1)
	}
	// A second compaction changes nothing.
	if err := st.CompactIndex(); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(index); string(again) != want {
		t.Errorf("a second compaction changed the index:\n%s", again)
	}
}

func TestListWithoutAnIndexIsEmpty(t *testing.T) {
	st := newStore(t)
	list, err := st.List()
	if err != nil || len(list) != 0 {
		t.Errorf("List of a new store: %+v %v", list, err)
	}
	if err := st.CompactIndex(); err != nil {
		t.Fatal(err)
	}
	if content, err := os.ReadFile(filepath.Join(st.Root, indexName)); err != nil || len(content) != 0 {
		t.Errorf("compacting no index: %q %v, want an empty index", content, err)
	}
}

func TestRemoveUnfinishedRemovesOnlyOldNewFolders(t *testing.T) {
	st := newStore(t)
	sessions := filepath.Join(st.Root, "sessions")
	old := time.Now().Add(-2 * time.Hour)
	// A session cut short while being made: a folder with its meta and
	// transcripts, left an hour and more ago.
	mk := func(name string, modified time.Time) string {
		t.Helper()
		dir := filepath.Join(sessions, name)
		if err := os.MkdirAll(filepath.Join(dir, "transcripts"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "meta.json"), []byte(`{}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(dir, modified, modified); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	cutShort := mk(newPrefix+"20261125-080000-aaa", old)
	beingMade := mk(newPrefix+"20261125-100000-bbb", time.Now())
	finished := mk("20261125-070000-ccc", old)

	removed, err := st.RemoveUnfinished(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if removed != 1 {
		t.Errorf("removed %d folders, want 1", removed)
	}
	if _, err := os.Stat(cutShort); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the old unfinished folder is still there: %v", err)
	}
	for _, dir := range []string{beingMade, finished} {
		if _, err := os.Stat(filepath.Join(dir, "meta.json")); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(dir), err)
		}
	}
	if removed, err := st.RemoveUnfinished(time.Hour); removed != 0 || err != nil {
		t.Errorf("a second pass removed %d: %v", removed, err)
	}
}

func TestRemoveRefusesAnythingButASessionID(t *testing.T) {
	st := newStore(t)
	x, err := st.Create(Meta{ID: "s1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	x.Close()
	for _, id := range []string{"", ".", "..", "../sessions", `a\b`} {
		if err := st.Remove(id); err == nil || !strings.Contains(err.Error(), "bad session id") {
			t.Errorf("Remove(%q): %v", id, err)
		}
	}
	if _, err := os.Stat(filepath.Join(st.Root, "sessions")); err != nil {
		t.Fatalf("the sessions folder: %v", err)
	}
	if err := st.Remove("s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(x.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Remove: %v", err)
	}
}

// key names the sessions and locks of a pipeline and spec: a new value
// for the same pair would lose every session made before it.
func TestKeyIsStableAndKeepsFileAndSpecApart(t *testing.T) {
	if got, want := key("/w/phases.yaml", "/w/spec.md"), "1o3nmhunafx7s"; got != want {
		t.Errorf("key changed: %s, want %s", got, want)
	}
	if got, want := key("phases.yaml", "specs/045/README.md"), "mjj8xyyc6qog"; got != want {
		t.Errorf("key changed: %s, want %s", got, want)
	}
	if key("/w/a", "b") == key("/w/", "ab") {
		t.Error("key does not keep the file and the spec apart")
	}
	if key("/w/phases.yaml", "") == key("/w/phases.yaml", "/w/spec.md") {
		t.Error("a spec does not change the key")
	}
}

// indexLineJoined is how a line of the index was made before it was
// appended field by field: the line must not change.
func indexLineJoined(sum Summary) []byte {
	clean := func(s string) string { return strings.NewReplacer("\t", " ", "\n", " ").Replace(s) }
	reason := sum.PauseReason
	if sum.ByHand && sum.Status == statusCompleted {
		reason = byHand
	}
	line := strings.Join([]string{sum.ID, sum.Key, sum.Status, clean(sum.Phase), clean(reason),
		strconv.Itoa(sum.Tokens), strconv.FormatFloat(sum.CostUSD, 'f', -1, 64),
		strconv.FormatInt(sum.Created.UnixNano(), 10), strconv.FormatInt(sum.Updated.UnixNano(), 10),
		clean(sum.Pipeline), clean(sum.Spec), clean(sum.File)}, "\t")
	if sum.ReplayOf != "" {
		line += "\t" + clean(sum.ReplayOf)
	}
	return []byte(line + "\n")
}

func FuzzIndexLineIsAsJoined(f *testing.F) {
	f.Add("20260101-000000000-abcdef", "k", "paused", "build\tit", "a\nreason", 12, 0.25, int64(1), int64(2), "p", "spec.md", "phases.yaml", "", false)
	f.Add("s", "k", statusCompleted, "", "", -1, 1e21, int64(-5), int64(0), "é\t\n", "", "", "r\t", true)
	f.Fuzz(func(t *testing.T, id, key, status, phase, reason string, tokens int, cost float64, created, updated int64, pipeline, spec, file, replayOf string, byHand bool) {
		sum := Summary{ID: id, Key: key, Status: status, Phase: phase, PauseReason: reason, Tokens: tokens, CostUSD: cost,
			Created: time.Unix(0, created), Updated: time.Unix(0, updated), Pipeline: pipeline, Spec: spec, File: file, ReplayOf: replayOf, ByHand: byHand}
		if got, want := sum.indexLine(), indexLineJoined(sum); string(got) != string(want) {
			t.Fatalf("line %q, want %q", got, want)
		}
	})
}
