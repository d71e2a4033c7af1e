package tokens

import (
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/tiktoken-go/tokenizer/codec"

	"github.com/pipeline-dev/pipeline/internal/tokens/internal/vocabindex"
)

// The tokenizer of this package replaces the tiktoken-go library's, which
// the binary no longer links; the tests below hold it to the library's
// tokens, quirks and all. Only tests link the library.

var library = sync.OnceValue(codec.NewCl100kBase)

func libraryTokens(t testing.TB, text string) []string {
	t.Helper()
	_, tokens, err := library().Encode(text)
	if err != nil {
		t.Fatalf("library: %v", err)
	}
	return tokens
}

func ownTokens(text string) []string {
	var tokens []string
	eachToken(text, func(token string) { tokens = append(tokens, token) })
	return tokens
}

func checkTokens(t testing.TB, text string) {
	t.Helper()
	want, got := libraryTokens(t, text), ownTokens(text)
	if !slices.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("tokens of %q differ from the library's at token %d:\n got %q\nwant %q",
			shorten(text), i, got[i:min(i+8, len(got))], want[i:min(i+8, len(want))])
	}
	if n := Count(text); n != len(want) {
		t.Fatalf("Count(%q) = %d, library %d", shorten(text), n, len(want))
	}
}

func shorten(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// TestVocabularyIsTheLibrarys checks the embedded vocabulary and its index,
// token by token, against the library's: a library upgrade that changes it
// fails here until go generate is run again.
func TestVocabularyIsTheLibrarys(t *testing.T) {
	if got := (len(cl100kIndex) - 4*vocabindex.Slots) / 4; got != vocabularySize {
		t.Fatalf("index of %d tokens, want %d", got, vocabularySize)
	}
	for rank := range uint32(vocabularySize) {
		token, err := library().Decode([]uint{uint(rank)})
		if err != nil {
			t.Fatalf("rank %d: library: %v", rank, err)
		}
		if got, ok := rankOf(token); !ok || got != rank {
			t.Fatalf("token %q: rank %d (found %v), library %d", token, got, ok, rank)
		}
		off := int(indexWord(int(rank)))
		if n := int(cl100kBase[off]); cl100kBase[off+1:off+1+n] != token {
			t.Fatalf("rank %d: token %q, library %q", rank, cl100kBase[off+1:off+1+n], token)
		}
	}
	if _, err := library().Decode([]uint{vocabularySize}); err == nil {
		t.Fatalf("the library has an ordinary token of rank %d: its vocabulary grew", vocabularySize)
	}
	for _, absent := range []string{"", "<|endoftext|>", strings.Repeat("x", 256)} {
		if rank, ok := rankOf(absent); ok {
			t.Errorf("%q found at rank %d: not in the vocabulary", absent, rank)
		}
	}
}

// TestTokensAreTheLibrarys compares the tokens of the corpora of the
// counter's tests, and of texts made to reach the pre-tokenizer's quirks
// and the long pieces that are merged with a heap.
func TestTokensAreTheLibrarys(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	texts := []string{
		"", "hello world", "<|endoftext|>", "お誕生日おめでとう",
		"I'm they're we've you'll he'd it's 'S 'RE 'Ll 'ſ 'x ' '",
		"a \n \n b", "x  \n\n  \r\n y", "tail   ", "  lead", "a \t b",
		"\x7f", "a\x7fb", " \x7f\x7f ", "1234567 12 1",
		"\xff\xfe abc \xe3\x81 x\xc0", "a\u0085b\u00a0c\u2028d\u3000e",
		"Ⅻ½²³ ٣٤٥ x²", "!!!\n\n\n?? ...\r\r\n", "'''''", "--' 's",
		strings.Repeat("a", 500), strings.Repeat("ab", 400),
		strings.Repeat(" ", 300) + "x", strings.Repeat("\n", 200),
		strings.Repeat("=", 1000), strings.Repeat("日本", 100),
		randomBlob(r, 4000),
		logCorpus(32<<10, 3), proseCorpus(32<<10, 4), mixedCorpus(32<<10, 5),
	}
	for _, text := range texts {
		checkTokens(t, text)
	}
}

// TestEveryRuneClassIsTheLibrarys runs, in contexts that reach every
// alternative of the pre-tokenizer, each rune below U+0400 and, above,
// the first and last rune of each range of runes that are alike in being
// letters, numbers or whitespace, which is all that the pre-tokenizer
// asks of a rune.
func TestEveryRuneClassIsTheLibrarys(t *testing.T) {
	var b strings.Builder
	check := func(r rune) {
		s := string(r)
		for _, context := range []string{"a%b", " %x", "%%%", "'%", "%\n\n x", "1%2", "\t% ", " %", "!%?", "% ", "%"} {
			b.WriteString(strings.ReplaceAll(context, "%", s))
			b.WriteString("|")
		}
		if b.Len() > 16<<10 {
			checkTokens(t, b.String())
			b.Reset()
		}
	}
	class := func(r rune) [3]bool {
		return [3]bool{unicode.IsLetter(r), unicode.IsNumber(r), unicode.IsSpace(r)}
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r < 0x400 || class(r) != class(r-1) || r < unicode.MaxRune && class(r) != class(r+1) {
			check(r)
		}
	}
	checkTokens(t, b.String())
}

// FuzzTokensAreTheLibrarys compares the tokens of any text.
func FuzzTokensAreTheLibrarys(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 4096 {
			return
		}
		checkTokens(t, text)
	})
}

// Lines of whitespace alone are pieces the library's way. (Their speed
// is BenchmarkBlankLines': a pre-tokenizer that scanned all the
// whitespace ahead of each line break took 108 s for 256 KiB of " \n",
// where the linear one takes 2-8 ms.)
func TestBlankLinesAreTheLibrarys(t *testing.T) {
	for _, line := range blankLines {
		checkTokens(t, strings.Repeat(line, (4<<10)/len(line)))
	}
}

var blankLines = []string{" \n", "\n ", "\t\r\n "}

func BenchmarkBlankLines(b *testing.B) {
	for _, line := range blankLines {
		text := strings.Repeat(line, (256<<10)/len(line))
		b.Run(strings.NewReplacer("\n", "LF", "\r", "CR", "\t", "TAB", " ", "SP").Replace(line), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				Count(text)
			}
		})
	}
}
