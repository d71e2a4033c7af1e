package store

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// A holder rewritten shorter (a step's process group cleared as the step
// ends) is read as the new holder at every instant: between SetHolder's
// write and its cut of the file, where a kill -9 would leave it, the file
// holds the new holder and blanks, never the new one's head on the old
// one's tail.
func TestAHolderCutShortIsReadAsTheNewOne(t *testing.T) {
	st := newStore(t)
	defer st.Close()
	const key = "k1"
	started := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	lock, err := st.Lock(key, Holder{PID: os.Getpid(), Started: started})
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	long := Holder{PID: os.Getpid(), Session: "20261128-040000000-abcdef", Started: started,
		Steps: []StepGroup{{Session: "20261128-040000000-abcdef", Group: 123456, Boot: strings.Repeat("b", 36)}}}
	if err := lock.SetHolder(long); err != nil {
		t.Fatal(err)
	}
	short := long
	short.Steps = nil
	var between []Holder
	var betweenErr error
	afterHolderWrite = func(path string) {
		content, err := os.ReadFile(path)
		if err != nil {
			betweenErr = err
			return
		}
		h, err := parseHolder(content)
		betweenErr = err
		between = append(between, h)
	}
	defer func() { afterHolderWrite = func(string) {} }()
	if err := lock.SetHolder(short); err != nil {
		t.Fatal(err)
	}
	if len(between) != 1 || betweenErr != nil {
		t.Fatalf("read between the write and the cut: %+v, %v (want one read)", between, betweenErr)
	}
	short.Host = between[0].Host
	if !reflect.DeepEqual(between[0], short) {
		t.Errorf("between the write and the cut the holder reads %+v, want %+v", between[0], short)
	}
	after, err := st.Holder(key)
	if err != nil || !reflect.DeepEqual(after, short) {
		t.Errorf("after the cut: %+v, %v", after, err)
	}
	if content, _ := os.ReadFile(lock.file.Name()); strings.HasSuffix(string(content), " ") {
		t.Errorf("the blanks stayed after the cut: %q", content)
	}

	// Without the blanks (an older pipeline's write, a torn file), the
	// new holder's head on the old one's tail is no holder at all: no
	// step group is read from it.
	longJSON, _ := holderJSON(long)
	shortJSON, _ := holderJSON(short)
	torn := append(append([]byte{}, shortJSON...), longJSON[len(shortJSON):]...)
	if h, err := parseHolder(torn); err == nil || len(h.Steps) != 0 {
		t.Errorf("a torn holder %q read as %+v, %v", torn, h, err)
	}
	for cut := range len(longJSON) {
		if h, err := parseHolder(longJSON[:cut]); err == nil || len(h.Steps) != 0 {
			t.Errorf("the holder cut at %d read as %+v", cut, h)
		}
	}
}

// A new holder keeps the step groups the last one left in the record it
// writes as it takes the lock, until it says it swept them: a holder
// killed between taking the lock and sweeping hands them on.
func TestLockHandsOnTheStepGroupsNotSwept(t *testing.T) {
	st := newStore(t)
	defer st.Close()
	const key = "k2"
	groups := []StepGroup{{Session: "20261128-040000000-abcdef", Group: 4242, Boot: "boot"}}
	first, err := st.Lock(key, Holder{PID: os.Getpid(), Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := first.SetHolder(Holder{PID: os.Getpid(), Session: groups[0].Session, Started: time.Now(), Steps: groups}); err != nil {
		t.Fatal(err)
	}
	first.Release() // as a kill -9 would: the groups are still recorded
	for range 2 {
		// Each takes the lock and dies before its sweep.
		next, err := st.Lock(key, Holder{PID: os.Getpid(), Started: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		if got := next.Previous().Steps; !reflect.DeepEqual(got, groups) {
			t.Errorf("Previous().Steps = %+v, want %+v", got, groups)
		}
		h, err := st.Holder(key)
		if err != nil || !reflect.DeepEqual(h.Steps, groups) {
			t.Errorf("the new holder's record %+v (%v) lost the groups not swept", h, err)
		}
		next.Release()
	}
	swept, err := st.Lock(key, Holder{PID: os.Getpid(), Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := swept.SetHolder(Holder{PID: os.Getpid(), Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	swept.Release()
	last, err := st.Lock(key, Holder{PID: os.Getpid(), Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	defer last.Release()
	if got := last.Previous().Steps; len(got) != 0 {
		t.Errorf("groups swept and cleared are handed on: %+v", got)
	}
}
