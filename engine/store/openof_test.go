package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// openOfWant is what OpenOf must give of key: SessionsOf's (which gives
// what List gives, see TestSessionsOfIsListOfOneKey) without the older
// completed sessions, each with its summary.
func openOfWant(t *testing.T, root, key string) []string {
	t.Helper()
	st, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.Warn = nil
	all, err := st.SessionsOf(key)
	if err != nil {
		t.Fatal(err)
	}
	return briefsText(st, keptOpen(all))
}

func briefsText(st *Store, briefs []Brief) []string {
	var out []string
	for _, b := range briefs {
		sum := st.Summary(b)
		out = append(out, fmt.Sprintf("%s %s %s %d %s", b.ID, b.Status, sum.Status, sum.Tokens, sum.File))
	}
	return out
}

// openOf is OpenOf of key by st, as text.
func openOf(t *testing.T, st *Store, key string) []string {
	t.Helper()
	briefs, err := st.OpenOf(key)
	if err != nil {
		t.Fatal(err)
	}
	return briefsText(st, briefs)
}

// OpenOf gives SessionsOf's sessions less the older completed ones,
// through a long history of a store of three pipelines: sessions made,
// run, paused, failed, completed and removed, lines that cannot be
// parsed, compactions. It is asked by a Store that read the index before
// (its own cache), by a new Store (a new run, reading the digest), and
// the digests are read from their offset on, not from the start.
func TestOpenOfIsSessionsOfWithoutOlderCompleted(t *testing.T) {
	st := newStore(t)
	st.Warn = nil // the lines that cannot be parsed are meant
	rng := rand.New(rand.NewPCG(21, 3))
	now := time.Unix(0, 1_800_000_000_000_000_000)
	keys := []string{"k1", "k2", "k3"}
	var ids []string
	keyOf := map[string]string{}
	fromDigest := 0
	for op := 0; op < 1500; op++ {
		switch r := rng.IntN(100); {
		case r < 40 || len(ids) == 0:
			id := fmt.Sprintf("20261127-%09d-abcdef", op)
			if err := os.MkdirAll(filepath.Join(st.Root, "sessions", id), 0o700); err != nil {
				t.Fatal(err)
			}
			ids, keyOf[id] = append(ids, id), keys[rng.IntN(len(keys))]
			fallthrough
		case r < 94:
			id := ids[len(ids)-1]
			if rng.IntN(3) == 0 {
				id = ids[rng.IntN(len(ids))]
			}
			status := []string{"running", "paused", "failed", "completed", "completed"}[rng.IntN(5)]
			err := st.index(Summary{ID: id, Key: keyOf[id], Pipeline: "p", File: st.Abs("phases.yaml"), Tokens: op, Status: status, Created: now, Updated: now.Add(time.Duration(op))})
			if err != nil && !errors.Is(err, ErrRemoved) {
				t.Fatal(err)
			}
		case r < 97:
			if err := st.Remove(ids[rng.IntN(len(ids))]); err != nil && !errors.Is(err, ErrNotFound) {
				t.Fatal(err)
			}
		case r < 99:
			appendLine(t, st, ids[rng.IntN(len(ids))]+"\tk1\tfailed\tone\t\tnot a number\t0\t1\t2\tp\t\t\n")
		default:
			if err := st.CompactIndex(); err != nil {
				t.Fatal(err)
			}
		}
		if op%25 != 24 {
			continue
		}
		for _, k := range keys {
			want := openOfWant(t, st.Root, k)
			if got := openOf(t, st, k); !reflect.DeepEqual(got, want) {
				t.Fatalf("op %d, key %s, the same Store: OpenOf gave\n%q\nwant\n%q", op, k, got, want)
			}
			fresh, err := Open(st.Root)
			if err != nil {
				t.Fatal(err)
			}
			fresh.Warn = nil
			if got := openOf(t, fresh, k); !reflect.DeepEqual(got, want) {
				t.Fatalf("op %d, key %s, a new Store: OpenOf gave\n%q\nwant\n%q", op, k, got, want)
			}
			if fresh.opened.from > 0 {
				fromDigest++
			}
			fresh.Close()
		}
	}
	if fromDigest < 20 {
		t.Errorf("a new Store read the index from a digest in %d searches of 180: the digests were not used", fromDigest)
	}
}

