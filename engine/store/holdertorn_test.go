package store

import (
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// A reader of the holder (pipeline pause, status, the message a second run
// gets) while the runner rewrites it in place (a step's group recorded as
// the step starts, cleared as it ends) reads one holder or the other,
// never an error: the read and the write are not atomic with each other,
// and a read of the file grown by the write, or caught mid-copy, is torn.
func TestAHolderRewrittenWhileReadIsReadWhole(t *testing.T) {
	st := newStore(t)
	defer st.Close()
	const key = "k1"
	const session = "20261128-040000000-abcdef"
	started := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	lock, err := st.Lock(key, Holder{PID: os.Getpid(), Session: session, Started: started})
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	idle := Holder{PID: os.Getpid(), Session: session, Started: started}
	stepping := idle
	stepping.Steps = []StepGroup{{Session: session, Group: 123456, Boot: "0f3c2b1a-9d8e-4c7b-a6f5-e4d3c2b1a098"}}
	var stop atomic.Bool
	writerDone := make(chan error, 1)
	go func() {
		for i := 0; !stop.Load(); i++ {
			h := idle
			if i%2 == 0 {
				h = stepping
			}
			if err := lock.SetHolder(h); err != nil {
				writerDone <- err
				return
			}
		}
		writerDone <- nil
	}()
	torn := 0
	const reads = 20000
	for i := 0; i < reads; i++ {
		h, err := st.Holder(key)
		if err != nil || h.Session != session || h.PID != os.Getpid() {
			torn++
		}
	}
	stop.Store(true)
	if err := <-writerDone; err != nil {
		t.Fatal(err)
	}
	if torn > 0 {
		t.Errorf("%d of %d reads of a holder rewritten meanwhile were not a holder of the session", torn, reads)
	}
}
