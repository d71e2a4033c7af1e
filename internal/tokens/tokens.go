// Package tokens counts tokens with the cl100k_base tokenizer, offline: whole
// texts, and live streams of output that must never wait for it.
package tokens

import (
	"bytes"
	"math"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
)

// Encoding names the byte-pair encoding that Count and
// Counter use. Its vocabulary is compiled into the binary, so counting
// never touches the network.
const Encoding = "cl100k_base"

// Count returns the number of cl100k_base tokens in text. Special
// tokens such as "<|endoftext|>" are counted as the plain text they are made
// of, and bytes that are not valid UTF-8 are tokenized as U+FFFD.
func Count(text string) int {
	return countText(text)
}

func countBytes(b []byte) int64 {
	if len(b) == 0 {
		return 0
	}
	return int64(Count(string(b)))
}

const (
	// spaceCutAfter is how long the carried text may grow without a line
	// break that can be cut before Counter cuts it at a space instead.
	spaceCutAfter = 4 << 10
	// maxCarry is how long the carried text may grow before Counter
	// cuts it anywhere (between two runes), which may split a token.
	maxCarry = 64 << 10
	// SampleWindow is the number of bytes that a sampling Counter
	// tokenizes out of every SampleWindow*every bytes it is fed.
	SampleWindow = 4 << 10
	// seekLimit is how far a sampling Counter looks for a cut to start
	// or end a window at before it cuts between two runes. Looking further
	// would skew the sample against text with long lines.
	seekLimit = 256
)

// Counter is an io.Writer that counts the cl100k_base tokens of the
// bytes written to it, which may come in chunks of any size that split words,
// lines or UTF-8 sequences anywhere.
//
// It tokenizes the text only up to the last place where cl100k_base's
// pre-tokenizer always splits (the start of a line that begins with a letter,
// digit or symbol, or else the space before a word) and carries the rest
// over to the next Write, so that the total equals Count of the whole
// text. Only text that runs for maxCarry (64 KiB) without such a place is cut
// between two runes, which may miscount a token at the cut. Flush counts the
// carried rest at the end of the stream.
//
// The zero value counts exactly. NewSampled makes a counter that
// tokenizes only a sample of the stream and estimates the rest.
//
// Write and Flush must not be called concurrently with each other; Count may
// be called from any goroutine at any time.
type Counter struct {
	count atomic.Int64 // what Count returns

	carry  []byte // text after the last cut, not yet tokenized
	tokens int64  // tokens counted (exact mode) or sampled

	// Sampling, when every > 1.
	every     int
	total     int64 // bytes written
	sampled   int64 // bytes tokenized, whose tokens are in tokens
	inWindow  int   // bytes tokenized in the current window
	skip      int64 // bytes still to skip before the next window
	seeking   bool  // looking for a cut to start the next window at
	seekBytes int   // bytes looked at while seeking
	prevNL    bool  // the last byte skipped was '\n'
}

// NewSampled returns a Counter that tokenizes one window of
// SampleWindow bytes out of every `every` windows, each window starting and
// ending at a cut as described for Counter, and scales the tokens of
// those windows by the bytes written: Count is then an estimate, exact for a
// stream shorter than one window. every < 2 makes an exact counter.
func NewSampled(every int) *Counter {
	return &Counter{every: max(every, 1)}
}

// Write counts the tokens of p. It never fails.
func (c *Counter) Write(p []byte) (int, error) {
	if c.every > 1 {
		c.writeSampled(p)
	} else {
		c.writeExact(p)
	}
	return len(p), nil
}

// Flush counts the text carried over from the last Write, as the end of the
// stream. Writes after Flush count on as if a new text began.
func (c *Counter) Flush() {
	if c.every > 1 {
		if !c.seeking && c.skip == 0 && len(c.carry) > 0 {
			c.tokens += countBytes(c.carry)
			c.sampled += int64(len(c.carry))
			c.inWindow += len(c.carry)
		}
		c.carry = c.carry[:0]
		c.publishEstimate()
		return
	}
	c.tokens += countBytes(c.carry)
	c.carry = c.carry[:0]
	c.count.Store(c.tokens)
}

// Count returns the tokens counted so far: an exact counter leaves out the
// text carried over since the last cut until a later Write or Flush counts
// it; a sampling counter returns its estimate for all the bytes written.
func (c *Counter) Count() int {
	return int(c.count.Load())
}

func (c *Counter) writeExact(p []byte) {
	c.carry = append(c.carry, p...)
	k := lastCut(c.carry, false)
	if k == 0 {
		return
	}
	c.tokens += countBytes(c.carry[:k])
	c.carry = c.carry[:copy(c.carry, c.carry[k:])]
	c.count.Store(c.tokens)
}

