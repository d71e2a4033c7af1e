package termview

import "sync"

import "bytes"

import "io"

// LockedWriter serializes whole writes to one output.
type LockedWriter struct {
	mu sync.Mutex
	W  io.Writer
}

// PrefixWriter puts Prefix before every line and writes whole lines only,
// so that the lines of sessions running at once do not interleave.
type PrefixWriter struct {
	To      *LockedWriter
	Prefix  string
	partial []byte
}

// Do calls fn with the output, alone.
func (l *LockedWriter) Do(fn func(io.Writer)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fn(l.W)
}

// Write writes the whole lines of b, each after Prefix, and keeps the
// rest for the next write.
func (p *PrefixWriter) Write(b []byte) (int, error) {
	n := len(b)
	last := bytes.LastIndexByte(b, '\n')
	if last < 0 {
		p.partial = append(p.partial, b...)
		return n, nil
	}
	var out bytes.Buffer
	lines := append(p.partial, b[:last+1]...)
	p.partial = append([]byte(nil), b[last+1:]...)
	for len(lines) > 0 {
		i := bytes.IndexByte(lines, '\n')
		out.WriteString(p.Prefix)
		out.Write(lines[:i+1])
		lines = lines[i+1:]
	}
	var err error
	p.To.Do(func(w io.Writer) { _, err = w.Write(out.Bytes()) })
	return n, err
}
