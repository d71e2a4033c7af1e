package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// encodedSecrets are secret values with the characters that encoders
// treat apart: "-", "/", "+", "=", a space, quotes and backslashes, HTML's
// <>&, accents and an emoji (a surrogate pair in \u escapes).
var encodedSecrets = []struct{ name, value string }{
	{"MY_API_KEY", "abc123xyz789secret"},
	{"DEPLOY_TOKEN", "tok-9f/8e+7d=6c-5b"},
	{"DB_PASSWORD", "correct horse battery staple"},
	{"SIGNING_SECRET", "p\u00e4ss-w\u00f6rd-\u20ac-\U0001F511-k3y"},
	{"WEBHOOK_SECRET", `qu"ote\back<sl>&ash/9`},
}

// escapeJSON escapes each rune of s that keep does not keep, with JSON's
// \uXXXX (upper-case hex when upper), a surrogate pair beyond the BMP.
func escapeJSON(s string, upper bool, keep func(r rune) bool) string {
	format := "\\u%04x"
	if upper {
		format = "\\u%04X"
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case keep(r):
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, format+format, r1, r2)
		default:
			fmt.Fprintf(&b, format, r)
		}
	}
	return b.String()
}

// escapeShort writes JSON's and JavaScript's short escapes where they
// exist (\/, \", \\, \x2d for the rest of the punctuation).
func escapeShort(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '/' || c == '"' || c == '\\':
			b.WriteString(`\` + string(c))
		case c < utf8.RuneSelf && !isASCIIAlnum(c):
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// percentAll percent-encodes every byte, in lower-case hex.
func percentAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "%%%02x", s[i])
	}
	return b.String()
}

// goJSON is s as encoding/json writes it inside a string, without the
// quotes.
func goJSON(s string, html bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	enc.Encode(s)
	return strings.TrimSuffix(strings.TrimPrefix(b.String(), `"`), "\"\n")
}

// encodings are the ways a string-valued secret is written, each as a
// function of the value; the text around it is left as it is.
var encodings = []struct {
	name   string
	encode func(string) string
}{
	{"go json", func(s string) string { return goJSON(s, true) }},
	{"go json, no html escapes", func(s string) string { return goJSON(s, false) }},
	{"php json (\\/, \\u for non-ASCII)", func(s string) string {
		return strings.ReplaceAll(escapeJSON(goJSON(s, false), false, func(r rune) bool { return r < utf8.RuneSelf }), "/", `\/`)
	}},
	{"python json (\\u for non-ASCII)", func(s string) string {
		return escapeJSON(goJSON(s, false), false, func(r rune) bool { return r < utf8.RuneSelf })
	}},
	{"\\u002d for each -", func(s string) string { return strings.ReplaceAll(s, "-", `\u002d`) }},
	{"\\u for every character", func(s string) string { return escapeJSON(s, false, func(rune) bool { return false }) }},
	{"\\u for every character, upper-case hex", func(s string) string { return escapeJSON(s, true, func(rune) bool { return false }) }},
	{"\\u for every other character", func(s string) string {
		n := 0
		return escapeJSON(s, false, func(rune) bool { n++; return n%2 == 0 })
	}},
	{"short escapes and \\x", escapeShort},
	{"url query", url.QueryEscape},
	{"url path", url.PathEscape},
	{"url query, lower-case hex", func(s string) string {
		q := url.QueryEscape(s)
		var b strings.Builder
		for i := 0; i < len(q); i++ {
			if q[i] == '%' {
				b.WriteString("%" + strings.ToLower(q[i+1:i+3]))
				i += 2
				continue
			}
			b.WriteByte(q[i])
		}
		return b.String()
	}},
	{"percent-encoding of every byte", percentAll},
	{"url query in a json string", func(s string) string { return goJSON(url.QueryEscape(s), true) }},
}

