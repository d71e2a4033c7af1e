package testwait

import (
	"bytes"
	"runtime"
)

// Goroutines are the stacks of every goroutine of this process, one each:
// what a test reads to learn which goroutines run, wait or were started,
// and where.
func Goroutines() [][]byte {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Split(buf[:n], []byte("\n\n"))
		}
		buf = make([]byte, 2*len(buf))
	}
}
