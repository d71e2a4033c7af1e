package redact

import "bytes"

// Which bytes a chunk is swept for. A sweep (bytes.IndexByte) is
// vectorised and costs little over text without its byte; what costs is
// each hit, where the sweep stops and is called again. The key patterns'
// anchors are found through a byte picked for being rare in logs and
// prose ('k' of "sk-", 'g' of "ghp_"), but no byte is rare everywhere:
// a log line "worker=7 ... took=3ms ok" holds three 'k's. Those rules
// have a second byte ('-' of "sk-", '_' of "ghp_"); a chunk is swept for
// whichever pair is the rarer in a sample of it.

const (
	// chooseMin: a chunk shorter than this is swept for the scan bytes,
	// as a sample would cost as much as the sweeps it saves.
	chooseMin = 16 << 10
	// chooseSample is how much of a chunk's start is counted.
	chooseSample = 4 << 10
)

// chooseScan returns the passes to sweep buf with.
func (m *redactMatcher) chooseScan(buf []byte) []redactPass {
	if len(buf) < chooseMin || len(m.altBytes) == 0 {
		return m.passes
	}
	sample := buf[:chooseSample]
	if countBytes(sample, m.altBytes) < countBytes(sample, m.scanBytes) {
		return m.altPasses
	}
	return m.passes
}

func countBytes(b, set []byte) int {
	n := 0
	for _, c := range set {
		n += bytes.Count(b, []byte{c})
	}
	return n
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
	low7  = 0x7f7f7f7f7f7f7f7f
)

// zeroBytes sets the high bit of each byte of y that is zero, and of no
// other: each byte is tested on its own bits, without a carry or a borrow
// from its neighbours.
func zeroBytes(y uint64) uint64 { return ^((y&low7 + low7) | y) & highs }