// Each secret, written by each encoding, is redacted whole: the text
// around it stays as it was.
func TestRedactEncodedSecrets(t *testing.T) {
	var env []string
	for _, s := range encodedSecrets {
		env = append(env, s.name+"="+s.value)
	}
	r := New(env)
	for _, s := range encodedSecrets {
		repl := "[REDACTED:" + s.name + "]"
		for _, e := range encodings {
			encoded := e.encode(s.value)
			for _, around := range [][2]string{{"", ""}, {`{"text":"key=`, `&x=1"}`}, {"Bearer? ", "\n"}} {
				text := around[0] + encoded + around[1]
				want := around[0] + repl + around[1]
				if got := r.String(text); got != want {
					t.Errorf("%s, %s: String(%q)\n got %q\nwant %q", s.name, e.name, text, got, want)
				}
				if got := redactStreamAll(r.NewStream(), text, func() int { return 1 }); got != want {
					t.Errorf("%s, %s: streamed byte by byte %q\n got %q\nwant %q", s.name, e.name, text, got, want)
				}
			}
		}
	}
}

// base64Region returns where the characters of a base64 text of data
// whose six bits all come from data[off:off+n] are.
func base64Region(off, n int) (from, to int) {
	return (8*off + 5) / 6, 8 * (off + n) / 6
}

// A secret in base64 (standard or URL alphabet, padded or not), alone or
// at any offset inside longer data ("user:password" of a Basic
// Authorization header), loses every character that encodes its bytes
// alone; the characters shared with the bytes around it stay.
func TestRedactBase64Secrets(t *testing.T) {
	var env []string
	for _, s := range encodedSecrets {
		env = append(env, s.name+"="+s.value)
	}
	r := New(env)
	for _, s := range encodedSecrets {
		repl := "[REDACTED:" + s.name + "]"
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			for _, before := range []string{"", "u", "us", "user:", "Basic credentials for "} {
				for _, after := range []string{"", "!", "@host", "@example.com:5432"} {
					data := before + s.value + after
					encoded := enc.EncodeToString([]byte(data))
					from, to := base64Region(len(before), len(s.value))
					for _, wrap := range []func(string) string{
						func(b string) string { return "Authorization: Basic " + b + "\r\n" },
						func(b string) string { return `{"auth":"` + goJSON(b, true) + `"}` }, // "/" as it is
						func(b string) string { return `{"auth":"` + strings.ReplaceAll(b, "/", `\/`) + `"}` },
						func(b string) string { return "https://example.com/?auth=" + url.QueryEscape(b) },
					} {
						text := wrap(encoded)
						want := wrap(encoded[:from] + repl + encoded[to:])
						if got := r.String(text); !sameRedaction(got, want) {
							t.Errorf("%s in base64 of %q: String(%q)\n got %q\nwant %q", s.name, data, text, got, want)
						}
						if got := redactStreamAll(r.NewStream(), text, func() int { return 7 }); got != r.String(text) {
							t.Errorf("%s in base64 of %q: streamed %q\n got %q\nwant %q", s.name, data, text, got, r.String(text))
						}
					}
				}
			}
		}
	}
}

// sameRedaction compares a redacted text with the one expected, where the
// expected one's base64 around the replacement went through the same
// wrapping (JSON, URL escapes) as the rest: both have the replacement in
// the same place and the same text around it once the escapes of the
// characters next to it are set aside.
func sameRedaction(got, want string) bool {
	if got == want {
		return true
	}
	// url.QueryEscape of the base64 text around a replacement escapes its
	// "[", ":" and "]" in want but not in got.
	unescape := func(s string) string {
		u, err := url.QueryUnescape(s)
		if err != nil {
			return s
		}
		return u
	}
	return unescape(got) == unescape(want) && strings.Contains(got, "[REDACTED:")
}

