package termsafe

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// Text is s made safe for a terminal, line feeds and tabs kept.
func Text(s string) string {
	b := []byte(s)
	if nextSpecial(b) == len(b) {
		return s
	}
	var f Filter
	out := string(f.Filter(b))
	return out + string(f.End())
}

// Line is s made safe as one line: a line break shows as \n, a tab as a
// space.
func Line(s string) string {
	s = Text(s)
	if strings.ContainsAny(s, "\n\t") {
		s = strings.NewReplacer("\n", `\n`, "\t", " ").Replace(s)
	}
	return s
}

// Writer filters what is written through it (see Filter). A sequence cut
// short at the end is dropped.
type Writer struct {
	w io.Writer
	f Filter
}

// NewWriter filters what it writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p made safe; it reports all of p written when that is.
func (t *Writer) Write(p []byte) (int, error) {
	if _, err := t.w.Write(t.f.Filter(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// IsTerminal tells whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Output is w filtered for a terminal when it is one (see Filter), and w
// as it is otherwise: what logs prints to a file or a pipe (logs > file,
// logs | less -R) keeps the transcripts' bytes, which are a record.
func Output(w io.Writer) io.Writer {
	if IsTerminal(w) {
		return NewWriter(w)
	}
	return w
}

// EscapeJSON escapes in JSON text what a terminal or a CI log would obey
// and encoding/json leaves as it is: DEL and the C1 controls, and the
// GitHub runner's "##[". They can only be inside strings, where the
// escapes mean the same.
func EscapeJSON(b []byte) []byte {
	return escapeWorkflowCommands(escapeJSONControls(b))
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
// terminals obey), so that JSON output is safe on a terminal too.
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
