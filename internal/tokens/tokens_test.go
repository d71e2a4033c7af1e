package tokens

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// The expected counts are cl100k_base's, as OpenAI's tiktoken gives them
// (several are the examples of its cookbook, "How to count tokens with
// tiktoken").
func TestCountTokensKnown(t *testing.T) {
	for _, tc := range []struct {
		text string
		want int
	}{
		{"", 0},
		{"hello world", 2},
		{"Hello, world!", 4},
		{"tiktoken is great!", 6},
		{"antidisestablishmentarianism", 6},
		{"2 + 2 = 4", 7},
		{"お誕生日おめでとう", 9},
		{"<|endoftext|>", 7}, // special tokens count as plain text
	} {
		if got := Count(tc.text); got != tc.want {
			t.Errorf("Count(%q) = %d, want %d", tc.text, got, tc.want)
		}
	}
}

func TestCountTokensProperties(t *testing.T) {
	// Not chars/4: Japanese takes far more, repeated letters far fewer.
	if n := Count("お誕生日おめでとう"); n <= len("お誕生日おめでとう")/4 {
		t.Errorf("Japanese: %d tokens, no more than bytes/4", n)
	}
	if n := Count(strings.Repeat("a", 400)); n >= 100 {
		t.Errorf("400 a's: %d tokens, want fewer than 100", n)
	}
	// Invalid UTF-8 is counted, not dropped or refused.
	if n := Count("\xff\xfe abc"); n < 2 {
		t.Errorf("invalid UTF-8: %d tokens", n)
	}
	// Growing a text line by line never lowers its count.
	text := logCorpus(8<<10, 1)
	prev := 0
	for i := 0; i < len(text); {
		j := strings.IndexByte(text[i:], '\n')
		i += j + 1
		n := Count(text[:i])
		if n < prev {
			t.Fatalf("count fell from %d to %d at byte %d", prev, n, i)
		}
		prev = n
	}
	if bpt := float64(len(text)) / float64(prev); bpt < 1.5 || bpt > 6 {
		t.Errorf("log lines: %.2f bytes a token", bpt)
	}
}

// feed writes text to c in chunks whose sizes next returns, and flushes.
func feed(c *Counter, text string, next func() int) {
	for b := []byte(text); len(b) > 0; {
		n := min(max(next(), 1), len(b))
		c.Write(b[:n])
		b = b[n:]
	}
	c.Flush()
}

func TestTokenCounterChunks(t *testing.T) {
	corpora := map[string]string{
		"logs":  logCorpus(48<<10, 2),
		"prose": proseCorpus(48<<10, 3),
		"mixed": mixedCorpus(48<<10, 4),
	}
	for name, text := range corpora {
		want := Count(text)
		r := rand.New(rand.NewPCG(5, 6))
		chunkings := map[string]func() int{
			"1-byte":         func() int { return 1 },
			"3-byte":         func() int { return 3 }, // splits most multibyte runes
			"random-1-16":    func() int { return 1 + r.IntN(16) },
			"random-1-4096":  func() int { return 1 + r.IntN(4096) },
			"random-1-64KiB": func() int { return 1 + r.IntN(64<<10) },
			"whole":          func() int { return len(text) },
		}
		for cname, next := range chunkings {
			var c Counter
			feed(&c, text, next)
			if got := c.Count(); got != want {
				t.Errorf("%s in %s chunks: %d tokens, Count says %d", name, cname, got, want)
			}
		}
	}
}

func TestTokenCounterSplitsRunes(t *testing.T) {
	// Every chunk boundary falls inside a rune somewhere.
	text := strings.Repeat("Größe: 日本語のテキスト 🙂🙂 — naïve café\n", 200)
	want := Count(text)
	for size := 1; size <= 7; size++ {
		var c Counter
		feed(&c, text, func() int { return size })
		if got := c.Count(); got != want {
			t.Errorf("%d-byte chunks: %d tokens, want %d", size, got, want)
		}
	}
}

func TestTokenCounterLongLines(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	// One line of words: cut at spaces, so exact.
	words := strings.ReplaceAll(proseCorpus(150<<10, 9), "\n", " ")
	// No whitespace at all: cut between runes every 64 KiB.
	blob := randomBlob(r, 200<<10)
	for name, tc := range map[string]struct {
		text  string
		exact bool
	}{
		"words": {words, true},
		"blob":  {blob, false},
	} {
		want := Count(tc.text)
		var c Counter
		feed(&c, tc.text, func() int { return 1 + r.IntN(8<<10) })
		got := c.Count()
		if tc.exact && got != want || math.Abs(float64(got-want)) > 0.01*float64(want) {
			t.Errorf("%s: %d tokens, Count says %d", name, got, want)
		}
	}
}

