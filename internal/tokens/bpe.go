package tokens

import (
	_ "embed"
	"math"
	"unicode"
	"unicode/utf8"

	"github.com/pipeline-dev/pipeline/internal/tokens/internal/vocabindex"
)

// Why not the tiktoken-go library, whose counts these are: linking it links
// the regexp2 engine, whose package initialisation (character classes,
// Unicode category tables) every start of pipeline paid, some 0.1 ms of
// CPU and 40 kB of heap, though most runs count no token; and its first
// count built a map of the vocabulary, 12-20 ms and 3.5 MB. The vocabulary
// is taken from it by go generate, and tests check this tokenizer against
// it.

//go:generate go run ./internal/genvocab cl100k_base.bin cl100k_base.idx

// cl100kBase is cl100k_base's vocabulary: for each rank from 0 up, one byte
// of length and the token's bytes.
//
//go:embed cl100k_base.bin
var cl100kBase string

// cl100kIndex is the index of cl100kBase, little-endian uint32s: the
// offset of each rank's token, then vocabindex's hash table, each slot 0
// or a rank plus one. It is read in place: counting builds nothing.
//
//go:embed cl100k_base.idx
var cl100kIndex string

// vocabularySize is cl100k_base's count of ordinary tokens (its special
// tokens are counted as the plain text they are made of).
const vocabularySize = 100256

func indexWord(i int) uint32 {
	w := cl100kIndex[4*i : 4*i+4]
	return uint32(w[0]) | uint32(w[1])<<8 | uint32(w[2])<<16 | uint32(w[3])<<24
}

// rankOf returns the rank of token, false if it is not in the vocabulary.
func rankOf(token string) (uint32, bool) {
	for s := vocabindex.Hash(token); ; s = (s + 1) % vocabindex.Slots {
		v := indexWord(vocabularySize + int(s))
		if v == 0 {
			return 0, false
		}
		off := int(indexWord(int(v - 1)))
		if n := int(cl100kBase[off]); n == len(token) && cl100kBase[off+1:off+1+n] == token {
			return v - 1, true
		}
	}
}

// countText is the number of cl100k_base tokens of text, as the
// tiktoken-go library counts them.
func countText(text string) int {
	n := 0
	eachToken(text, func(string) { n++ })
	return n
}

// eachToken calls yield with each token of text in turn.
func eachToken(text string, yield func(token string)) {
	if !utf8.ValidString(text) {
		// The library's regular expression engine runs on runes: each
		// byte that is not part of valid UTF-8 becomes a U+FFFD.
		text = string([]rune(text))
	}
	var parts []int
	for i := 0; i < len(text); {
		end := pieceEnd(text, i)
		if end == i {
			// No piece starts with this rune (DEL, for one): the
			// library's engine skips it.
			_, n := utf8.DecodeRuneInString(text[i:])
			i += n
			continue
		}
		piece := text[i:end]
		i = end
		if _, ok := rankOf(piece); ok {
			yield(piece)
			continue
		}
		parts = mergePairs(piece, parts[:0])
		for k := 0; k+1 < len(parts); k++ {
			yield(piece[parts[k]:parts[k+1]])
		}
	}
}

// pieceEnd returns where the piece of the pre-tokenizer that starts at
// text[i] ends, or i if none starts there. The pre-tokenizer is
// cl100k_base's regular expression,
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//	 ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// as the library's generated matcher runs it, quirks included: its
// \s*[\r\n]+ ends at the first run of line breaks, not the last, and DEL is
// in none of its classes. Its alternatives are tried in order.
func pieceEnd(text string, i int) int {
	r, n := utf8.DecodeRuneInString(text[i:])
	if r == '\'' {
		if k := contraction(text[i+n:]); k > 0 {
			return i + n + k
		}
	}
	if unicode.IsLetter(r) {
		return letterRunEnd(text, i)
	}
	if isLetterPrefix(r) {
		if end := letterRunEnd(text, i+n); end > i+n {
			return end
		}
	}
	if unicode.IsNumber(r) {
		end := i + n
		for k := 1; k < 3 && end < len(text); k++ {
			r, n := utf8.DecodeRuneInString(text[end:])
			if !unicode.IsNumber(r) {
				break
			}
			end += n
		}
		return end
	}
	if end := symbolsEnd(text, i); end > i {
		return end
	}
	return spaceEnd(text, i)
}

