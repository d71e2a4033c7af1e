package steps

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
)

// decider is a recorder that stops the step at every checkpoint, and
// keeps the order in which it was asked and shown the marker's output.
type decider struct {
	*recorder
	mu    sync.Mutex
	order []string
}

func (d *decider) Checkpoint(note string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.order = append(d.order, "decided: "+note)
	return true
}

func (d *decider) Output(text []byte) {
	if bytes.Contains(text, CheckpointMarker) {
		d.mu.Lock()
		d.order = append(d.order, "shown")
		d.mu.Unlock()
	}
	d.recorder.Output(text)
}

// A CheckpointDecider that says stop has the step interrupted by the
// executor itself, from the read of the marker's line: before the line is
// shown, and with nobody calling Stop. The step ends by that interrupt,
// as a stopped step.
func TestCheckpointDeciderInterruptsBeforeTheOutputGoesOn(t *testing.T) {
	obs := &decider{recorder: newRecorder()}
	step := shellStep(`trap 'echo interrupted; exit 0' INT; echo "[CHECKPOINT] halfway"; while :; do sleep 0.01; done`, testMark())
	res := execute(t, context.Background(), step, obs)
	obs.mu.Lock()
	order := strings.Join(obs.order, ", ")
	obs.mu.Unlock()
	if order != "decided: halfway, shown" {
		t.Errorf("order %q, want the decision before the line was shown", order)
	}
	if !res.Stopped || !res.Checkpoint || res.CheckpointNote != "halfway" {
		t.Errorf("result %+v: want a stopped step with the checkpoint halfway", res)
	}
	if !strings.Contains(res.Output, "interrupted") {
		t.Errorf("output %q: the step's trap did not run", res.Output)
	}
}

// countingDecider says no, and counts what it was asked.
type countingDecider struct {
	*recorder
	asked int
}

func (d *countingDecider) Checkpoint(string) bool { d.asked++; return false }

// From a chunk read to the decision, the only allocation is the text of a
// new note (the checkpoint_note the triggers read): the scan and the
// decider's call allocate nothing, and a marker line repeated is not asked
// about again.
func TestCheckpointReadPathAllocatesOnlyTheNote(t *testing.T) {
	d := &countingDecider{recorder: newRecorder()}
	r := &Running{obs: d}
	chunks := [][]byte{[]byte("working\n[CHECKPOINT] one\n"), []byte("more\n[CHECKPOINT] two\n")}
	allocs := testing.AllocsPerRun(100, func() {
		for _, chunk := range chunks {
			r.scanner.Write(chunk)
			r.decideCheckpoint()
		}
	})
	if allocs > float64(len(chunks)) {
		t.Errorf("%v allocations for %d new notes, want at most one each", allocs, len(chunks))
	}
	asked := d.asked
	r.scanner.Write([]byte("[CHECKPOINT] two\n"))
	r.decideCheckpoint()
	if d.asked != asked {
		t.Errorf("the same note again was asked about")
	}
	if asked < 2*100 {
		t.Errorf("asked %d times over 100 runs of two new notes", asked)
	}
}

// The read path's share of a checkpoint's latency: a chunk of 4 KiB that
// ends a marker's line, scanned and decided (the decider says no, so that
// no process is needed). make bench runs it with the Go benchmarks.
func BenchmarkCheckpointDecision(b *testing.B) {
	d := &countingDecider{recorder: newRecorder()}
	r := &Running{obs: d}
	var chunks [2][]byte
	for i, note := range []string{"one", "two"} {
		chunks[i] = append(bytes.Repeat([]byte("working on the design, step by step ...\n"), 100), "[CHECKPOINT] "+note+"\n"...)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(chunks[0])))
	for i := 0; b.Loop(); i++ {
		r.scanner.Write(chunks[i%2])
		r.decideCheckpoint()
	}
	if d.asked == 0 {
		b.Fatal("the decider was never asked")
	}
}
