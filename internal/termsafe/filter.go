// Package termsafe makes text that came from outside safe to show on a
// terminal or in a CI log.
//
// Text that came from outside — step output, checkpoint and pause notes,
// phase and step names, file contents in errors — never reaches a
// terminal raw: an escape sequence in it could recolour or clear the
// screen, move the cursor over lines already written, set the window
// title, write the clipboard (OSC 52) or make a link. Every place where
// such text leaves for the terminal (the views, status, sessions, error
// messages) passes it through a Filter:
//
//   - escape sequences are removed whole: CSI (ESC [ … final byte, colours
//     and cursor moves), OSC, DCS, SOS, PM and APC strings (up to BEL, ESC \
//     or the end of the line), and two-byte and charset sequences (ESC c,
//     ESC 7, ESC ( B);
//   - other control characters are shown, in caret notation: a lone ESC as
//     ^[, BEL as ^G, backspace as ^H, DEL as ^?, a carriage return that
//     does not end a line as ^M (one before a line feed is dropped);
//     C1 controls (U+0080–U+009F, which some terminals obey as ESC
//     sequences) as \u009b, and a 0xC2 byte that starts no character as
//     U+FFFD (other bytes that are not UTF-8 go as they are);
//   - line feeds and tabs stay in Text; in a one-line field (a table
//     cell, a step's header, a paused: line) Line shows a line break as
//     \n and a tab as a space.
//
// The views' own colours and cursor moves are added after the text is
// filtered. JSON output escapes control characters itself (EscapeJSON
// escapes DEL, C1 and the GitHub runner's "##[" too). Transcript files
// keep the bytes as the step wrote them: they are a record.
package termsafe

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Filter removes escape sequences from a stream of text and shows other
// control characters; a sequence split across chunks is still removed
// whole. The zero value is ready.
type Filter struct {
	state state
	out   []byte
}

// state is where a Filter is in the text: what the bytes before it began.
type state uint8

const (
	inText            state = iota
	afterEsc                // after ESC
	inEscIntermediate       // ESC and intermediate bytes (ESC ( B)
	inCSI                   // ESC [ and parameters
	inString                // an OSC, DCS, SOS, PM or APC string
	afterStringEsc          // ESC inside a string: ST if "\" follows
	afterCR                 // a carriage return, line feed or not
	afterC2                 // 0xC2, the first byte of a C1 control or not
)

// special marks the bytes that text cannot pass as they are: the C0
// controls but tab and line feed, DEL, and 0xC2 (which starts a C1
// control). A literal, laid out by the compiler: no work at start-up.
var special = [256]bool{
	0x00: true, 0x01: true, 0x02: true, 0x03: true, 0x04: true, 0x05: true, 0x06: true, 0x07: true,
	0x08: true, 0x0b: true, 0x0c: true, 0x0d: true, 0x0e: true, 0x0f: true,
	0x10: true, 0x11: true, 0x12: true, 0x13: true, 0x14: true, 0x15: true, 0x16: true, 0x17: true,
	0x18: true, 0x19: true, 0x1a: true, 0x1b: true, 0x1c: true, 0x1d: true, 0x1e: true, 0x1f: true,
	0x7f: true, 0xc2: true,
}

// Filter returns chunk made safe. The result is chunk itself when it
// needs no change (see Unchanged); otherwise a buffer of f, valid until
// the next call.
func (f *Filter) Filter(chunk []byte) []byte {
	i := 0
	if f.state == inText {
		i = nextSpecial(chunk)
		if i == len(chunk) {
			return chunk
		}
	}
	f.out = append(f.out[:0], chunk[:i]...)
	for i < len(chunk) {
		if f.state == inText {
			k := i + nextSpecial(chunk[i:])
			f.out = append(f.out, chunk[i:k]...)
			if i = k; i == len(chunk) {
				break
			}
		}
		if f.step(chunk[i]) {
			i++
		}
	}
	return f.out
}

// FilterLines is Filter that also finds the lines of a chunk it passes
// as it is: it then returns lines with the offset of each of the chunk's
// line feeds appended, found in the same look at its bytes (a view that
// stamps each line need not look for them again). When the filter
// changes the chunk, lines is returned as it was given.
func (f *Filter) FilterLines(chunk []byte, lines []int) ([]byte, []int) {
	if f.state != inText {
		return f.Filter(chunk), lines
	}
	i, found := nextSpecialLines(chunk, lines)
	if i == len(chunk) {
		return chunk, found
	}
	return f.Filter(chunk), lines
}

