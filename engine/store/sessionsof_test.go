package store

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// SessionsOf gives what List gives of one key, in its order, from an
// index of many keys whose sessions have several lines each, removed
// sessions, replays and lines that cannot be parsed.
func TestSessionsOfIsListOfOneKey(t *testing.T) {
	st := newStore(t)
	st.Warn = nil // the lines that cannot be parsed are meant
	rng := rand.New(rand.NewPCG(21, 2))
	now := time.Unix(0, 1_800_000_000_000_000_000)
	keys := []string{"k1", "k2", "k3"}
	var lines []string
	for i := 0; i < 300; i++ {
		id := fmt.Sprintf("20261127-%09d-abcdef", rng.IntN(1_000_000))
		if err := os.MkdirAll(filepath.Join(st.Root, "sessions", id), 0o700); err != nil {
			t.Fatal(err)
		}
		k := keys[rng.IntN(len(keys))]
		for j := rng.IntN(3); j >= 0; j-- {
			sum := Summary{ID: id, Key: k, Pipeline: "p", File: "phases.yaml", Spec: "spec.md", Tokens: i,
				Status: []string{"running", "paused", "failed", "completed"}[rng.IntN(4)], Created: now, Updated: now.Add(time.Duration(j))}
			if rng.IntN(10) == 0 {
				sum.ReplayOf = "20261127-000000001-abcdef"
			}
			lines = append(lines, string(st.portable(sum).indexLine()))
		}
		switch rng.IntN(12) {
		case 0:
			lines = append(lines, string(tombstone(id)))
		case 1:
			lines = append(lines, id+"\t"+k+"\tfailed\tone\t\tnot a number\t0\t1\t2\tp\tspec.md\tphases.yaml\n")
		case 2:
			lines = append(lines, id+"-\t"+k+"\n")
		}
	}
	rng.Shuffle(len(lines)/10, func(i, j int) { lines[i*10], lines[j*10] = lines[j*10], lines[i*10] })
	if err := os.WriteFile(filepath.Join(st.Root, IndexName), []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	list, err := st.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		briefs, err := st.SessionsOf(k)
		if err != nil {
			t.Fatal(err)
		}
		var want, got []Summary
		for _, sum := range list {
			if sum.Key == k {
				want = append(want, sum)
			}
		}
		for _, b := range briefs {
			if b.listed != nil {
				t.Fatal("listed whole: the index has no line of format 1")
			}
			sum := st.Summary(b)
			if b.ID != sum.ID || b.Status != sum.Status {
				t.Errorf("brief %s %s of summary %s %s", b.ID, b.Status, sum.ID, sum.Status)
			}
			got = append(got, sum)
		}
		if len(want) < 20 || !reflect.DeepEqual(got, want) {
			t.Errorf("key %s: %d sessions, want the %d List gives:\n%+v\n%+v", k, len(got), len(want), got, want)
		}
	}
}

