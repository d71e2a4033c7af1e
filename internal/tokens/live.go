package tokens

import (
	"sync"
	"sync/atomic"
)

// Live counts the tokens of a step's output in a goroutine of
// its own, so that the output path never waits for the tokenizer (which
// runs at some 30 MB/s). Chunks that arrive while its queue is full, or
// while liveBacklog bytes wait for it, are not tokenized: their tokens are
// estimated from the tokens per byte of what was counted. An agent prints
// far below the tokenizer's rate, so its count is exact; only a flood (a
// build log, a benchmark) is partly estimated, and Estimated says so.
type Live struct {
	queue   chan *[]byte
	buffers sync.Pool
	exact   Counter
	counted atomic.Int64 // bytes given to the exact counter
	skipped atomic.Int64 // bytes left to the estimate
	waiting atomic.Int64 // bytes queued for the tokenizer or in it
	done    chan struct{}
	closed  bool
	writes  int
}

// liveQueue chunks may wait for the tokenizer; beyond, chunks are estimated.
const liveQueue = 16

// liveBacklog bounds the bytes waiting for the tokenizer, about 2 ms of
// its time (20 ms of the tiktoken-go library's): a burst beyond it is a
// flood. Bounded by chunks alone, sixteen
// reads of 256 KiB (4 MiB printed at once) were all tokenized, and the end
// of the step waited 1.4 s for them on 2 cores; a first read of 256 KiB
// cost 80 ms of CPU.
const liveBacklog = 64 << 10

// NewLive starts a counter; Close stops it.
func NewLive() *Live {
	c := &Live{queue: make(chan *[]byte, liveQueue), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for queued := range c.queue {
			chunk := *queued
			counted := chunk
			if c.skipped.Load() > 0 && len(chunk) > floodSample {
				// The backlog of a flood is sampled too.
				counted = chunk[:floodSample]
				c.skipped.Add(int64(len(chunk) - floodSample))
			}
			c.exact.Write(counted)
			c.counted.Add(int64(len(counted)))
			c.waiting.Add(-int64(len(chunk)))
			*queued = chunk[:0]
			c.buffers.Put(queued)
		}
		c.exact.Flush()
	}()
	return c
}

// floodSample is what, in a flood, one chunk in floodEvery gives the
// tokenizer to keep the estimate's ratio current: enough to measure, little
// enough that the tokenizer does not take a core from the step itself.
const (
	floodSample = SampleWindow
	floodEvery  = 64
)

// Write queues a copy of p for counting, or leaves it to the estimate when
// the queue is full. It never blocks and never fails.
func (c *Live) Write(p []byte) (int, error) {
	if c.skipped.Load() > 0 {
		// A flood: the estimate carries the count; sample it.
		c.writes++
		if c.writes%floodEvery != 0 || len(p) <= floodSample {
			c.skipped.Add(int64(len(p)))
			return len(p), nil
		}
		c.skipped.Add(int64(len(p) - floodSample))
		p = p[:floodSample]
	}
	switch waiting := c.waiting.Load(); {
	case waiting+int64(len(p)) <= liveBacklog:
	case waiting == 0:
		// One read bigger than the backlog is a flood of its own: a sample
		// of it sets the estimate's ratio.
		c.skipped.Add(int64(len(p) - floodSample))
		p = p[:floodSample]
	default:
		c.skipped.Add(int64(len(p)))
		return len(p), nil
	}
	// The pool holds pointers: a slice put in an interface would be
	// allocated on every Put.
	buf, _ := c.buffers.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	if cap(*buf) < len(p) {
		*buf = make([]byte, 0, max(len(p), 64<<10))
	}
	*buf = append((*buf)[:0], p...)
	c.waiting.Add(int64(len(p)))
	select {
	case c.queue <- buf:
	default:
		c.waiting.Add(-int64(len(p)))
		c.skipped.Add(int64(len(p)))
		*buf = (*buf)[:0]
		c.buffers.Put(buf)
	}
	return len(p), nil
}

// Count is the tokens so far: counted, plus the estimate for skipped bytes.
func (c *Live) Count() int {
	tokens := int64(c.exact.Count())
	if skipped := c.skipped.Load(); skipped > 0 {
		if counted := c.counted.Load(); counted > 0 {
			tokens += skipped * tokens / counted
		}
	}
	return int(tokens)
}

// Estimated reports whether part of the count is an estimate.
func (c *Live) Estimated() bool { return c.skipped.Load() > 0 }

// Close waits for the queued chunks to be counted and returns the total.
func (c *Live) Close() int {
	if !c.closed {
		c.closed = true
		close(c.queue)
	}
	<-c.done
	return c.Count()
}