// contraction returns the length of the contraction ('s, 're, ...) that
// follows an apostrophe at the start of s, 0 if none.
func contraction(s string) int {
	r, n := utf8.DecodeRuneInString(s)
	switch r {
	case 'S', 'T', 's', 't', 'ſ', 'M', 'm', 'D', 'd':
		return n
	case 'R', 'r', 'V', 'v':
		if len(s) > 1 && s[1]|0x20 == 'e' {
			return 2
		}
	case 'L', 'l':
		if len(s) > 1 && s[1]|0x20 == 'l' {
			return 2
		}
	}
	return 0
}

// letterRunEnd returns the end of the run of letters at text[i:].
func letterRunEnd(text string, i int) int {
	for i < len(text) {
		r, n := utf8.DecodeRuneInString(text[i:])
		if !unicode.IsLetter(r) {
			break
		}
		i += n
	}
	return i
}

// symbolsEnd returns the end of " ?[^\s\p{L}\p{N}]+[\r\n]*" at text[i:],
// i if it does not match there.
func symbolsEnd(text string, i int) int {
	start := i
	if text[i] == ' ' {
		i++
	}
	symbols := i
	for i < len(text) {
		r, n := utf8.DecodeRuneInString(text[i:])
		if !isSymbol(r) {
			break
		}
		i += n
	}
	if i == symbols {
		return start
	}
	for i < len(text) && (text[i] == '\r' || text[i] == '\n') {
		i++
	}
	return i
}

// spaceEnd returns the end of the whitespace piece at text[i:], i if text[i]
// is not whitespace.
func spaceEnd(text string, i int) int {
	end := i
	for end < len(text) {
		r, n := utf8.DecodeRuneInString(text[end:])
		if r == '\r' || r == '\n' {
			// \s*[\r\n]+, ended at the first run of line breaks: the
			// whitespace after it is the next piece's, so it is not
			// scanned (scanning it made " \n" repeated quadratic).
			for end < len(text) && (text[end] == '\r' || text[end] == '\n') {
				end++
			}
			return end
		}
		if !unicode.IsSpace(r) {
			break
		}
		end += n
	}
	switch {
	case end == i:
		return i
	case end == len(text):
		// \s+(?!\S) to the end of the text
		return end
	}
	// \s+(?!\S) leaves the last whitespace rune to the piece after it,
	// unless that rune is all there is: then \s+.
	_, last := utf8.DecodeLastRuneInString(text[i:end])
	if end-last > i {
		return end - last
	}
	return end
}

// The ASCII halves of the library's classes [^\r\n\p{L}\p{N}] and
// [^\s\p{L}\p{N}], bit c set for character c: neither holds DEL.
const (
	letterPrefixLow, letterPrefixHigh = 0xfc00ffffffffdbff, 0x78000001f8000001
	symbolLow, symbolHigh             = 0xfc00fffeffffc1ff, 0x78000001f8000001
)

func inASCIIBitmap(r rune, low, high uint64) bool {
	if r < 64 {
		return low&(1<<r) != 0
	}
	return high&(1<<(r-64)) != 0
}

// isLetterPrefix reports whether r is in [^\r\n\p{L}\p{N}].
func isLetterPrefix(r rune) bool {
	if r < utf8.RuneSelf {
		return inASCIIBitmap(r, letterPrefixLow, letterPrefixHigh)
	}
	return !unicode.IsLetter(r) && !unicode.IsNumber(r)
}

// isSymbol reports whether r is in [^\s\p{L}\p{N}].
func isSymbol(r rune) bool {
	if r < utf8.RuneSelf {
		return inASCIIBitmap(r, symbolLow, symbolHigh)
	}
	return !unicode.IsSpace(r) && !unicode.IsLetter(r) && !unicode.IsNumber(r)
}

// noRank marks a part that cannot merge with the next, or a merged-away one.
const noRank = math.MaxUint32

