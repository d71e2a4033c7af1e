package search

import (
	"bufio"
	"context"
	"fmt"
	"testing"

	"github.com/pipeline-dev/pipeline/internal/transcriptgen"
)

// benchProject writes n bytes of generated stream-json transcripts as
// sessions of 4 files; the 1 GB figure is make bench's (cmd/bench
// -search), these keep to a size a go test -bench run can afford.
func benchProject(b *testing.B, n int64) (*project, int64) {
	p := newProject(b)
	gen := transcriptgen.New(1)
	var written int64
	for s := 0; written < n; s++ {
		x := p.session(fmt.Sprintf("s%04d", s), "completed", nil)
		for attempt := 1; attempt <= 4 && written < n; attempt++ {
			f, err := x.CreateTranscript("build", attempt, "agent")
			if err != nil {
				b.Fatal(err)
			}
			w := bufio.NewWriter(f)
			k, err := gen.Write(w, min(4<<20, n-written), x.Meta.ID)
			if err == nil {
				err = w.Flush()
			}
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
			written += k
		}
	}
	return p, written
}

// BenchmarkIndex indexes 32 MB of transcripts into a new index.
func BenchmarkIndex(b *testing.B) {
	p, size := benchProject(b, 32<<20)
	b.SetBytes(size)
	for b.Loop() {
		b.StopTimer()
		ix := p.open()
		b.StartTimer()
		if _, err := ix.Update(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		ix.Close()
		removeIndex(b, p)
		b.StartTimer()
	}
}

// BenchmarkFind runs varied queries over an index of 32 MB.
func BenchmarkFind(b *testing.B) {
	p, _ := benchProject(b, 32<<20)
	ix := p.open()
	update(b, ix)
	words := transcriptgen.Vocabulary()
	i := 0
	for b.Loop() {
		q := Query{Text: words[(i*7919)%2000]}
		if _, err := ix.Find(context.Background(), q); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkFindPhrase runs phrases of two words over an index of 32 MB:
// each is ranked from its most recent matches and those of its words
// (rank.go).
func BenchmarkFindPhrase(b *testing.B) {
	p, _ := benchProject(b, 32<<20)
	ix := p.open()
	update(b, ix)
	gen := transcriptgen.New(99)
	var phrases []string
	for range 64 {
		phrases = append(phrases, `"`+gen.Word()+" "+gen.Word()+`"`)
	}
	i := 0
	for b.Loop() {
		if _, err := ix.Find(context.Background(), Query{Text: phrases[i%len(phrases)]}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkExtract is the cost of reading a JSON line's strings.
func BenchmarkExtract(b *testing.B) {
	gen := transcriptgen.New(3)
	var lines [][]byte
	var size int64
	for range 1000 {
		line := gen.Line(nil, "session")
		lines = append(lines, line[:len(line)-1])
		size += int64(len(line))
	}
	b.SetBytes(size)
	var x extractor
	var dst []byte
	for b.Loop() {
		for _, l := range lines {
			dst = x.appendLineText(dst[:0], l)
		}
	}
}

// BenchmarkPlace is the cost of placing lines in their turns as they are
// indexed (placer.go), per byte of transcript.
func BenchmarkPlace(b *testing.B) {
	gen := transcriptgen.New(3)
	var lines [][]byte
	var size int64
	for range 1000 {
		line := gen.Line(nil, "session")
		lines = append(lines, line[:len(line)-1])
		size += int64(len(line))
	}
	b.SetBytes(size)
	for b.Loop() {
		p := &placer{}
		for _, l := range lines {
			p.line(l)
		}
	}
}