// The encoded forms are found however the stream is cut: every split in
// two and three chunks gives what String gives (see redactSplitTexts).
// Here, many secrets and encodings mixed at random: each secret written
// with a random encoding of each of its bytes (as it is, \u, \x, a short
// escape, %XX, "+" for a space), in random text that uses the same
// escapes.
func TestRedactEscapedAnyMix(t *testing.T) {
	var env []string
	for _, s := range encodedSecrets {
		env = append(env, s.name+"="+s.value)
	}
	r := New(env)
	rnd := rand.New(rand.NewPCG(9, 9))
	escapeByte := func(c byte) string {
		switch rnd.IntN(6) {
		case 0:
			return fmt.Sprintf(`\u%04x`, c)
		case 1:
			return fmt.Sprintf(`\u%04X`, c)
		case 2:
			return fmt.Sprintf(`\x%02x`, c)
		case 3:
			return fmt.Sprintf("%%%02X", c)
		case 4:
			if c == ' ' {
				return "+"
			}
			if c == '/' || c == '"' || c == '\\' {
				return `\` + string(c)
			}
		}
		return string(c)
	}
	encodeRandom := func(s string) string {
		var b strings.Builder
		for _, rn := range s {
			if rn >= utf8.RuneSelf && rnd.IntN(2) == 0 {
				b.WriteString(escapeJSON(string(rn), rnd.IntN(2) == 0, func(rune) bool { return false }))
				continue
			}
			for _, c := range []byte(string(rn)) {
				if c >= utf8.RuneSelf {
					if rnd.IntN(2) == 0 {
						b.WriteString(fmt.Sprintf("%%%02x", c))
					} else {
						b.WriteByte(c)
					}
					continue
				}
				b.WriteString(escapeByte(c))
			}
		}
		return b.String()
	}
	noise := []string{" ", "\\n", "%20", "+", "\\\\", "100%", `\u00`, "%2", "a", "x=1&y=2", "\\", "%"}
	for iter := range 2000 {
		var text, want strings.Builder
		for range 1 + rnd.IntN(4) {
			n := noise[rnd.IntN(len(noise))]
			text.WriteString(n)
			want.WriteString(n)
			text.WriteString(" ")
			want.WriteString(" ")
			s := encodedSecrets[rnd.IntN(len(encodedSecrets))]
			text.WriteString(encodeRandom(s.value))
			want.WriteString("[REDACTED:" + s.name + "]")
			text.WriteString(" ")
			want.WriteString(" ")
		}
		got := r.String(text.String())
		if got != want.String() {
			t.Fatalf("iteration %d: String(%q)\n got %q\nwant %q", iter, text.String(), got, want.String())
		}
		maxChunk := 1 + rnd.IntN(20)
		if s := redactStreamAll(r.NewStream(), text.String(), func() int { return rnd.IntN(maxChunk + 1) }); s != got {
			t.Fatalf("iteration %d: streamed %q\n got %q\nwant %q", iter, text.String(), s, got)
		}
	}
}

// Text that only looks like escapes is left alone, and an escape cut by
// the end of a stream's chunk is held back only until the next chunk.
func TestRedactEscapesAlone(t *testing.T) {
	r := New([]string{"MY_API_KEY=abc123xyz789secret"})
	for _, text := range []string{
		`100% done, \n escaped, \u00e9t\u00e9, %41%42%43, a+b, C:\Users\abc123`,
		"abc123xyz789secre%75x", // the last byte escaped, but not the right one
		`abc123xyz789secre\u0074`[:len(`abc123xyz789secre\u0074`)-1],
		`\uD83D alone, \uDE00 alone, \uD83Dx, \u12`,
	} {
		if got := r.String(text); got != text {
			t.Errorf("String(%q) = %q", text, got)
		}
		if got := redactStreamAll(r.NewStream(), text, func() int { return 1 }); got != text {
			t.Errorf("streamed %q: got %q", text, got)
		}
	}
	s := r.NewStream()
	if got := string(s.Write([]byte("progress 45%"))); got != "progress 45" {
		t.Errorf("a trailing %% could start an escape: got %q", got)
	}
	if got := string(s.Write([]byte(" done\n"))); got != "% done\n" {
		t.Errorf("after the next chunk: got %q", got)
	}
}

func TestRedactBase64Cores(t *testing.T) {
	// At each offset, the characters of the cores are exactly those of
	// base64Region in the encoding of data holding the value.
	value := "abc123xyz789secret"
	cores := base64Cores(value)
	for off := range 3 {
		data := strings.Repeat("\xff", off) + value + "\xff"
		encoded := base64.StdEncoding.EncodeToString([]byte(data))
		from, to := base64Region(off, len(value))
		if core := encoded[from:to]; !strings.Contains(strings.Join(cores, " "), core) {
			t.Errorf("offset %d: %q is not among the cores %q", off, core, cores)
		}
	}
	if got := base64Cores("abc"); len(got) != 0 {
		t.Errorf("a 3-byte value has no core of %d characters: got %q", minBase64Len, got)
	}
}

// A long secret, every byte escaped, streamed in chunks: it is redacted
// whole, and what the stream holds back stays under the cap.
func TestRedactStreamEscapedLongSecret(t *testing.T) {
	long := randomBlob(rand.New(rand.NewPCG(5, 5)), 5000)
	r := New(nil)
	r.AddSecret(long)
	text := "before " + escapeJSON(long, false, func(rune) bool { return false }) + " after"
	want := "before " + strings.Repeat("[REDACTED]", (len(long)+secretPiece-1)/secretPiece) + " after"
	if got := r.String(text); got != want {
		t.Fatalf("String: got %.200q", got)
	}
	s := r.NewStream()
	var out []byte
	for b := []byte(text); len(b) > 0; {
		n := min(1000, len(b))
		out = append(out, s.Write(b[:n])...)
		b = b[n:]
		if len(s.hold) >= redactMaxHold {
			t.Fatalf("holding %d bytes", len(s.hold))
		}
	}
	if out = append(out, s.Flush()...); string(out) != want {
		t.Fatalf("streamed: got %.200q", out)
	}
}

// FuzzRedactEscaped: a secret written with any escape of any of its bytes,
// between any text, is redacted, by String and by a stream cut anywhere.
func FuzzRedactEscaped(f *testing.F) {
	const secret = "tok-9f/8e+7d=6c 5b\u00e9"
	r := New([]string{"DEPLOY_TOKEN=" + secret})
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6}, "x", "y", []byte{3})
	f.Add([]byte{2, 2, 2}, `\`, "%", []byte{1})
	f.Add([]byte{5}, "%2", `\u00`, []byte{0, 5})
	f.Fuzz(func(t *testing.T, choices []byte, before, after string, cuts []byte) {
		if len(choices) == 0 {
			return
		}
		var b strings.Builder
		for i, rn := range secret {
			c := byte(rn)
			if rn >= utf8.RuneSelf {
				// A character beyond ASCII: \u of it, or its UTF-8
				// bytes, percent-encoded or as they are.
				switch choices[i%len(choices)] % 3 {
				case 0:
					fmt.Fprintf(&b, `\u%04x`, rn)
				case 1:
					b.WriteString(percentAll(string(rn)))
				default:
					b.WriteRune(rn)
				}
				continue
			}
			switch choices[i%len(choices)] % 7 {
			case 0:
				fmt.Fprintf(&b, `\u%04x`, c)
			case 1:
				fmt.Fprintf(&b, `\u%04X`, c)
			case 2:
				fmt.Fprintf(&b, `\x%02x`, c)
			case 3:
				fmt.Fprintf(&b, "%%%02x", c)
			case 4:
				fmt.Fprintf(&b, "%%%02X", c)
			case 5:
				if c == ' ' {
					b.WriteByte('+')
				} else if c == '/' {
					b.WriteString(`\/`)
				} else {
					b.WriteByte(c)
				}
			default:
				b.WriteByte(c)
			}
		}
		encoded := b.String()
		text := before + " " + encoded + " " + after
		got := r.String(text)
		if strings.Contains(got, encoded) {
			t.Fatalf("String(%q) = %q: the secret is there", text, got)
		}
		if !strings.Contains(got, "[REDACTED:DEPLOY_TOKEN]") {
			t.Fatalf("String(%q) = %q: no redaction", text, got)
		}
		s := r.NewStream()
		var out []byte
		for i, rest := 0, []byte(text); len(rest) > 0; i++ {
			n := len(rest)
			if len(cuts) > 0 {
				n = max(1, min(int(cuts[i%len(cuts)]), len(rest)))
			}
			out = append(out, s.Write(rest[:n])...)
			rest = rest[n:]
			if !strings.HasPrefix(got, string(out)) {
				t.Fatalf("emitted %q, not a prefix of String's %q", out, got)
			}
		}
		if out = append(out, s.Flush()...); string(out) != got {
			t.Fatalf("streamed %q, String %q", out, got)
		}
	})
}
