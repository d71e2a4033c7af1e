package redact

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// floodLine is cmd/bench's line: three 'k's in 100 bytes, none of them a
// key's.
const floodLine = "2026-11-25T09:00:00.000Z INFO worker=7 request served path=/api/v1/items status=200 took=3ms ok....\n"

// plainCands is what the passes must find in buf, found without them:
// every literal at every offset, whole in buf, at a word boundary where
// its rule asks for one; and, at each byte that starts an escape, what
// the encoded matcher finds there.
func plainCands(m *redactMatcher, buf []byte, prev byte, final bool) []redactCand {
	var cands []redactCand
	for s := range buf {
		if m.encoded != nil && slices.Contains(m.encoded.anchors, buf[s]) {
			cands = m.encoded.findAt(buf, s, final, cands)
		}
		for li := range m.lits {
			l := &m.lits[li]
			if !bytes.HasPrefix(buf[s:], l.text) {
				continue
			}
			if l.rule != nil && l.rule.boundary && (s > 0 && isASCIIAlnum(buf[s-1]) || s == 0 && isASCIIAlnum(prev)) {
				continue
			}
			cands = append(cands, redactCand{start: s, lit: int32(li)})
		}
	}
	return cands
}

// passCands is what passes find in buf, as scan gathers it.
func passCands(m *redactMatcher, passes []redactPass, buf []byte, prev byte, final bool) []redactCand {
	var cands []redactCand
	for pi := range passes {
		cands = passes[pi].find(buf, prev, final, m.encoded, cands)
	}
	return cands
}

func sortCands(c []redactCand) []redactCand {
	slices.SortFunc(c, func(a, b redactCand) int {
		if a.start != b.start {
			return a.start - b.start
		}
		if a.lit != b.lit {
			return int(a.lit - b.lit)
		}
		return a.end - b.end
	})
	return slices.Compact(c)
}

// sweepMatchers are the key patterns alone, and with secrets made of
// common letters (their passes sweep for bytes that hit often) and
// escaped forms followed.
func sweepMatchers() map[string]*redactMatcher {
	return map[string]*redactMatcher{
		"patterns": New(nil).load(),
		"secrets": New([]string{
			"MY_API_KEY=keepkeekkk-kk", "DB_PASSWORD=tasktask_k-k", "OTHER_TOKEN=a b+c%d\\e kk",
		}).load(),
	}
}