// End ends the text: a lone ESC, a carriage return or a 0xC2 held at the
// end is shown; a sequence cut short is dropped. The result is valid
// until the next call.
func (f *Filter) End() []byte {
	f.out = f.out[:0]
	switch f.state {
	case afterEsc:
		f.out = append(f.out, "^["...)
	case afterCR:
		f.out = append(f.out, "^M"...)
	case afterC2:
		f.out = append(f.out, "\ufffd"...)
	}
	f.state = inText
	return f.out
}

// Unchanged tells whether out, what Filter returned for in, is in itself:
// whether the filter passed its input as it is.
func Unchanged(in, out []byte) bool {
	return len(in) == len(out) && (len(in) == 0 || &in[0] == &out[0])
}

// step takes c in the current state and says whether it is consumed;
// when not, the state has changed and c is taken again.
func (f *Filter) step(c byte) bool {
	switch f.state {
	case inText:
		f.text(c)
		return true
	case afterEsc:
		return f.escape(c)
	case inEscIntermediate, inCSI:
		return f.sequence(c)
	case inString:
		return f.inString(c)
	case afterStringEsc:
		if c == '\\' {
			f.state = inText
			return true
		}
		f.state = afterEsc
		return false
	case afterCR:
		return f.carriageReturn(c)
	default: // afterC2
		return f.c2(c)
	}
}

// text takes a special byte of text: the start of a sequence, a carriage
// return or a C1 control, or a control shown in caret notation.
func (f *Filter) text(c byte) {
	switch {
	case c == 0x1b:
		f.state = afterEsc
	case c == '\r':
		f.state = afterCR
	case c == 0xc2:
		f.state = afterC2
	case special[c]:
		f.out = append(f.out, '^', c^0x40) // ^@ … ^_, ^?
	default:
		f.out = append(f.out, c)
	}
}

// escape takes the byte after ESC: what kind of sequence it starts, if
// any; a lone ESC is shown.
func (f *Filter) escape(c byte) bool {
	switch {
	case c == '[':
		f.state = inCSI
	case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
		f.state = inString
	case c >= 0x20 && c <= 0x2f:
		f.state = inEscIntermediate
	case c >= 0x30 && c <= 0x7e:
		f.state = inText // a two-byte sequence, dropped
	default:
		f.out = append(f.out, "^["...)
		f.state = inText
		return false
	}
	return true
}

// sequence takes a byte of a CSI or charset sequence, up to its final
// byte; a sequence cut short by another byte leaves that byte as text.
func (f *Filter) sequence(c byte) bool {
	switch {
	case c >= 0x20 && c <= 0x2f, f.state == inCSI && c >= 0x30 && c <= 0x3f:
		return true
	case c >= 0x30 && c <= 0x7e:
		f.state = inText // the final byte
		return true
	}
	f.state = inText // cut short: the rest is text
	return false
}

// inString takes a byte of an OSC, DCS, SOS, PM or APC string, which
// ends at BEL, ESC \ or the end of the line.
func (f *Filter) inString(c byte) bool {
	switch c {
	case 0x07:
		f.state = inText
	case 0x1b:
		f.state = afterStringEsc
	case '\n':
		f.state = inText
		return false
	}
	return true
}

// carriageReturn takes the byte after a carriage return: dropped before
// a line feed, shown as ^M elsewhere.
func (f *Filter) carriageReturn(c byte) bool {
	f.state = inText
	if c == '\n' {
		f.out = append(f.out, '\n')
		return true
	}
	f.out = append(f.out, "^M"...)
	return false
}

// c2 takes the byte after 0xC2: a C1 control is shown escaped, a
// character of U+00A0 … U+00BF passes.
func (f *Filter) c2(c byte) bool {
	f.state = inText
	switch {
	case c >= 0x80 && c <= 0x9f:
		f.out = fmt.Appendf(f.out, `\u%04x`, c)
		return true
	case c >= 0xa0 && c <= 0xbf:
		f.out = append(f.out, 0xc2, c) // U+00A0 … U+00BF
		return true
	}
	// Not UTF-8. Shown as U+FFFD: a lone 0xC2 let through could make a
	// C1 control with a byte that follows a removed sequence.
	f.out = append(f.out, "\ufffd"...)
	return false
}