func TestTokenCounterCountWhileWriting(t *testing.T) {
	text := logCorpus(64<<10, 10)
	want := Count(text)
	var c Counter
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		prev := 0
		for {
			select {
			case <-done:
				return
			default:
			}
			n := c.Count()
			if n < prev {
				t.Errorf("Count went down from %d to %d", prev, n)
				return
			}
			prev = n
		}
	})
	feed(&c, text, func() int { return 512 })
	close(done)
	wg.Wait()
	if got := c.Count(); got != want {
		t.Errorf("Count = %d, want %d", got, want)
	}
}

func TestSampledTokenCounter(t *testing.T) {
	// A stream no longer than one window is counted exactly.
	short := proseCorpus(SampleWindow, 11)
	short = short[:strings.LastIndexByte(short[:SampleWindow], '\n')+1]
	c := NewSampled(16)
	feed(c, short, func() int { return 1000 })
	if got, want := c.Count(), Count(short); got != want {
		t.Errorf("short stream: %d tokens, want %d", got, want)
	}

	text := logCorpus(512<<10, 12)
	var exact Counter
	feed(&exact, text, func() int { return 64 << 10 })
	want := exact.Count()
	for _, every := range []int{1, 4} {
		c := NewSampled(every)
		r := rand.New(rand.NewPCG(13, uint64(every)))
		feed(c, text, func() int { return 1 + r.IntN(64<<10) })
		got := c.Count()
		if off := math.Abs(float64(got-want)) / float64(want); every == 1 && got != want || off > 0.03 {
			t.Errorf("every %d: estimate %d, exact %d", every, got, want)
		}
	}
}

// The corpora are generated, so that tests and benchmarks need no files.

var (
	levels     = []string{"INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"}
	components = []string{"http", "worker", "db.pool", "scheduler", "auth", "cache", "grpc.server", "queue"}
	messages   = []string{
		"request completed", "connection established", "retrying after timeout",
		"cache miss for key", "job finished", "slow query detected",
		"token refreshed", "failed to read body: unexpected EOF",
		"user José logged in", "upload of 日本語.txt done",
	}
	methods = []string{"GET", "POST", "PUT", "DELETE"}
)

// logCorpus returns about size bytes of log lines of some 100 bytes each,
// with the odd stack trace (lines that start with a tab) and JSON line.
func logCorpus(size int, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 1))
	var b strings.Builder
	for b.Len() < size {
		switch k := r.IntN(40); {
		case k == 0:
			fmt.Fprintf(&b, "panic: runtime error: index out of range [%d] with length %d\n\ngoroutine %d [running]:\n", r.IntN(10), r.IntN(10), r.IntN(500))
			for range 3 {
				fmt.Fprintf(&b, "main.(*Server).handle(0xc%09x)\n\t/src/app/server.go:%d +0x%x\n", r.Uint64()&0xfffffffff, r.IntN(900), r.IntN(4096))
			}
		case k == 1:
			fmt.Fprintf(&b, `{"ts":%d,"level":"%s","msg":"%s","latency_ms":%.3f,"ok":%t}`+"\n",
				1700000000+r.IntN(1e7), strings.ToLower(levels[r.IntN(len(levels))]), messages[r.IntN(len(messages))], r.Float64()*100, r.IntN(2) == 0)
		default:
			fmt.Fprintf(&b, "2025-03-%02dT%02d:%02d:%02d.%03dZ %-5s [%s] %s method=%s path=/api/v1/items/%d id=%08x dur=%dms\n",
				1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000),
				levels[r.IntN(len(levels))], components[r.IntN(len(components))], messages[r.IntN(len(messages))],
				methods[r.IntN(len(methods))], r.IntN(100000), r.Uint32(), r.IntN(2000))
		}
	}
	return b.String()
}

var proseWords = strings.Fields(`the of and to a in is that it for was on are as with his they I at be
this have from or one had by word but not what all were we when your can said there use an each which
she do how their if will up other about out many then them these so some her would make like him into
time has look two more write go see number no way could people my than first water been call who oil its
now find long down day did get come made may part agent pipeline output token phase step session
configuration repository function returns error value string because however although therefore
naïve café résumé Zürich “quoted” words—dashes and (parentheses), commas; semicolons: colons`)

// proseCorpus returns about size bytes of English-like paragraphs, with
// markdown headings, lists and code spans.
func proseCorpus(size int, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 2))
	var b strings.Builder
	word := func() string {
		// Zipf-like: the first words are by far the most common.
		i := int(float64(len(proseWords)) * math.Pow(r.Float64(), 2.5))
		return proseWords[i]
	}
	for b.Len() < size {
		switch r.IntN(10) {
		case 0:
			fmt.Fprintf(&b, "## %s %s\n\n", strings.ToUpper(word()[:1])+word()[1:], word())
		case 1:
			for range 1 + r.IntN(4) {
				fmt.Fprintf(&b, "- %s `%s()` %s %s\n", word(), word(), word(), word())
			}
			b.WriteString("\n")
		default:
			for range 2 + r.IntN(5) {
				n := 5 + r.IntN(20)
				for i := range n {
					w := word()
					if i == 0 {
						r, size := utf8.DecodeRuneInString(w)
						w = strings.ToUpper(string(r)) + w[size:]
						b.WriteString(w)
					} else {
						b.WriteString(" " + w)
					}
					if i < n-1 && r.IntN(12) == 0 {
						b.WriteString(",")
					}
				}
				b.WriteString(". ")
			}
			b.WriteString("\n\n")
		}
	}
	return b.String()
}

