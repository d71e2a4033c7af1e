package session_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// What status pays to read a stopped session (open it for reading,
// LoadState) whose stop's snapshot is in its log, and whose stop wrote
// state.json, by the log's length: the measure of store.StateInLogMost.
func BenchmarkLoadStateStopInLog(b *testing.B) {
	for _, n := range []int{4, 64, 256, 1024, 4096} {
		for _, inLog := range []bool{true, false} {
			name := fmt.Sprintf("%d/state.json", n)
			if inLog {
				name = fmt.Sprintf("%d/log", n)
			}
			b.Run(name, func(b *testing.B) {
				st, id, want := stoppedLoop(b, n, inLog)
				plan := planOf(b, loopPlan)
				info, err := os.Stat(filepath.Join(st.Root, "sessions", id, "events.jsonl"))
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					x, err := st.ReadSession(id)
					if err != nil {
						b.Fatal(err)
					}
					s, err := session.LoadState(plan, x)
					x.Close()
					if err != nil || s.Attempt != want.Attempt || s.Status != engine.StatusCompleted {
						b.Fatalf("attempt %d (%d), %s, %v", s.Attempt, want.Attempt, s.Status, err)
					}
				}
				b.ReportMetric(float64(info.Size()), "log-bytes")
			})
		}
	}
}

// stoppedLoop records n events of recordLoop's, the last a completion
// whose snapshot is in the log (inLog) or in state.json.
func stoppedLoop(b *testing.B, n int, inLog bool) (*store.Store, string, engine.State) {
	x, s := recordLoop(b, n-1, false)
	defer x.Close()
	plan := planOf(b, loopPlan)
	ev := engine.Completed{At: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}
	s, _ = engine.Decide(plan, s, ev)
	typ, payload, err := engine.EncodeEvent(ev)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := s.AppendJSON(nil)
	if err != nil {
		b.Fatal(err)
	}
	if inLog {
		_, err = x.AppendState(typ, payload, raw)
	} else if _, err = x.Append(typ, payload); err == nil {
		err = session.WriteSnapshot(plan, x, s, nil)
	}
	if err != nil {
		b.Fatal(err)
	}
	st, err := store.Open(filepath.Dir(filepath.Dir(x.Dir)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st, x.Meta.ID, s
}
