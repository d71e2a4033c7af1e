package termview

import (
	"fmt"
	"sync"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
)

// Queued hands what a run shows to a goroutine of its own, in the
// order it was shown, once a step has printed something. A step's output
// path (redaction, the checkpoint scan, the transcript, the live
// triggers) and the making of the screen (the terminal filter,
// timestamps, the writes) then run side by side, on two cores, rather
// than one after the other under the step's lock. At most queuedChunks
// chunks wait: a slow terminal still holds the step's output back, as it
// would without the queue.
//
// Until the first chunk of output, what is shown (a step's start and end,
// the engine's lines) is written by the caller: a few lines have nothing
// to run beside, and handing each to a goroutine that sleeps in between
// woke another thread for every line (a futex wake-up and a context
// switch each, at times a new thread), more than the write costs.
type Queued struct {
	inner local.View
	// mu orders the lines written by their callers, and the start of the
	// goroutine after them.
	mu   sync.Mutex
	ops  chan func() // nil until the first chunk of output
	done chan struct{}
	bufs sync.Pool
}

// queuedChunks bounds the chunks of output waiting to be shown (each up to
// the executor's 256 KiB read).
const queuedChunks = 8

// NewQueued shows on inner, until Close.
func NewQueued(inner local.View) *Queued {
	return &Queued{inner: inner}
}

// show runs op: at once, in the caller, while nothing is queued;
// otherwise after what is queued.
func (q *Queued) show(op func()) {
	q.mu.Lock()
	ops := q.ops
	if ops == nil {
		defer q.mu.Unlock()
		op()
		return
	}
	q.mu.Unlock()
	ops <- op
}

// queue hands op to the goroutine, started at the first call.
func (q *Queued) queue(op func()) {
	q.mu.Lock()
	if q.ops == nil {
		q.ops, q.done = make(chan func(), queuedChunks), make(chan struct{})
		go q.showQueued(q.ops)
	}
	ops := q.ops
	q.mu.Unlock()
	ops <- op
}

func (q *Queued) showQueued(ops <-chan func()) {
	defer close(q.done)
	for op := range ops {
		op()
	}
}

// Output copies the chunk: the executor reuses its buffer at once.
func (q *Queued) Output(chunk []byte) {
	buf, _ := q.bufs.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	*buf = append((*buf)[:0], chunk...)
	q.queue(func() {
		q.inner.Output(*buf)
		q.bufs.Put(buf)
	})
}

func (q *Queued) StepStarted(info local.StepInfo) { q.show(func() { q.inner.StepStarted(info) }) }

func (q *Queued) Progress(p local.Progress) { q.show(func() { q.inner.Progress(p) }) }

func (q *Queued) StepFinished(info local.StepInfo, r engine.StepResult) {
	q.show(func() { q.inner.StepFinished(info, r) })
}

// Say formats now: its arguments may change once it returns.
func (q *Queued) Say(format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	q.show(func() { q.inner.Say("%s", text) })
}

// Backoff and Stopping reach a view that shows them, in order.
func (q *Queued) Backoff(d time.Duration, attempt int) {
	if w, ok := q.inner.(local.WaitView); ok {
		q.show(func() { w.Backoff(d, attempt) })
	}
}

func (q *Queued) Stopping() {
	if w, ok := q.inner.(local.WaitView); ok {
		q.show(func() { w.Stopping() })
	}
}

// Close shows what is queued, then closes the view.
func (q *Queued) Close() error {
	q.mu.Lock()
	ops, done := q.ops, q.done
	q.mu.Unlock()
	if ops != nil {
		close(ops)
		<-done
	}
	return q.inner.Close()
}