func (c *Counter) writeSampled(p []byte) {
	c.total += int64(len(p))
	for len(p) > 0 {
		switch {
		case c.skip > 0:
			n := int(min(c.skip, int64(len(p))))
			c.skip -= int64(n)
			c.prevNL = p[n-1] == '\n'
			p = p[n:]
			if c.skip == 0 {
				c.seeking = true
			}
		case c.seeking:
			lim := seekLimit - c.seekBytes
			k := firstCut(c.prevNL, p[:min(len(p), lim)])
			if k < 0 {
				if len(p) < lim {
					c.seekBytes += len(p)
					c.prevNL = p[len(p)-1] == '\n'
					p = nil
					continue
				}
				k = lim + nextRuneStart(p[lim:])
			}
			p = p[k:]
			c.seeking, c.seekBytes = false, 0
		default:
			need := SampleWindow - c.inWindow - len(c.carry)
			n := min(need, len(p))
			c.carry = append(c.carry, p[:n]...)
			p = p[n:]
			full := n == need
			k := lastCut(c.carry, full)
			if k > 0 {
				c.tokens += countBytes(c.carry[:k])
				c.sampled += int64(k)
				c.inWindow += k
				c.carry = c.carry[:copy(c.carry, c.carry[k:])]
			}
			if full {
				// The window is done: drop what is left of it and skip
				// the windows that are not sampled.
				c.carry = c.carry[:0]
				c.inWindow = 0
				c.skip = int64(c.every-1) * SampleWindow
			}
		}
	}
	c.publishEstimate()
}

func (c *Counter) publishEstimate() {
	if c.sampled == 0 {
		c.count.Store(c.tokens)
		return
	}
	// tokens*total overflows int64 past about 10 GB of output.
	est := math.Round(float64(c.tokens) * float64(c.total) / float64(c.sampled))
	c.count.Store(int64(est))
}

// The cuts below rely on cl100k_base's pre-tokenizer regular expression,
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//	 ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// which has no look-behind, so tokenizing text[:k] and text[k:] apart gives
// the tokens of text whenever no piece that it matches in text spans k:
//
//   - after a '\n' followed by a letter, digit or ASCII symbol: a piece that
//     holds a line break ends with it (the piece of letters may start with
//     one other character, but never with '\r' or '\n'), and a whitespace
//     run's piece takes in all of its line breaks, so ends at the last;
//   - at a space between a character that is not whitespace and a letter:
//     no piece has a space after its first character but whitespace pieces,
//     and " word" is one piece.
//
// o200k_base differs (a symbol's piece also takes a '/' after its line
// breaks), so these cuts must be checked again before changing encoding.

// lastCut returns the largest k in b where b can be cut as above, 0 if there
// is none. If b has no such place and is at least maxCarry long, it returns
// the last rune boundary instead. With force, it looks for a cut in the last
// seekLimit bytes only and else returns the last rune boundary.
func lastCut(b []byte, force bool) int {
	if force {
		for k := len(b) - 1; k > 0 && k >= len(b)-seekLimit; k-- {
			if lineCut(b, k) || spaceCut(b, k) {
				return k
			}
		}
		return prevRuneStart(b)
	}
	for end := len(b) - 1; end > 0; {
		i := bytes.LastIndexByte(b[:end], '\n')
		if i < 0 {
			break
		}
		if lineCut(b, i+1) {
			return i + 1
		}
		end = i
	}
	if len(b) >= spaceCutAfter {
		for k := len(b) - 2; k > 0; k-- {
			if spaceCut(b, k) {
				return k
			}
		}
	}
	if len(b) >= maxCarry {
		return prevRuneStart(b)
	}
	return 0
}

// firstCut returns the smallest k in p where p can be cut as above, -1 if
// there is none. prevNL tells whether the byte before p was '\n'.
func firstCut(prevNL bool, p []byte) int {
	if prevNL && startsPiece(p) {
		return 0
	}
	for k := 1; k < len(p); k++ {
		if lineCut(p, k) || spaceCut(p, k) {
			return k
		}
	}
	return -1
}

// lineCut reports whether b can be cut at k, 0 < k <= len(b), as the start
// of a line.
func lineCut(b []byte, k int) bool {
	return b[k-1] == '\n' && startsPiece(b[k:])
}

// spaceCut reports whether b can be cut at k, 0 < k < len(b), as the space
// before a word.
func spaceCut(b []byte, k int) bool {
	return b[k] == ' ' && startsWord(b[k+1:]) && endsNonSpace(b[:k])
}

// startsPiece reports whether b begins with a letter, a digit or an ASCII
// symbol, so that it never continues a piece that holds a line break.
func startsPiece(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	if c := b[0]; c < utf8.RuneSelf {
		return c > ' ' && c < 0x7f
	}
	r, n := utf8.DecodeRune(b)
	return n > 1 && (unicode.IsLetter(r) || unicode.IsNumber(r))
}

// startsWord reports whether b begins with a letter.
func startsWord(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	if c := b[0]; c < utf8.RuneSelf {
		return 'a' <= c|0x20 && c|0x20 <= 'z'
	}
	r, n := utf8.DecodeRune(b)
	return n > 1 && unicode.IsLetter(r)
}

// endsNonSpace reports whether b ends with a rune that is not whitespace.
func endsNonSpace(b []byte) bool {
	r, n := utf8.DecodeLastRune(b)
	return n > 0 && r != utf8.RuneError && !unicode.IsSpace(r)
}

// prevRuneStart returns the start of the last rune of b, or len(b) if b
// ends with a whole rune (or stray bytes).
func prevRuneStart(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return len(b)
			}
			return i
		}
	}
	return len(b)
}

// nextRuneStart returns the index of the first byte of p that starts a rune.
func nextRuneStart(p []byte) int {
	for i := 0; i < len(p) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(p[i]) {
			return i
		}
	}
	return 0
}