// mixedCorpus interleaves prose, log lines, indented code and CRLF lines.
func mixedCorpus(size int, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 3))
	var b strings.Builder
	for b.Len() < size {
		switch r.IntN(4) {
		case 0:
			b.WriteString(proseCorpus(2<<10, r.Uint64()))
		case 1:
			b.WriteString(logCorpus(2<<10, r.Uint64()))
		case 2:
			b.WriteString("```go\nfunc f(x int) (int, error) {\n\tif x < 0 {\n\t\treturn 0, errors.New(\"negative\")\n\t}\n\n\treturn x * 2, nil\n}\n```\n")
		case 3:
			b.WriteString("line one\r\nline two\r\n\r\n  indented\r\n")
		}
	}
	return b.String()
}

// randomBlob returns size bytes of base64-like text with no whitespace.
func randomBlob(r *rand.Rand, size int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	b := make([]byte, size)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

// benchCorpora are the 16 MB corpora of the benchmarks, with their exact
// token counts, made once.
var benchCorpora = sync.OnceValue(func() map[string]benchCorpus {
	m := map[string]benchCorpus{}
	for name, text := range map[string]string{
		"logs":  logCorpus(16<<20, 20),
		"prose": proseCorpus(16<<20, 21),
	} {
		b := []byte(text)
		var c Counter
		writeChunks(&c, b)
		m[name] = benchCorpus{b, c.Count()}
	}
	return m
})

type benchCorpus struct {
	text   []byte
	tokens int
}

const benchChunk = 256 << 10

func writeChunks(c *Counter, b []byte) {
	for len(b) > 0 {
		n := min(benchChunk, len(b))
		c.Write(b[:n])
		b = b[n:]
	}
	c.Flush()
}

// BenchmarkTokenCounter feeds 16 MB of ~100-byte log lines in 256 KiB
// chunks to an exact counter.
func BenchmarkTokenCounter(b *testing.B) {
	text := []byte(logCorpus(16<<20, 20))
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		var c Counter
		writeChunks(&c, text)
	}
}

// BenchmarkSampledTokenCounter feeds the log and prose corpora in 256 KiB
// chunks to counters that sample one window in N, and reports how far the
// estimate is from the exact count, in percent.
func BenchmarkSampledTokenCounter(b *testing.B) {
	corpora := benchCorpora()
	for _, name := range []string{"logs", "prose"} {
		corpus := corpora[name]
		for _, every := range []int{1, 4, 16, 64, 256} {
			b.Run(fmt.Sprintf("%s/every=%d", name, every), func(b *testing.B) {
				b.SetBytes(int64(len(corpus.text)))
				var got int
				for b.Loop() {
					c := NewSampled(every)
					writeChunks(c, corpus.text)
					got = c.Count()
				}
				b.ReportMetric(100*float64(got-corpus.tokens)/float64(corpus.tokens), "err%")
			})
		}
	}
}

// BenchmarkScanBaseline is what passing the chunks on costs without any
// counting: a copy and a newline search, as a floor for the others.
func BenchmarkScanBaseline(b *testing.B) {
	text := []byte(logCorpus(16<<20, 20))
	buf := make([]byte, benchChunk)
	b.SetBytes(int64(len(text)))
	lines := 0
	for b.Loop() {
		for rest := text; len(rest) > 0; {
			n := copy(buf, rest)
			lines += bytes.Count(buf[:n], []byte{'\n'})
			rest = rest[n:]
		}
	}
	_ = lines
}

// fuzzSeeds start both fuzz targets: line breaks and spaces of every
// kind, contractions, digits, letters outside ASCII, DEL and invalid UTF-8.
var fuzzSeeds = []string{
	"hello world\nnext line\n",
	"a.\n\nB  c\t d\r\nE\v\n F",
	"x \n  y\n\n\nz 's 't 'LL 'Re",
	"12345 678\n9 abc",
	"über  Ärger\n日本 語\u00a0x\u2028y\u3000z\n\u0085a",
	"}\n  {\"a\": 1}\n\t- b\n-c\x7f",
	"\xff\n\xfe a \xe3\x81 b\n",
}

// FuzzTokenCuts checks that cutting a text where Counter may cut it
// never changes its count.
func FuzzTokenCuts(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 512 {
			return
		}
		b := []byte(text)
		whole := Count(text)
		for k := 1; k < len(b); k++ {
			line, space := lineCut(b, k), spaceCut(b, k)
			if !line && !space {
				continue
			}
			if got := Count(text[:k]) + Count(text[k:]); got != whole {
				t.Fatalf("cut at %d (line %v, space %v) of %q: %d tokens, whole %d", k, line, space, text, got, whole)
			}
		}
	})
}
