package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

// outputFlag is the --output flag shared by every command that prints data.
type outputFlag struct {
	format  string
	formats []string
}

// addOutputFlag adds --output: text, json, and the command's own extra
// formats (status: markdown).
func addOutputFlag(cmd *cobra.Command, extra ...string) *outputFlag {
	o := &outputFlag{format: "text", formats: append([]string{"text", "json"}, extra...)}
	cmd.Flags().StringVarP(&o.format, "output", "o", "text", "output format: "+o.names())
	cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(o.formats, cobra.ShellCompDirectiveNoFileComp))
	return o
}

// names lists the formats: "text or json", "text, json or markdown".
func (o *outputFlag) names() string {
	last := len(o.formats) - 1
	return strings.Join(o.formats[:last], ", ") + " or " + o.formats[last]
}

func (o *outputFlag) check() error {
	if !slices.Contains(o.formats, o.format) {
		return usagef("--output must be %s, not %q", o.names(), o.format)
	}
	return nil
}

func (o *outputFlag) json() bool { return o.format == "json" }

func writeJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(escapeWorkflowCommands(escapeJSONControls(b.Bytes())))
	return err
}

// writeJSONLine writes v as one line of JSON, for streams of objects.
func writeJSONLine(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(escapeWorkflowCommands(escapeJSONControls(b.Bytes())))
	return err
}

// escapeWorkflowCommands writes "##[" in JSON as "#\u0023[", which reads
// the same: the GitHub Actions runner takes "##[name]" anywhere in a line
// of a job's log as a workflow command, and JSON printed there (run -o
// json, status -o json) may quote a step or a note. It can only be inside
// a string, where the escape means the same. ("::name::" counts only at
// the start of a line, where JSON has a quote, a brace or spaces.)
func escapeWorkflowCommands(b []byte) []byte {
	if !bytes.Contains(b, []byte("##[")) {
		return b
	}
	return bytes.ReplaceAll(b, []byte("##["), []byte(`#\u0023[`))
}

// escapeJSONControls escapes the control characters that encoding/json
// leaves as they are, DEL and the C1 controls (U+0080–U+009F, which some
// terminals obey), so that JSON output is safe on a terminal too. They
// can only be inside strings, where \u escapes mean the same.
func escapeJSONControls(b []byte) []byte {
	if bytes.IndexByte(b, 0x7f) < 0 && bytes.IndexByte(b, 0xc2) < 0 {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == 0x7f:
			out = append(out, `\u007f`...)
		case c == 0xc2 && i+1 < len(b) && b[i+1] >= 0x80 && b[i+1] <= 0x9f:
			out = fmt.Appendf(out, `\u%04x`, b[i+1])
			i++
		default:
			out = append(out, c)
		}
	}
	return out
}

// ---- Text for a terminal ----
//
// Text that came from outside — step output, checkpoint and pause notes,
// phase and step names, file contents in errors — never reaches a
// terminal raw: an escape sequence in it could recolour or clear the
// screen, move the cursor over lines already written, set the window
// title, write the clipboard (OSC 52) or make a link. Every place where
// such text leaves for the terminal (the views, status, sessions, error
// messages) passes it through terminalFilter:
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
//   - line feeds and tabs stay in text; in a one-line field (a table
//     cell, a step's header, a paused: line) a line break is shown as \n
//     and a tab as a space.
//
// The views' own colours and cursor moves are added after the text is
// filtered. JSON output escapes control characters itself (writeJSON
// escapes DEL and C1 too). Transcript files keep the bytes as the step
// wrote them: they are a record.

// terminalFilter removes escape sequences from a stream of text and shows
// other control characters; a sequence split across chunks is still
// removed whole. The zero value is ready.
type terminalFilter struct {
	state termState
	out   []byte
}

type termState uint8

const (
	termText        termState = iota
	termEsc                   // after ESC
	termEscIntermed           // ESC and intermediate bytes (ESC ( B)
	termCSI                   // ESC [ and parameters
	termString                // an OSC, DCS, SOS, PM or APC string
	termStringEsc             // ESC inside a string: ST if "\" follows
	termCR                    // a carriage return, line feed or not
	termC2                    // 0xC2, the first byte of a C1 control or not
)

// termSpecial marks the bytes that text cannot pass as they are.
var termSpecial = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = c != '\t' && c != '\n'
	}
	t[0x7f] = true
	t[0xc2] = true
	return t
}()

