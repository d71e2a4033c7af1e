package redact

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

// encodedMatcher finds secret literals written with escapes: JSON and
// JavaScript string escapes and URL percent-encoding, in any mix, for any
// of their bytes. A literal with no escape in it is found as it is, by the
// passes; one with an escape has a first escape, which starts with '\\',
// '%' or '+'. The chunk is swept for those bytes; at each, the literal is
// followed back over its bytes as they are (none to all but its last) and
// forward over escapes and bytes from there.
type encodedMatcher struct {
	lits []redactLiteral // the matcher's, indexed by lit
	// anchors are the bytes a chunk is swept for: '\\' and '%', and '+'
	// when a literal holds a space (form encoding writes it "+").
	anchors []byte
	// byFirst lists the literals that start with a byte: those that
	// can start at an escape of it.
	byFirst [256][]int32
	// byLast lists, for a byte c, the literals and the lengths k of their
	// prefixes that end with c: those that can start k bytes before an
	// escape that follows c.
	byLast [256][]encodedPrefix
}

type encodedPrefix struct {
	lit int32
	k   int32
}

func newEncodedMatcher(lits []redactLiteral, encoded []int32) *encodedMatcher {
	e := &encodedMatcher{lits: lits, anchors: []byte{'\\', '%'}}
	space := false
	for _, li := range encoded {
		text := lits[li].text
		e.byFirst[text[0]] = append(e.byFirst[text[0]], li)
		for k := 1; k < len(text); k++ {
			e.byLast[text[k-1]] = append(e.byLast[text[k-1]], encodedPrefix{li, int32(k)})
		}
		space = space || bytes.IndexByte(text, ' ') >= 0
	}
	if space {
		e.anchors = append(e.anchors, '+')
	}
	return e
}

// findAt appends the literals whose first escape is at p.
func (e *encodedMatcher) findAt(buf []byte, p int, final bool, cands []redactCand) []redactCand {
	add := func(start int, li int32, end int, st matchStatus) {
		switch st {
		case matchFound:
			cands = append(cands, redactCand{start: start, end: end, lit: li})
		case matchUndecided:
			cands = append(cands, redactCand{start: start, lit: li, partial: true})
		}
	}
	// Literals that start with the escape.
	dec, _, st := decodeEscape(buf, p, final)
	if st == matchUndecided {
		// Cut by the end of buf: any literal may start here.
		add(p, 0, 0, matchUndecided)
	} else {
		first := e.byFirst[buf[p]]
		if st == matchFound && dec[0] != buf[p] {
			first = append(first[:len(first):len(first)], e.byFirst[dec[0]]...)
		}
		for _, li := range first {
			end, st := matchEscaped(buf, p, e.lits[li].text, 0, final)
			add(p, li, end, st)
		}
	}
	// Literals whose first k bytes are there as they are before it.
	if p == 0 {
		return cands
	}
	for _, pre := range e.byLast[buf[p-1]] {
		k := int(pre.k)
		text := e.lits[pre.lit].text
		if k > p || !bytes.Equal(buf[p-k:p], text[:k]) {
			continue
		}
		end, st := matchEscaped(buf, p, text, k, final)
		add(p-k, pre.lit, end, st)
	}
	return cands
}

// matchEscaped matches text[j:] at buf[i:], each of its bytes as it is or
// escaped, and returns where the match ends. An escape is taken when it
// stands for the bytes that come next in text; otherwise its first byte
// must be text's next byte. The match is undecided when buf ends before
// it does (and buf is not final).
func matchEscaped(buf []byte, i int, text []byte, j int, final bool) (end int, st matchStatus) {
	branches := maxEscapeBranches
	return matchEscapedFrom(buf, i, text, j, final, &branches)
}

// maxEscapeBranches bounds the places where a match tries a byte both as
// an escape and as it is ("\\" is a backslash, or two): past it, only the
// escape is tried.
const maxEscapeBranches = 16

func matchEscapedFrom(buf []byte, i int, text []byte, j int, final bool, branches *int) (end int, st matchStatus) {
	for j < len(text) {
		if i == len(buf) {
			if final {
				return 0, matchNone
			}
			return 0, matchUndecided
		}
		c := buf[i]
		if c == '\\' || c == '%' || c == '+' {
			dec, n, st := decodeEscape(buf, i, final)
			if st == matchUndecided {
				return 0, matchUndecided
			}
			if st == matchFound && bytes.HasPrefix(text[j:], dec) {
				if c != text[j] || *branches == 0 {
					i, j = i+n, j+len(dec)
					continue
				}
				// Both ways fit: the escape, then the byte as it is.
				*branches--
				if end, st := matchEscapedFrom(buf, i+n, text, j+len(dec), final, branches); st != matchNone {
					return end, st
				}
			}
		}
		if c != text[j] {
			return 0, matchNone
		}
		i, j = i+1, j+1
	}
	return i, matchFound
}