// An index with a session's latest line of format 1 (its key not this
// format's) is listed whole: the session is found under today's key.
func TestSessionsOfFindsAFormat1Session(t *testing.T) {
	project := t.TempDir()
	st, err := Open(filepath.Join(project, ".pipeline"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	file, spec := filepath.Join(project, "phases.yaml"), filepath.Join(project, "spec.md")
	dir := filepath.Join(st.Root, "sessions", "s1")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	meta, _ := json.Marshal(Meta{Format: 1, ID: "s1", Pipeline: "p", File: file, Spec: spec, Key: key(file, spec)})
	if err := os.WriteFile(filepath.Join(dir, "meta.json"), meta, 0o600); err != nil {
		t.Fatal(err)
	}
	line := strings.Join([]string{"s1", key(file, spec), "paused", "design", "checkpoint", "10", "0.5", "1", "2", "p", spec}, "\t") + "\n"
	if err := os.WriteFile(filepath.Join(st.Root, IndexName), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	briefs, err := st.SessionsOf(st.Key(file, spec))
	if err != nil || len(briefs) != 1 || briefs[0].ID != "s1" || briefs[0].Status != "paused" || st.Summary(briefs[0]).Tokens != 10 {
		t.Fatalf("found %+v, %v; want s1, paused", briefs, err)
	}
}

// A run is a new process: it searches the sessions of its pipeline among
// all those of the store (here all of one pipeline, as a project's often
// are, the worst case): against BenchmarkListColdOf1000Sessions.
func BenchmarkSessionsOfColdOf1000Sessions(b *testing.B) {
	benchmarkSessionsOfCold(b, 1)
}

// A store of ten pipelines: the lines of the nine others are passed over.
func BenchmarkSessionsOfColdOf1000SessionsOfTenPipelines(b *testing.B) {
	benchmarkSessionsOfCold(b, 10)
}

// benchmarkSessionsOfCold searches the sessions of one of pipelines, in a
// store of 1,000 sessions as BenchmarkListColdOf1000Sessions's.
func benchmarkSessionsOfCold(b *testing.B, pipelines int) {
	st := storeOf1000Sessions(b, func(i int) string { return fmt.Sprint("k", i%pipelines) })
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		st.keyed.read = digest{}
		list, err := st.SessionsOf("k0")
		if err != nil || len(list) != 1000/pipelines || list[0].Status != "completed" || st.Summary(list[0]).File != st.Abs("phases.yaml") {
			b.Fatalf("%d sessions, %v", len(list), err)
		}
	}
}

// A second search reads only the lines appended since the first, and
// gives what List gives: sessions made, changed and removed meanwhile,
// a line that cannot be parsed, and a compacted index read again.
func TestSessionsOfAfterAppendsIsListOfOneKey(t *testing.T) {
	st := newStore(t)
	st.Warn = nil // the line that cannot be parsed is meant
	now := time.Unix(0, 1_800_000_000_000_000_000)
	write := func(id, key, status string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(st.Root, "sessions", id), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := st.index(Summary{ID: id, Key: key, Pipeline: "p", Status: status, Created: now, Updated: now}); err != nil {
			t.Fatal(err)
		}
	}
	same := func(when string) {
		t.Helper()
		list, err := st.List()
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, sum := range list {
			if sum.Key == "k" {
				want = append(want, sum.ID+" "+sum.Status)
			}
		}
		briefs, err := st.SessionsOf("k")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, b := range briefs {
			got = append(got, b.ID+" "+b.Status)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: SessionsOf gave %q, List %q", when, got, want)
		}
	}
	for i := range 6 {
		write(fmt.Sprintf("s%d", i), []string{"k", "other"}[i%2], "running")
	}
	same("first")
	offset := st.keyed.read.offset
	write("s0", "k", "completed")
	write("s6", "k", "paused")
	write("s7", "other", "running")
	if err := st.Remove("s2"); err != nil {
		t.Fatal(err)
	}
	appendLine(t, st, "s4\tk\tfailed\tone\t\tnot a number\t0\t1\t2\tp\t\t\n")
	same("after appends")
	if st.keyed.read.offset <= offset || st.keyed.read.lines != 11 {
		t.Errorf("the cache read to %d (%d lines), from %d: not the appended lines alone", st.keyed.read.offset, st.keyed.read.lines, offset)
	}
	if err := st.CompactIndex(); err != nil {
		t.Fatal(err)
	}
	write("s8", "k", "running")
	same("after compaction")
}

func appendLine(t *testing.T, st *Store, line string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(st.Root, IndexName), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(line); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// printable's byte-at-a-time check of ASCII says what unicode's tables
// say, for every byte and for ids beyond ASCII.
func TestPrintableIsUnicodes(t *testing.T) {
	ids := []string{"20261127-000000001-abcdef", "é-1", "a\u00a0b", "a\u2028", "日本", "a\xffb", ""}
	for c := range 256 {
		ids = append(ids, "id"+string(rune(c)), string([]byte{'x', byte(c)}))
	}
	for _, id := range ids {
		if got, want := printable(id), !strings.ContainsFunc(id, nonPrintable); got != want {
			t.Errorf("printable(%q) = %v, unicode says %v", id, got, want)
		}
	}
}