// Filter returns chunk made safe. The result is chunk itself when it
// needs no change; otherwise a buffer of f, valid until the next call.
func (f *terminalFilter) Filter(chunk []byte) []byte {
	i := 0
	if f.state == termText {
		i = nextTermSpecial(chunk)
		if i == len(chunk) {
			return chunk
		}
	}
	f.out = append(f.out[:0], chunk[:i]...)
	for i < len(chunk) {
		if f.state == termText {
			k := i + nextTermSpecial(chunk[i:])
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

// End ends the text: a lone ESC, a carriage return or a 0xC2 held at the
// end is shown; a sequence cut short is dropped. The result is valid
// until the next call.
func (f *terminalFilter) End() []byte {
	f.out = f.out[:0]
	switch f.state {
	case termEsc:
		f.out = append(f.out, "^["...)
	case termCR:
		f.out = append(f.out, "^M"...)
	case termC2:
		f.out = append(f.out, "\ufffd"...)
	}
	f.state = termText
	return f.out
}

// step takes c in the current state and says whether it is consumed;
// when not, the state has changed and c is taken again.
func (f *terminalFilter) step(c byte) bool {
	switch f.state {
	case termText:
		switch {
		case c == 0x1b:
			f.state = termEsc
		case c == '\r':
			f.state = termCR
		case c == 0xc2:
			f.state = termC2
		case termSpecial[c]:
			f.out = append(f.out, '^', c^0x40) // ^@ … ^_, ^?
		default:
			f.out = append(f.out, c)
		}
		return true
	case termEsc:
		switch {
		case c == '[':
			f.state = termCSI
		case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
			f.state = termString
		case c >= 0x20 && c <= 0x2f:
			f.state = termEscIntermed
		case c >= 0x30 && c <= 0x7e:
			f.state = termText // a two-byte sequence, dropped
		default:
			f.out = append(f.out, "^["...)
			f.state = termText
			return false
		}
		return true
	case termEscIntermed, termCSI:
		switch {
		case c >= 0x20 && c <= 0x2f, f.state == termCSI && c >= 0x30 && c <= 0x3f:
			return true
		case c >= 0x30 && c <= 0x7e:
			f.state = termText // the final byte
			return true
		}
		f.state = termText // cut short: the rest is text
		return false
	case termString:
		switch c {
		case 0x07:
			f.state = termText
		case 0x1b:
			f.state = termStringEsc
		case '\n':
			f.state = termText
			return false
		}
		return true
	case termStringEsc:
		if c == '\\' {
			f.state = termText
			return true
		}
		f.state = termEsc
		return false
	case termCR:
		f.state = termText
		if c == '\n' {
			f.out = append(f.out, '\n')
			return true
		}
		f.out = append(f.out, "^M"...)
		return false
	default: // termC2
		f.state = termText
		switch {
		case c >= 0x80 && c <= 0x9f:
			f.out = fmt.Appendf(f.out, `\u%04x`, c)
			return true
		case c >= 0xa0 && c <= 0xbf:
			f.out = append(f.out, 0xc2, c) // U+00A0 … U+00BF
			return true
		}
		// Not UTF-8. Shown as U+FFFD: a lone 0xC2 let through could
		// make a C1 control with a byte that follows a removed sequence.
		f.out = append(f.out, "\ufffd"...)
		return false
	}
}

// nextTermSpecial returns the index of the first byte of b that text
// cannot pass as it is, or len(b): a control character, or a 0xC2 that
// does not start a character of U+00A0 … U+00BF ("·", "°", a no-break
// space).
func nextTermSpecial(b []byte) int {
	for i := 0; ; {
		k := i + nextTermByte(b[i:])
		if k+1 < len(b) && b[k] == 0xc2 && b[k+1] >= 0xa0 && b[k+1] <= 0xbf {
			i = k + 2
			continue
		}
		return k
	}
}

// nextTermByte returns the index of the first byte of b that is marked in
// termSpecial, or len(b). It looks at eight bytes at a time: the output of
// a step goes through it.
func nextTermByte(b []byte) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := load64(b[i : i+8])
		// A byte below 0x20 (line feeds and tabs too), 0x7f or 0xc2: a
		// byte below n sets its high bit in (x - n) &^ x; a zero byte
		// of x ^ c is a byte equal to c.
		del, c2 := x^(ones*0x7f), x^(ones*0xc2)
		hits := (x-ones*0x20)&^x | (del-ones)&^del | (c2-ones)&^c2
		if hits&highs == 0 {
			continue
		}
		for j := i; j < i+8; j++ {
			if termSpecial[b[j]] {
				return j
			}
		}
	}
	for ; i < len(b); i++ {
		if termSpecial[b[i]] {
			return i
		}
	}
	return i
}

// load64 reads 8 bytes, little-endian; the compiler makes it one load.
// (encoding/binary would do, but its name is the e2e tests' binary's.)
func load64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// terminalText is s made safe for a terminal, line feeds and tabs kept.
func terminalText(s string) string {
	b := []byte(s)
	if nextTermSpecial(b) == len(b) {
		return s
	}
	var f terminalFilter
	out := string(f.Filter(b))
	return out + string(f.End())
}

// terminalLine is s made safe as one line: a line break shows as \n, a
// tab as a space.
func terminalLine(s string) string {
	s = terminalText(s)
	if strings.ContainsAny(s, "\n\t") {
		s = strings.NewReplacer("\n", `\n`, "\t", " ").Replace(s)
	}
	return s
}

// terminalWriter filters what is written through it (see
// terminalFilter). A sequence cut short at the end is dropped.
type terminalWriter struct {
	w io.Writer
	f terminalFilter
}

func (t *terminalWriter) Write(p []byte) (int, error) {
	if _, err := t.w.Write(t.f.Filter(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// isTerminal tells whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// terminalOutput is w filtered for a terminal when it is one (see
// terminalFilter), and w as it is otherwise: what logs prints to a file or
// a pipe (logs > file, logs | less -R) keeps the transcripts' bytes, which
// are a record.
func terminalOutput(w io.Writer) io.Writer {
	if isTerminal(w) {
		return &terminalWriter{w: w}
	}
	return w
}

// printWarnings prints what a plan runs with but likely not as meant, each
// at its place, on w (standard error).
func printWarnings(w io.Writer, warnings []spec.Problem) {
	for _, p := range warnings {
		text := fmt.Sprintf("%s: warning: %s\n", p.Position, p.Message)
		if p.Hint != "" {
			text += "  hint: " + p.Hint + "\n"
		}
		printError(w, text)
	}
}
