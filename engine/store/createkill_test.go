package store

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// A runner killed (kill -9) anywhere in the making of a session, its
// first event or its close leaves the store whole: the next Open sweeps
// a folder still being made (.new-, with its meta.json and empty log),
// and any session at its name reads (its log empty, or with whole
// events), opens for writing and takes an event.
func TestKilledWhileMakingSessionsLeavesAStoreWhole(t *testing.T) {
	root := os.Getenv("PIPELINE_STORE_TEST_ROOT")
	if isChild(t) {
		st, err := Open(root)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			id := fmt.Sprintf("s%d-%d", os.Getpid(), i)
			x, err := st.Create(Meta{ID: id, Key: "k", Created: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := x.Append("started", []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
			if err := x.Close(); err != nil {
				t.Fatal(err)
			}
			fmt.Println(id)
		}
	}
	root = newStore(t).Root
	for kill := range 40 {
		cmd := childCommand(t, "PIPELINE_STORE_TEST_ROOT="+root)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Killed after a number of sessions that varies, so at a varying
		// point of the next one's making.
		lines := bufio.NewScanner(out)
		for n := 0; n <= kill%4; n++ {
			if !lines.Scan() {
				t.Fatalf("the child made %d sessions and ended: %v", n, lines.Err())
			}
		}
		cmd.Process.Kill()
		cmd.Wait()
		checkStoreWhole(t, root)
	}
}

// checkStoreWhole opens the store at root as the next run would and
// checks every session in it.
func checkStoreWhole(t *testing.T, root string) {
	t.Helper()
	st, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.List(); err != nil {
		t.Fatalf("List: %v", err)
	}
	entries, err := os.ReadDir(st.path("sessions"))
	if err != nil || len(entries) == 0 {
		t.Fatalf("the sessions folder: %d sessions, %v", len(entries), err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("%s is left in the sessions folder after Open", e.Name())
			continue
		}
		r, err := st.ReadSession(e.Name())
		if err != nil {
			t.Errorf("ReadSession %s: %v", e.Name(), err)
			continue
		}
		if r.Seq() > 1 {
			t.Errorf("session %s has %d events, at most 1 written", e.Name(), r.Seq())
		}
		r.Close()
		w, err := st.Session(e.Name())
		if err != nil {
			t.Errorf("Session %s: %v", e.Name(), err)
			continue
		}
		if _, err := w.Append("checked", []byte(`{}`)); err != nil {
			t.Errorf("Append to %s: %v", e.Name(), err)
		}
		if err := w.Unappend(); err != nil {
			t.Errorf("Unappend of %s: %v", e.Name(), err)
		}
		w.Close()
	}
}