// nextSpecial returns the index of the first byte of b that text cannot
// pass as it is, or len(b): a control character, or a 0xC2 that does not
// start a character of U+00A0 … U+00BF ("·", "°", a no-break space).
func nextSpecial(b []byte) int {
	for i := 0; ; {
		k := i + nextSpecialByte(b[i:])
		if k+1 < len(b) && b[k] == 0xc2 && b[k+1] >= 0xa0 && b[k+1] <= 0xbf {
			i = k + 2
			continue
		}
		return k
	}
}

// nextSpecialLines is nextSpecial that also appends to lines the offset
// of each line feed before the byte it returns.
func nextSpecialLines(b []byte, lines []int) (int, []int) {
	for i := 0; ; {
		var k int
		k, lines = nextSpecialByteLines(b, i, lines)
		if k+1 < len(b) && b[k] == 0xc2 && b[k+1] >= 0xa0 && b[k+1] <= 0xbf {
			i = k + 2
			continue
		}
		return k, lines
	}
}

// nextSpecialByteLines is nextSpecialByte from b[from:], which also
// appends the offset of each line feed before the byte it returns: the
// words that hold one fail the quick test, and are looked at anyway.
func nextSpecialByteLines(b []byte, from int, lines []int) (int, []int) {
	i := from
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i : i+8])
		if printable(x) {
			continue
		}
		feeds := zeroBytes(x ^ (ones * '\n'))
		if m := specialMask(x); m != 0 {
			feeds &= (m & -m) - 1 // those before the special byte
			lines = appendLines(lines, i, feeds)
			return i + bits.TrailingZeros64(m)/8, lines
		}
		lines = appendLines(lines, i, feeds)
	}
	for ; i < len(b); i++ {
		if special[b[i]] {
			return i, lines
		}
		if b[i] == '\n' {
			lines = append(lines, i)
		}
	}
	return i, lines
}

// appendLines appends the offsets of the bytes whose high bits mask sets
// in the word at b[at:].
func appendLines(lines []int, at int, mask uint64) []int {
	for ; mask != 0; mask &= mask - 1 {
		lines = append(lines, at+bits.TrailingZeros64(mask)/8)
	}
	return lines
}

// nextSpecialByte returns the index of the first byte of b that is marked
// in special, or len(b). It looks at eight bytes at a time, with a quick
// test that every byte is printable ASCII; a word that fails it (a line
// feed, a tab, UTF-8) is looked at exactly, without a loop over its bytes:
// the output of a step goes through it, and each of its lines ends in a
// word that fails the quick test.
func nextSpecialByte(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i : i+8])
		if printable(x) {
			continue
		}
		if m := specialMask(x); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if special[b[i]] {
			return i
		}
	}
	return i
}

// printable is a quick test that every byte of x is printable ASCII: a
// byte below 0x20 sets its high bit in (x - 0x20…) &^ x, a byte of 0x7f or
// above in x | (x + 0x01…); a borrow or a carry across bytes comes only
// from a byte that sets its own.
func printable(x uint64) bool { return ((x-ones*0x20)&^x|x|(x+ones))&highs == 0 }

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
	low7  = 0x7f7f7f7f7f7f7f7f
)

// specialMask sets the high bit of each byte of x that is marked in
// special, and of no other: each byte is tested on its own bits, without
// a carry or a borrow from its neighbours.
func specialMask(x uint64) uint64 {
	below20 := ^((x&low7 + ones*(0x80-0x20)) | x) & highs
	lineFeedOrTab := zeroBytes(x^(ones*'\n')) | zeroBytes(x^(ones*'\t'))
	return below20&^lineFeedOrTab | zeroBytes(x^(ones*0x7f)) | zeroBytes(x^(ones*0xc2))
}

// zeroBytes sets the high bit of each byte of y that is zero, exactly.
func zeroBytes(y uint64) uint64 { return ^((y&low7 + low7) | y) & highs }
