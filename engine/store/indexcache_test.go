package store

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// A Store that lists the index again reads only what was appended since,
// and still lists what a Store reading the whole file lists: after
// sessions made and updated by another Store (another process), a
// removal, a torn last line and its completion, clean's compaction (a
// new file) and the file rewritten in place.
func TestListAfterChangesListsWhatAWholeReadLists(t *testing.T) {
	st := newStore(t)
	other, err := Open(st.Root)
	if err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(st.Root, indexName)
	same := func(when string) {
		t.Helper()
		fresh, err := Open(st.Root)
		if err != nil {
			t.Fatal(err)
		}
		want, err := fresh.List()
		if err != nil {
			t.Fatal(err)
		}
		got, err := st.List()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: listed again:\n%v\nread whole:\n%v", when, got, want)
		}
	}
	created := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	newSession := func(s *Store, id, status string) {
		t.Helper()
		x, err := s.Create(Meta{ID: id, Key: "k", Pipeline: "p", Created: created})
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		if status != "running" {
			if err := x.WriteIndex(Summary{ID: id, Key: "k", Pipeline: "p", Status: status, Created: created, Updated: created.Add(time.Minute)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	same("no index yet")
	newSession(st, "s1", "running")
	same("one session")
	newSession(other, "s2", "paused")
	newSession(other, "s3", "failed")
	same("two sessions made by another Store")
	if list, _ := st.List(); len(list) != 3 || list[1].ID != "s2" || list[1].Status != "paused" {
		t.Fatalf("the listing is %v, want s3, s2 (paused), s1", list)
	}
	if err := other.Remove("s2"); err != nil {
		t.Fatal(err)
	}
	same("s2 removed")

	whole, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	appendTo(t, index, "s4\tk\tpaus")
	same("a torn last line")
	newSession(other, "s4", "paused") // its append cuts the torn line first
	same("the torn line cut, s4 written whole")

	if err := other.CompactIndex(); err != nil {
		t.Fatal(err)
	}
	newSession(other, "s5", "completed")
	same("the index compacted (a new file), then s5")

	// In place, the same inode: longer than what was read, but another
	// content.
	f, err := os.OpenFile(index, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(append(whole, whole...)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	same("the file rewritten in place")
	if list, _ := st.List(); len(list) != 2 {
		t.Errorf("after the rewrite, %d sessions listed, want the 2 of the old content (s1, s3)", len(list))
	}
	for i := range 3 {
		newSession(other, fmt.Sprintf("s%d", 6+i), "completed")
	}
	same("three more")
}
