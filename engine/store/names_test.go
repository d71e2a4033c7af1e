package store

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Of many claims of one name at once, exactly one wins; the others are
// told whose it is.
func TestOneNameOneSession(t *testing.T) {
	st := newStore(t)
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x, err := st.Create(Meta{ID: fmt.Sprintf("20261127-120000000-%06x", i), Pipeline: "p", Key: "k", Created: time.Now(), Name: "feature"})
			if err == nil {
				x.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	won := 0
	holder, ok := st.Named("feature")
	for i, err := range errs {
		var taken *NameTakenError
		switch {
		case err == nil:
			won++
			if want := fmt.Sprintf("20261127-120000000-%06x", i); !ok || holder != want {
				t.Errorf("the winner is %s, the name says %q", want, holder)
			}
		case errors.As(err, &taken) && taken.ID == holder:
		default:
			t.Errorf("claim %d: %v", i, err)
		}
	}
	if won != 1 {
		t.Errorf("%d claims won", won)
	}
}

// A name whose session was removed is free again; a name that could be
// read as an id is refused.
func TestANameOfARemovedSessionIsFree(t *testing.T) {
	st := newStore(t)
	first := "20261127-120000000-aaaaaa"
	x, err := st.Create(Meta{ID: first, Pipeline: "p", Key: "k", Created: time.Now(), Name: "feature"})
	if err != nil {
		t.Fatal(err)
	}
	x.Close()
	second := Meta{ID: "20261127-120000000-bbbbbb", Pipeline: "p", Key: "k", Created: time.Now(), Name: "feature"}
	if _, err := st.Create(second); err == nil {
		t.Fatal("a name taken twice")
	}
	if _, err := st.Find(second.ID); err == nil {
		t.Error("a session refused its name is left")
	}
	if meta, err := st.Find("feature"); err != nil || meta.ID != first || meta.Name != "feature" {
		t.Fatalf("Find by name: %+v, %v", meta, err)
	}
	if err := st.Remove(first); err != nil {
		t.Fatal(err)
	}
	x, err = st.Create(second)
	if err != nil {
		t.Fatalf("the name of a removed session: %v", err)
	}
	x.Close()
	if meta, err := st.Find("feature"); err != nil || meta.ID != second.ID {
		t.Errorf("Find by name after: %+v, %v", meta, err)
	}
	for _, bad := range []string{"", "2026", "a b", "../x", "a/b", ".hidden"} {
		if err := st.ClaimName(bad, first); err == nil {
			t.Errorf("the name %q was taken", bad)
		}
	}
}
