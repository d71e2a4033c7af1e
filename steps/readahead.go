package steps

import (
	"io"
	"sync/atomic"
)

// readAhead reads a step's output from a goroutine of its own, into a few
// buffers that go round, once a read has filled its buffer (the output
// comes faster than it is taken): the next read (the kernel's copy out of
// the pipe, a fifth of the output path's time) then runs beside the
// redaction, the scans, the transcript's write and the view's copy of the
// chunk before it, rather than after them, and the step's writes find
// room in the pipe rather than wait for it. The chunks come in order on chunks,
// which is closed after the read that failed (the end of the output, or
// its pipe closed).
type readAhead struct {
	chunks chan []byte
	free   chan []byte
}

// readAheadChunks is how many chunks read wait at most to be taken; one
// more buffer is being read into.
const readAheadChunks = 2

// startReadAhead reads src into buf and buffers of its size, counting
// the bytes in count as they are read (the drain at the step's end looks
// at it).
func startReadAhead(src io.Reader, buf []byte, count *atomic.Int64) *readAhead {
	ra := &readAhead{chunks: make(chan []byte, readAheadChunks), free: make(chan []byte, readAheadChunks+1)}
	ra.free <- buf
	go ra.run(src, len(buf), count)
	return ra
}

func (ra *readAhead) run(src io.Reader, size int, count *atomic.Int64) {
	defer close(ra.chunks)
	made := 1
	for {
		var buf []byte
		select {
		case buf = <-ra.free:
		default:
			// A buffer is made only when all those made are in use: a
			// quiet step holds one.
			if made <= readAheadChunks {
				buf = make([]byte, size)
				made++
			} else {
				buf = <-ra.free
			}
		}
		n, err := src.Read(buf)
		if n > 0 {
			count.Add(int64(n))
			ra.chunks <- buf[:n]
		} else {
			ra.free <- buf
		}
		if err != nil {
			return
		}
	}
}

// done gives back the buffer of a chunk taken from chunks, once nothing
// uses it.
func (ra *readAhead) done(chunk []byte) { ra.free <- chunk[:cap(chunk)] }