// The sweep finds exactly what a plain look at every offset finds: in
// random text dense with the passes' bytes ('k' every few bytes, as in
// "worker ... took ... ok"), with literals planted at random offsets, and
// sparse stretches between, so that the sweep changes mode back and
// forth at every alignment.
func TestSweepFindsWhatThePlainScanFinds(t *testing.T) {
	pieces := []string{
		"k", "kk", "sk", "sk-", "rk_", "sk_live_", "rk_live_", "task", "ok", "took", "worker=7 ",
		"g", "gh", "ghp_", "github_pat_", "glpat-", "A", "AKIA", "ASIA", "AIza", "x", "xox", "J", "eyJ", "B",
		"Bearer ", "-----BEGIN", "-", "_", " ", "\n", "0123456789", "%", "\\", "+", "keepkeekkk-kk",
		"tasktask_k-k", "a b+c%d\\e kk", `a\u0020b`, "a%20b", "........................................",
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	for name, m := range sweepMatchers() {
		for iter := range 2000 {
			var b strings.Builder
			for range rnd.IntN(200) {
				if rnd.IntN(8) == 0 {
					b.WriteString(strings.Repeat(".", rnd.IntN(300)))
				}
				b.WriteString(pieces[rnd.IntN(len(pieces))])
			}
			buf := []byte(b.String())
			prev := []byte{0, 'a', ' '}[iter%3]
			final := iter%2 == 0
			want := sortCands(plainCands(m, buf, prev, final))
			for alt, passes := range [][]redactPass{m.passes, m.altPasses} {
				got := sortCands(passCands(m, passes, buf, prev, final))
				if !slices.Equal(got, want) {
					t.Fatalf("%s (alt %d), iteration %d: %q\nfound %v\nwant  %v", name, alt, iter, buf, got, want)
				}
			}
		}
	}
}

// A literal planted at every offset of a dense text, and in a stream cut
// at every place around it: redacted, the stream as String has it.
func TestSweepPlantedAtEveryOffset(t *testing.T) {
	r := New([]string{"MY_API_KEY=keepkeekkk-kk"})
	secrets := []string{fakeOpenAIKey, fakeStripeKey, "keepkeekkk-kk", fakeGHPToken, fakeAWSKeyID, fakeJWT}
	dense := strings.Repeat("took ok worker=7 ", 12)
	for _, secret := range secrets {
		for off := range len(dense) + 1 {
			text := dense[:off] + " " + secret + " " + dense[off:]
			want := r.String(text)
			if strings.Contains(want, secret) {
				t.Fatalf("%q at %d: not redacted: %q", secret, off, want)
			}
			for _, cut := range []int{off - 1, off + 1, off + 3, off + len(secret)/2, off + len(secret)} {
				cut = max(0, min(cut, len(text)))
				s := r.NewStream()
				out := append(slices.Clone(s.Write([]byte(text[:cut]))), s.Write([]byte(text[cut:]))...)
				if out = append(out, s.Flush()...); string(out) != want {
					t.Fatalf("%q at %d cut at %d:\nstreamed %q\nString   %q", secret, off, cut, out, want)
				}
			}
		}
	}
}

// A chunk of the flood is swept for '-' and '_' ('k' is common in it),
// one of UUIDs for 'k' and 'g' (dashes are); short chunks for 'k' and
// 'g' always.
func TestChooseScan(t *testing.T) {
	m := New(nil).load()
	flood := bytes.Repeat([]byte(floodLine), 200)
	if got := m.chooseScan(flood); &got[0] != &m.altPasses[0] {
		t.Error("the flood is swept for 'k'")
	}
	uuids := bytes.Repeat([]byte("id=3f2c9a1e-8b7d-4e6f-a5c4-1b2d3e4f5a6b ok\n"), 500)
	if got := m.chooseScan(uuids); &got[0] != &m.passes[0] {
		t.Error("UUIDs are swept for '-'")
	}
	if got := m.chooseScan(flood[:chooseMin-1]); &got[0] != &m.passes[0] {
		t.Error("a short chunk is sampled")
	}
}

// Secrets planted in the flood at every offset of a few lines, streamed
// in chunks large enough to be swept for the alternative bytes, and cut
// across the secret: each is redacted, and the stream gives what String
// gives.
func TestSweepPlantedInAFlood(t *testing.T) {
	r := New([]string{"MY_API_KEY=keepkeekkk-kk"})
	flood := strings.Repeat(floodLine, 400)
	secrets := []string{fakeOpenAIKey, fakeStripeKey, "keepkeekkk-kk", fakeGHPToken, fakeGitLabToken, fakeGitHubPAT}
	for _, secret := range secrets {
		for off := 20000; off < 20000+3*len(floodLine); off++ {
			text := flood[:off] + " " + secret + " " + flood[off:]
			want := r.String(text)
			if strings.Contains(want, secret) || len(want) < len(flood) {
				t.Fatalf("%q at %d: not redacted, or more than it", secret, off)
			}
			for _, cut := range []int{off - 3, off + len(secret)/2} {
				s := r.NewStream()
				out := append(slices.Clone(s.Write([]byte(text[:cut]))), s.Write([]byte(text[cut:]))...)
				if out = append(out, s.Flush()...); string(out) != want {
					t.Fatalf("%q at %d cut at %d: the stream differs from String", secret, off, cut)
				}
			}
		}
	}
}

// FuzzSweep: for any text, the passes find what the plain scan finds.
func FuzzSweep(f *testing.F) {
	for _, seed := range []string{floodLine, "sk-sk-sk_live_kkkkkkkkkkkkkkkkk", "a b+c%d\\e kk", strings.Repeat("k.", 100) + "sk-"} {
		f.Add([]byte(seed), byte(0), false)
	}
	ms := sweepMatchers()
	f.Fuzz(func(t *testing.T, buf []byte, prev byte, final bool) {
		for name, m := range ms {
			want := sortCands(plainCands(m, buf, prev, final))
			for alt, passes := range [][]redactPass{m.passes, m.altPasses} {
				got := sortCands(passCands(m, passes, buf, prev, final))
				if !slices.Equal(got, want) {
					t.Fatalf("%s (alt %d): %q\nfound %v\nwant  %v", name, alt, buf, got, want)
				}
			}
		}
	})
}

// BenchmarkRedactFlood streams cmd/bench's flood through the redactor of
// the key patterns, in the executor's 256 KiB reads.
func BenchmarkRedactFlood(b *testing.B) {
	data := bytes.Repeat([]byte(floodLine), (64<<20)/len(floodLine))
	r := New(nil)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		s := r.NewStream()
		n := 0
		for p := data; len(p) > 0; {
			k := min(256<<10, len(p))
			n += len(s.Write(p[:k]))
			p = p[k:]
		}
		if n += len(s.Flush()); n != len(data) {
			b.Fatalf("redacted %d of %d bytes of clean text", n, len(data))
		}
	}
}