// A store of 1,200 sessions of one pipeline, as the bench keeps them:
// once the digest is written, the next run reads the lines appended
// since, not the whole index, and finds the paused session among the
// older ones.
func TestOpenOfOf1200SessionsReadsFromTheDigest(t *testing.T) {
	st := newStore(t)
	now := time.Unix(0, 1_800_000_000_000_000_000)
	run := func(i int, statuses ...string) {
		t.Helper()
		id := fmt.Sprintf("20261127-%09d-abcdef", i)
		if err := os.MkdirAll(filepath.Join(st.Root, "sessions", id), 0o700); err != nil {
			t.Fatal(err)
		}
		for _, status := range statuses {
			if err := st.index(Summary{ID: id, Key: "k", Pipeline: "p", File: st.Abs("phases.yaml"), Status: status, Created: now, Updated: now}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 1200 {
		if i == 100 {
			run(i, "running", "paused")
			continue
		}
		run(i, "running", "completed")
	}
	first := openOf(t, st, "k")
	info, err := os.Stat(filepath.Join(st.Root, IndexName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(st.Root, keysFolder, "k")); err != nil {
		t.Fatalf("no digest after a search that read %d bytes: %v", info.Size(), err)
	}
	run(1200, "running")
	next, err := Open(st.Root)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	got := openOf(t, next, "k")
	if next.opened.from != info.Size() {
		t.Errorf("the next run read the index from byte %d, want from the digest's %d", next.opened.from, info.Size())
	}
	want := []string{
		"20261127-000001200-abcdef running running 0 " + st.Abs("phases.yaml"),
		"20261127-000001199-abcdef completed completed 0 " + st.Abs("phases.yaml"),
		"20261127-000000100-abcdef paused paused 0 " + st.Abs("phases.yaml"),
	}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(first, append([]string{}, want[1:]...)) && len(first) != 3 {
		t.Errorf("OpenOf gave %q, then %q; want %q", first, got, want)
	}
	if !reflect.DeepEqual(got, openOfWant(t, st.Root, "k")) {
		t.Errorf("OpenOf gave %q, SessionsOf %q", got, openOfWant(t, st.Root, "k"))
	}
}

// A digest that does not count is passed over, and the index read from
// its start: torn, changed, another key's, a forged line with its
// checksum made again, one of an index since compacted.
func TestOpenOfPassesOverADigestThatDoesNotCount(t *testing.T) {
	st := storeOfTwoKeys(t)
	openOf(t, st, "other")
	path := filepath.Join(st.Root, keysFolder, "k")
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.ReadFile(filepath.Join(st.Root, keysFolder, "other"))
	if err != nil {
		t.Fatal(err)
	}
	want := openOfWant(t, st.Root, "k")
	search := func(name string, digest []byte, fromDigest bool) {
		t.Helper()
		// (A compaction removes the digests' folder: the old one is put
		// back, as a copy of the store from before might.)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, digest, 0o600); err != nil {
			t.Fatal(err)
		}
		fresh, err := Open(st.Root)
		if err != nil {
			t.Fatal(err)
		}
		defer fresh.Close()
		if got := openOf(t, fresh, "k"); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: OpenOf gave %q, want %q", name, got, want)
		}
		if (fresh.opened.from > 0) != fromDigest {
			t.Errorf("%s: read the index from byte %d", name, fresh.opened.from)
		}
	}
	search("the digest", good, true)
	search("torn", good[:len(good)-40], false)
	search("empty", nil, false)
	changed := []byte(strings.Replace(string(good), "paused", "failed", 1))
	search("a status changed", changed, false)
	search("another key's", other, false)
	d, err := parseDigest("k", good)
	if err != nil {
		t.Fatal(err)
	}
	d.briefs[0].line = strings.Replace(d.briefs[0].line, d.briefs[0].ID, "../../x", 1)
	st.writeDigest(&d)
	forged, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	search("a forged id", forged, false)
	if err := st.CompactIndex(); err != nil {
		t.Fatal(err)
	}
	search("the index compacted", good, false)
}

// A run's search of its pipeline's sessions in a store of 1,000 sessions
// of one pipeline, with the digest another run left: against
// BenchmarkSessionsOfColdOf1000Sessions.
func BenchmarkOpenOfColdOf1000Sessions(b *testing.B) {
	st := storeOf1000Sessions(b, func(int) string { return "k0" })
	if _, err := st.OpenOf("k0"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		st.opened.read = digest{}
		list, err := st.OpenOf("k0")
		if err != nil || len(list) != 2 || list[0].Status != "completed" || st.opened.from == 0 {
			b.Fatalf("%d sessions, %v", len(list), err)
		}
	}
}

// The newest session removed after the digest was written: the digest
// does not know the third newest, which is now the second: the index
// is read from its start.
func TestOpenOfAfterTheNewestIsRemoved(t *testing.T) {
	st := newStore(t)
	now := time.Unix(0, 1_800_000_000_000_000_000)
	for i := range 300 {
		id := fmt.Sprintf("20261127-%09d-abcdef", i)
		if err := os.MkdirAll(filepath.Join(st.Root, "sessions", id), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := st.index(Summary{ID: id, Key: "k", Pipeline: "p", Status: "completed", Created: now, Updated: now}); err != nil {
			t.Fatal(err)
		}
	}
	openOf(t, st, "k")
	if err := st.Remove("20261127-000000299-abcdef"); err != nil {
		t.Fatal(err)
	}
	fresh, err := Open(st.Root)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	got := openOf(t, fresh, "k")
	if len(got) != 2 || !strings.HasPrefix(got[1], "20261127-000000297-abcdef completed") {
		t.Errorf("OpenOf gave %q, want sessions 298 and 297", got)
	}
}

// A compaction of the index leaves no digest behind: each named the
// index it replaced. The next search reads the index whole and is right.
func TestCompactIndexRemovesTheDigests(t *testing.T) {
	st := storeOfTwoKeys(t)
	digest := filepath.Join(st.Root, keysFolder, "k")
	if _, err := os.Stat(digest); err != nil {
		t.Fatalf("no digest to remove: %v", err)
	}
	want, err := st.SessionsOf("k")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CompactIndex(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(st.Root, keysFolder)); !os.IsNotExist(err) {
		t.Fatalf("the digests' folder after a compaction: %v; want none", err)
	}
	got, err := st.OpenOf("k")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || len(got) != len(keptOpen(want)) || got[0].ID != want[0].ID {
		t.Fatalf("OpenOf after the compaction: %d sessions, want %d", len(got), len(keptOpen(want)))
	}
}
