package store

import (
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
)

// Four runs of one pipeline at once, each a Store of its own as a
// process is, make, pause, fail, complete and remove sessions, one of
// them compacting the index now and then, all of them reading and
// writing the key's digest: every search a run makes still finds each
// of its own sessions not completed with the status it last gave it,
// whatever the others wrote meanwhile; and once they are done, a new
// run's search is SessionsOf's.
func TestOpenOfOfRunsAtOnce(t *testing.T) {
	root := newStore(t).Root
	const runs, sessions = 4, 60
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- runAlongside(root, r, sessions)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if fromDigest.Load() == 0 {
		t.Error("no search read a digest: the test tests SessionsOf")
	}
	want := openOfWant(t, root, "k")
	st, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := openOf(t, st, "k"); !reflect.DeepEqual(got, want) {
		t.Errorf("OpenOf gave %q, want %q", got, want)
	}
}

// fromDigest counts the searches of TestOpenOfOfRunsAtOnce that read a
// digest.
var fromDigest atomic.Int64

// runAlongside is run r of TestOpenOfOfRunsAtOnce.
func runAlongside(root string, r, sessions int) error {
	own := map[string]string{} // id -> the status it was last given
	for i := range sessions {
		st, err := Open(root)
		if err != nil {
			return err
		}
		st.Warn = nil
		err = stepAlongside(st, own, r, i)
		if err == nil {
			err = checkOwn(st, own)
		}
		st.Close()
		if err != nil {
			return fmt.Errorf("run %d, step %d: %w", r, i, err)
		}
	}
	return nil
}

func stepAlongside(st *Store, own map[string]string, r, i int) error {
	id := fmt.Sprintf("20261127-%06d%03d-r%d", i, r, r)
	x, err := st.Create(Meta{ID: id, Key: "k", Pipeline: "p"})
	if err != nil {
		return err
	}
	x.Close()
	own[id] = "running"
	for old, status := range own {
		next := map[string]string{"running": "paused", "paused": "failed", "failed": "completed"}[status]
		switch {
		case status == "completed" && (i+r)%5 == 0:
			if err := st.Remove(old); err != nil {
				return err
			}
			delete(own, old)
		case next != "" && (i+len(old))%3 == 0:
			if err := st.index(Summary{ID: old, Key: "k", Pipeline: "p", Status: next}); err != nil {
				return err
			}
			own[old] = next
		}
	}
	if r == 0 && i%15 == 14 {
		return st.CompactIndex()
	}
	return nil
}

// checkOwn says which of own, not completed, the key's search misses
// or gives another status.
func checkOwn(st *Store, own map[string]string) error {
	briefs, err := st.OpenOf("k")
	if err != nil {
		return err
	}
	if st.opened.from > 0 {
		fromDigest.Add(1)
	}
	found := map[string]string{}
	for _, b := range briefs {
		found[b.ID] = b.Status
	}
	for id, status := range own {
		if status != "completed" && found[id] != status {
			return fmt.Errorf("OpenOf gave session %s as %q, last written %q", id, found[id], status)
		}
	}
	return nil
}
