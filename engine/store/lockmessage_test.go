package store

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A second run that meets the lock taken by a run that has not yet named
// its session (two started at once: the first names it once its session
// is open) is told that another run is starting, and how to stop it; not
// "session  of this pipeline ... pipeline pause " with no id.
func TestALockTakenBeforeItsSessionIsNamedSaysAnotherRunIsStarting(t *testing.T) {
	st := newStore(t)
	defer st.Close()
	const key = "k1"
	started := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	first, err := st.Lock(key, Holder{PID: os.Getpid(), Started: started})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release()
	_, err = st.lock(key, Holder{PID: os.Getpid(), Started: started}, 0, func() {})
	var locked *LockedError
	if !errors.As(err, &locked) {
		t.Fatalf("the second lock: %v, want a LockedError", err)
	}
	message := err.Error()
	for _, want := range []string{"another run of this pipeline and spec is starting", "pid " + strconv.Itoa(os.Getpid()), "pipeline pause"} {
		if !strings.Contains(message, want) {
			t.Errorf("message %q lacks %q", message, want)
		}
	}
	if strings.Contains(message, "session  ") || strings.HasSuffix(message, "pause ") {
		t.Errorf("message %q names an empty session", message)
	}
	locked.Holder = Holder{}
	if message := locked.Error(); strings.Contains(message, "pid 0") || strings.Contains(message, "0001-01-01") {
		t.Errorf("a holder that could not be read: %q", message)
	}
}
