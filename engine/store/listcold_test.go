package store

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A run is a new process: it reads the whole index once, parsing the
// latest line of every session (a store whose sessions are all of one
// pipeline, as a project's often are).
func BenchmarkListColdOf1000Sessions(b *testing.B) {
	st := storeOf1000Sessions(b, func(int) string { return "k" })
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		st.listing.forget()
		list, err := st.List()
		if err != nil || len(list) != 1000 || list[0].Status != "completed" || list[0].File != st.Abs("phases.yaml") {
			b.Fatalf("%d sessions, %v", len(list), err)
		}
	}
}

// The folders being made are found among the sessions by their names
// alone, read raw from the folder.
func TestNamesWithPrefixFindsTheFoldersBeingMade(t *testing.T) {
	st := newStore(t)
	want := map[string]bool{}
	for i := 0; i < 500; i++ {
		n := fmt.Sprintf("20261125-%09d-abcdef", i)
		if i%100 == 7 {
			n = newPrefix + n
			want[n] = true
		}
		if err := os.Mkdir(filepath.Join(st.Root, "sessions", n), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.namesWithPrefix("sessions", newPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("found %q, want %d names", got, len(want))
	}
	for _, n := range got {
		if !want[n] {
			t.Errorf("found %q, not a folder being made", n)
		}
	}
}

// storeOf1000Sessions is a store of 1,000 sessions, each with a running
// and a completed line in the index, the session numbered i of the
// pipeline keyOf(i).
func storeOf1000Sessions(b *testing.B, keyOf func(i int) string) *Store {
	return storeOfSessions(b, 1000, keyOf, "running", "completed")
}

// storeOfSessions is a store of n sessions, each with a line in the index
// for each of statuses in turn, the session numbered i of the pipeline
// keyOf(i).
func storeOfSessions(b *testing.B, n int, keyOf func(i int) string, statuses ...string) *Store {
	st := newStore(b)
	now := time.Now()
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("20261125-%09d-abcdef", i)
		if err := os.MkdirAll(filepath.Join(st.Root, "sessions", id), 0o700); err != nil {
			b.Fatal(err)
		}
		for _, status := range statuses {
			if err := st.index(Summary{ID: id, Key: keyOf(i), Pipeline: "p", File: st.Abs("phases.yaml"), Status: status, Phase: "one",
				Created: now, Updated: now}); err != nil {
				b.Fatal(err)
			}
		}
	}
	return st
}