// mergePairs returns the offsets at which byte-pair encoding cuts piece
// into tokens, piece's length last, appended to parts: it merges, again and
// again, the leftmost of the adjacent pairs whose joined bytes are the
// token of lowest rank.
func mergePairs(piece string, parts []int) []int {
	if len(piece) >= mergeHeapFrom {
		return mergePairsHeap(piece, parts)
	}
	type part struct {
		offset int
		rank   uint32 // of this part joined with the next
	}
	var buf [mergeHeapFrom + 1]part
	ps := buf[:len(piece)+1]
	rankOf := func(i int) uint32 {
		if i+2 < len(ps) {
			if rank, ok := rankOf(piece[ps[i].offset:ps[i+2].offset]); ok {
				return rank
			}
		}
		return noRank
	}
	for i := range ps {
		ps[i] = part{i, noRank}
	}
	for i := range ps {
		ps[i].rank = rankOf(i)
	}
	for len(ps) > 1 {
		best := 0
		for i := range ps[:len(ps)-1] {
			if ps[i].rank < ps[best].rank {
				best = i
			}
		}
		if ps[best].rank == noRank {
			break
		}
		ps = append(ps[:best+1], ps[best+2:]...)
		ps[best].rank = rankOf(best)
		if best > 0 {
			ps[best-1].rank = rankOf(best - 1)
		}
	}
	for _, p := range ps {
		parts = append(parts, p.offset)
	}
	return parts
}

// mergeHeapFrom is the piece length from which mergePairs finds the pair to
// merge with a heap, in O(n log n), rather than by scanning all pairs for
// each merge, O(n²).
const mergeHeapFrom = 96

// mergePairsHeap is mergePairs for long pieces: the boundaries between
// parts are a linked list, and a heap holds the candidate merges by rank,
// then offset, so that the leftmost of the lowest rank comes first. A
// candidate whose pair has changed since it was pushed is stale, and
// skipped.
func mergePairsHeap(piece string, parts []int) []int {
	n := int32(len(piece))
	next := make([]int32, n+1)
	prev := make([]int32, n+1)
	rank := make([]uint32, n+1)
	for i := range next {
		next[i], prev[i], rank[i] = int32(i)+1, int32(i)-1, noRank
	}
	next[n] = -1
	rankOf := func(i int32) uint32 {
		j := next[i]
		if j < 0 || next[j] < 0 {
			return noRank
		}
		if r, ok := rankOf(piece[i:next[j]]); ok {
			return r
		}
		return noRank
	}
	h := make(mergeHeap, 0, n)
	for i := int32(0); i+2 <= n; i++ {
		if rank[i] = rankOf(i); rank[i] != noRank {
			h = append(h, mergeCandidate{rank[i], i})
		}
	}
	h.init()
	for len(h) > 0 {
		top := h.pop()
		i := top.offset
		if rank[i] != top.rank {
			continue
		}
		j := next[i]
		k := next[j]
		rank[j] = noRank
		next[i] = k
		if k >= 0 {
			prev[k] = i
		}
		for _, b := range [2]int32{i, prev[i]} {
			if b < 0 {
				continue
			}
			if rank[b] = rankOf(b); rank[b] != noRank {
				h.push(mergeCandidate{rank[b], b})
			}
		}
	}
	for i := int32(0); i >= 0; i = next[i] {
		parts = append(parts, int(i))
	}
	return parts
}

type mergeCandidate struct {
	rank   uint32
	offset int32
}

// mergeHeap is a min-heap of merge candidates, typed so that a push does
// not allocate as container/heap's would.
type mergeHeap []mergeCandidate

func (h mergeHeap) less(a, b int) bool {
	if h[a].rank != h[b].rank {
		return h[a].rank < h[b].rank
	}
	return h[a].offset < h[b].offset
}

func (h mergeHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *mergeHeap) push(c mergeCandidate) {
	*h = append(*h, c)
	for i := len(*h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		(*h)[i], (*h)[parent] = (*h)[parent], (*h)[i]
		i = parent
	}
}

func (h *mergeHeap) pop() mergeCandidate {
	old := *h
	top := old[0]
	last := len(old) - 1
	old[0] = old[last]
	*h = old[:last]
	h.down(0)
	return top
}

func (h mergeHeap) down(i int) {
	for {
		least := i
		for _, child := range [2]int{2*i + 1, 2*i + 2} {
			if child < len(h) && h.less(child, least) {
				least = child
			}
		}
		if least == i {
			return
		}
		h[i], h[least] = h[least], h[i]
		i = least
	}
}
