package termsafe

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/creack/pty"
)

// cases are texts with what the terminal is to get of them.
var cases = []struct{ name, in, want string }{
	{"plain", "hello, wörld · 10€\n\tindented\n", "hello, wörld · 10€\n\tindented\n"},
	{"colours", "\x1b[1;31merror\x1b[0m: failed\n", "error: failed\n"},
	{"cursor moves and clear", "a\x1b[2J\x1b[H\x1b[3Ab\x1b[?25l", "ab"},
	{"title, OSC with BEL", "\x1b]0;pwned\x07text", "text"},
	{"hyperlink, OSC with ST", "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\", "click"},
	{"clipboard write", "\x1b]52;c;c2VjcmV0\x07after", "after"},
	{"unterminated OSC ends at the line", "\x1b]0;never ends\nnext line\n", "\nnext line\n"},
	{"DCS, PM, APC, SOS", "a\x1bPq#0;2;0;0;0\x1b\\b\x1b^pm\x1b\\c\x1b_apc\x07d\x1bXsos\x1b\\e", "abcde"},
	{"reset and two-byte sequences", "\x1bcreset \x1b7saved\x1b8 \x1bM", "reset saved "},
	{"charset sequence", "\x1b(Bascii \x1b#8", "ascii "},
	{"lone ESC", "esc \x1b\x01 end\x1b", "esc ^[^A end^["},
	{"ESC ESC", "\x1b\x1b[31mred", "^[red"},
	{"CSI cut by a control", "\x1b[31\x07m", "^Gm"},
	{"bell, backspace, DEL, NUL", "ding\x07 over\x08\x08 del\x7f nul\x00", "ding^G over^H^H del^? nul^@"},
	{"CRLF", "one\r\ntwo\r\n", "one\ntwo\n"},
	{"lone CR overwrites no more", "rm -rf /\rls -l\n", "rm -rf /^Mls -l\n"},
	{"C1 controls", "a\u009b31mred\u009d0;t\u0007 \u0085", "a\\u009b31mred\\u009d0;t^G \\u0085"},
	{"0xC2 of a character stays", "\u00a0\u00b7\u00e9\u00c2", "\u00a0\u00b7\u00e9\u00c2"},
	{"invalid UTF-8 as it is, but 0xC2", "\xff\xfe \xc2x \xc2", "\xff\xfe \ufffdx \ufffd"},
	{"0xC2 and a C1 byte apart", "\xc2\x1b[0m\x9b", "\ufffd\x9b"},
}

func filterAll(chunks ...string) string {
	var f Filter
	var out []byte
	for _, c := range chunks {
		out = append(out, f.Filter([]byte(c))...)
	}
	return string(append(out, f.End()...))
}

func TestFilter(t *testing.T) {
	for _, tc := range cases {
		if got := filterAll(tc.in); got != tc.want {
			t.Errorf("%s: %q\n got %q\nwant %q", tc.name, tc.in, got, tc.want)
		}
		if got := Text(tc.in); got != tc.want {
			t.Errorf("%s: Text(%q) = %q", tc.name, tc.in, got)
		}
		// Cut in two and three anywhere: a sequence split across
		// chunks is removed whole.
		for i := 0; i <= len(tc.in); i++ {
			for j := i; j <= len(tc.in); j++ {
				if got := filterAll(tc.in[:i], tc.in[i:j], tc.in[j:]); got != tc.want {
					t.Fatalf("%s: cut at %d and %d of %q\n got %q\nwant %q", tc.name, i, j, tc.in, got, tc.want)
				}
			}
		}
	}
	// A chunk that needs nothing is passed as it is.
	var f Filter
	chunk := []byte("plain output line\n")
	if got := f.Filter(chunk); &got[0] != &chunk[0] || !Unchanged(chunk, got) {
		t.Error("a clean chunk was copied")
	}
	if got := f.Filter([]byte("a\x07")); Unchanged([]byte("a\x07"), got) {
		t.Error("a changed chunk is said to be unchanged")
	}
}

// Random texts of escape sequences, controls and text, cut at random: no
// ESC, no C1 control, no control other than a line feed or a tab comes
// out, and the cuts do not change the result.
func TestFilterRandom(t *testing.T) {
	pieces := []string{"\x1b", "[", "]", "31", ";", "m", "0", "\x07", "\\", "P", "text", " ", "\n", "\t", "\r", "\x08",
		"\xc2", "\x9b", "\x85", "é", "·", "\x7f", "(", "B", "#", "c", "_", "^", "X", "\x00"}
	unsafe := regexp.MustCompile("[\x00-\x08\x0b-\x1f\x7f]|\u0080|\u0085|\u009b|\u009d")
	rnd := rand.New(rand.NewPCG(4, 4))
	for iter := range 5000 {
		var b strings.Builder
		for range rnd.IntN(40) {
			b.WriteString(pieces[rnd.IntN(len(pieces))])
		}
		text := b.String()
		want := filterAll(text)
		if loc := unsafe.FindStringIndex(want); loc != nil {
			t.Fatalf("iteration %d: %q gave %q, with %q at %d", iter, text, want, want[loc[0]:loc[1]], loc[0])
		}
		var chunks []string
		for rest := text; len(rest) > 0; {
			n := min(len(rest), rnd.IntN(6))
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		if got := filterAll(chunks...); got != want {
			t.Fatalf("iteration %d: %q in chunks %q\n got %q\nwant %q", iter, text, chunks, got, want)
		}
	}
}

// nextSpecial looks at eight bytes at a time: it finds what a byte by
// byte look finds, wherever the byte is.
func TestNextSpecial(t *testing.T) {
	rnd := rand.New(rand.NewPCG(6, 6))
	for range 20000 {
		b := make([]byte, rnd.IntN(40))
		for i := range b {
			b[i] = "abc \n\txyz0é€·"[rnd.IntN(17)]
		}
		if len(b) > 0 && rnd.IntN(2) == 0 {
			b[rnd.IntN(len(b))] = byte(rnd.IntN(256))
		}
		want := len(b)
		for i := 0; i < len(b); i++ {
			if i+1 < len(b) && b[i] == 0xc2 && b[i+1] >= 0xa0 && b[i+1] <= 0xbf {
				i++ // "·": a character, not a C1 control
				continue
			}
			if special[b[i]] {
				want = i
				break
			}
		}
		if got := nextSpecial(b); got != want {
			t.Fatalf("nextSpecial(%q) = %d, want %d", b, got, want)
		}
	}
}

func TestLine(t *testing.T) {
	if got, want := Line("fix the tests\nthen\tthe docs\x1b[2J"), `fix the tests\nthen the docs`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestEscapeJSONEscapesDELAndC1AndWorkflowCommands(t *testing.T) {
	value := "a\x7fb\u009bc\u0085d\x1b[31m é· ##[error]x"
	b, err := json.Marshal(map[string]string{"note": value})
	if err != nil {
		t.Fatal(err)
	}
	b = EscapeJSON(b)
	if strings.ContainsAny(string(b), "\x7f\u009b\u0085\x1b") || strings.Contains(string(b), "##[") {
		t.Errorf("raw controls or a workflow command in %q", b)
	}
	var back map[string]string
	if err := json.Unmarshal(b, &back); err != nil || back["note"] != value {
		t.Errorf("JSON %q reads back as %q (%v)", b, back["note"], err)
	}
	clean := []byte(`{"note":"plain text"}`)
	if got := EscapeJSON(clean); &got[0] != &clean[0] {
		t.Error("JSON that needs nothing was copied")
	}
}

// Output filters what it writes to a terminal, and only there: a file or
// a pipe gets the bytes as they are.
func TestOutputOnlyOnATerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	w := Output(tty)
	if _, ok := w.(*Writer); !ok {
		t.Fatalf("on a terminal: %T", w)
	}
	var b bytes.Buffer
	w = NewWriter(&b)
	for _, chunk := range []string{"red \x1b[3", "1mtext\x1b", "]0;title\x07 done\n"} {
		if n, err := w.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write: %d, %v", n, err)
		}
	}
	if b.String() != "red text done\n" {
		t.Errorf("got %q", b.String())
	}
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if w := Output(file); w != io.Writer(file) {
		t.Errorf("a file is filtered: %T", w)
	}
}

// BenchmarkTerminalFilter: the plain view filters every byte of a step's output;
// here log lines of 100 bytes, and lines with a tab and a "·".
func BenchmarkTerminalFilter(b *testing.B) {
	for _, format := range []string{
		"2026-11-26T04:26:15.%03dZ INFO [worker] job %08x done, 45%% of disk used, 12 keys cached, status ok\n",
		"2026-11-26T04:26:15.%03dZ INFO [worker] job %08x done · 45%% of disk, 12 keys\tok\n",
	} {
		var data bytes.Buffer
		for data.Len() < 16<<20 {
			fmt.Fprintf(&data, format, data.Len()%1000, data.Len())
		}
		name := "log"
		if strings.Contains(format, "\t") {
			name = "tab-and-middle-dot"
		}
		b.Run(name, func(b *testing.B) {
			var f Filter
			b.SetBytes(int64(data.Len()))
			for b.Loop() {
				for p := data.Bytes(); len(p) > 0; {
					k := min(256<<10, len(p))
					if out := f.Filter(p[:k]); !Unchanged(p[:k], out) {
						b.Fatal("the text was changed")
					}
					p = p[k:]
				}
			}
		})
	}
}

// specialMask marks exactly the bytes that special marks, whatever their
// neighbours: every pair of byte values, at every place in a word.
func TestSpecialMaskIsExact(t *testing.T) {
	for pair := range 1 << 16 {
		a, b := byte(pair), byte(pair>>8)
		for at := range 7 {
			var word [8]byte
			for i := range word {
				word[i] = 'x'
			}
			word[at], word[at+1] = a, b
			got := specialMask(binary.LittleEndian.Uint64(word[:]))
			for i, c := range word {
				if marked := got>>(8*i+7)&1 == 1; marked != special[c] {
					t.Fatalf("byte %d of %q: marked %v, special %v", i, word, marked, special[c])
				}
			}
		}
	}
}