// decodeEscape reads the escape at buf[i] ('\\', '%' or '+'): the bytes it
// stands for and its length. matchNone: it is not an escape;
// matchUndecided: buf ends inside it and is not final.
func decodeEscape(buf []byte, i int, final bool) (dec []byte, n int, st matchStatus) {
	// cut answers for an escape that needs bytes past the end of buf.
	cut := func() ([]byte, int, matchStatus) {
		if final {
			return nil, 0, matchNone
		}
		return nil, 0, matchUndecided
	}
	// hex reads n hex digits at buf[at:].
	hex := func(at, n int) (v rune, st matchStatus) {
		for k := range n {
			if at+k >= len(buf) {
				_, _, st := cut()
				return 0, st
			}
			d := unhex(buf[at+k])
			if d < 0 {
				return 0, matchNone
			}
			v = v<<4 | rune(d)
		}
		return v, matchFound
	}
	switch buf[i] {
	case '+':
		return spaceByte, 1, matchFound
	case '%':
		v, st := hex(i+1, 2)
		if st != matchFound {
			return nil, 0, st
		}
		return byteString[v : v+1], 3, matchFound
	}
	// '\\'
	if i+1 >= len(buf) {
		return cut()
	}
	switch c := buf[i+1]; c {
	case '"', '\\', '/', '\'':
		return byteString[c : c+1], 2, matchFound
	case 'b':
		return byteString['\b' : '\b'+1], 2, matchFound
	case 'f':
		return byteString['\f' : '\f'+1], 2, matchFound
	case 'n':
		return byteString['\n' : '\n'+1], 2, matchFound
	case 'r':
		return byteString['\r' : '\r'+1], 2, matchFound
	case 't':
		return byteString['\t' : '\t'+1], 2, matchFound
	case 'x':
		v, st := hex(i+2, 2)
		if st != matchFound {
			return nil, 0, st
		}
		return byteString[v : v+1], 4, matchFound
	case 'u':
		r, st := hex(i+2, 4)
		if st != matchFound {
			return nil, 0, st
		}
		n = 6
		if utf16.IsSurrogate(r) {
			// A pair: \uD83D\uDE00.
			if r >= 0xdc00 {
				return nil, 0, matchNone
			}
			for k, want := range []byte{'\\', 'u'} {
				if i+6+k >= len(buf) {
					return cut()
				}
				if buf[i+6+k] != want {
					return nil, 0, matchNone
				}
			}
			low, st := hex(i+8, 4)
			if st != matchFound {
				return nil, 0, st
			}
			if r = utf16.DecodeRune(r, low); r == utf8.RuneError {
				return nil, 0, matchNone
			}
			n = 12
		}
		if r < utf8.RuneSelf {
			return byteString[r : r+1], n, matchFound
		}
		return utf8.AppendRune(nil, r), n, matchFound
	}
	return nil, 0, matchNone
}

// byteString holds every byte value at its own index, so that a decoded
// byte is a slice of it rather than an allocation.
// It is written out so that no package init builds it
// (TestByteStringHoldsEveryByteAtItsIndex).
var byteString = [256]byte{
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
	0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
	0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e, 0x2f,
	0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x3b, 0x3c, 0x3d, 0x3e, 0x3f,
	0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x4b, 0x4c, 0x4d, 0x4e, 0x4f,
	0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x5b, 0x5c, 0x5d, 0x5e, 0x5f,
	0x60, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x6b, 0x6c, 0x6d, 0x6e, 0x6f,
	0x70, 0x71, 0x72, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x7b, 0x7c, 0x7d, 0x7e, 0x7f,
	0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x8b, 0x8c, 0x8d, 0x8e, 0x8f,
	0x90, 0x91, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0x9b, 0x9c, 0x9d, 0x9e, 0x9f,
	0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf,
	0xb0, 0xb1, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xbb, 0xbc, 0xbd, 0xbe, 0xbf,
	0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xcb, 0xcc, 0xcd, 0xce, 0xcf,
	0xd0, 0xd1, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xdb, 0xdc, 0xdd, 0xde, 0xdf,
	0xe0, 0xe1, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xeb, 0xec, 0xed, 0xee, 0xef,
	0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd, 0xfe, 0xff,
}

var spaceByte = []byte{' '}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
