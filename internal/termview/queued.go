package termview

import (
	"fmt"
	"sync"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
)

// Queued hands what a run shows to a goroutine of its own, in the
// order it was shown. A step's output path (redaction, the checkpoint
// scan, the transcript, the live triggers) and the making of the screen
// (the terminal filter, timestamps, the writes) then run side by side, on
// two cores, rather than one after the other under the step's lock. At
// most queuedChunks chunks wait: a slow terminal still holds the step's
// output back, as it would without the queue.
type Queued struct {
	inner local.View
	ops   chan func()
	done  chan struct{}
	bufs  sync.Pool
}

// queuedChunks bounds the chunks of output waiting to be shown (each up to
// the executor's 256 KiB read).
const queuedChunks = 8

// NewQueued shows on inner, from a goroutine of its own until Close.
func NewQueued(inner local.View) *Queued {
	q := &Queued{inner: inner, ops: make(chan func(), queuedChunks), done: make(chan struct{})}
	go func() {
		defer close(q.done)
		for op := range q.ops {
			op()
		}
	}()
	return q
}

// Output copies the chunk: the executor reuses its buffer at once.
func (q *Queued) Output(chunk []byte) {
	buf, _ := q.bufs.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	*buf = append((*buf)[:0], chunk...)
	q.ops <- func() {
		q.inner.Output(*buf)
		q.bufs.Put(buf)
	}
}

func (q *Queued) StepStarted(info local.StepInfo) { q.ops <- func() { q.inner.StepStarted(info) } }

func (q *Queued) Progress(p local.Progress) { q.ops <- func() { q.inner.Progress(p) } }

func (q *Queued) StepFinished(info local.StepInfo, r engine.StepResult) {
	q.ops <- func() { q.inner.StepFinished(info, r) }
}

// Say formats now: its arguments may change once it returns.
func (q *Queued) Say(format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	q.ops <- func() { q.inner.Say("%s", text) }
}

// Backoff and Stopping reach a view that shows them, in order.
func (q *Queued) Backoff(d time.Duration, attempt int) {
	if w, ok := q.inner.(local.WaitView); ok {
		q.ops <- func() { w.Backoff(d, attempt) }
	}
}

func (q *Queued) Stopping() {
	if w, ok := q.inner.(local.WaitView); ok {
		q.ops <- func() { w.Stopping() }
	}
}

// Close shows what is queued, then closes the view.
func (q *Queued) Close() error {
	close(q.ops)
	<-q.done
	return q.inner.Close()
}
