package search

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/internal/transcript"
)

func TestLineText(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`plain text`, `plain text`},
		{"tab\there\x1b[31m", "tab here [31m"},
		{`{"type":"text","text":"hello"}`, `hello`},
		{`{"type":"stream_event","event":{"delta":{"type":"text_delta","text":"hel"}}}`, ``},
		{`{"type":"assistant","message":{"id":"m","role":"assistant","model":"sonnet","content":[{"type":"thinking","thinking":"hmm"},{"type":"tool_use","id":"t","name":"Bash","input":{"command":"go test"}}]}}`, `Bash go test`},
		{`{"a":{"b":["x","y",{"c":"z"}]},"n":12.5e3,"t":true,"u":null}`, `x y z`},
		{`  ["a", "b\n\"c\""]  `, `a b "c"`},
		{`{"k":"\u00e9\ud83d\ude00\/"}`, `é😀/`},
		{`{"empty":"","k":"v"}`, `v`},
		{`{not json`, `{not json`},
		{`{"k":"v"} trailing`, `{"k":"v"} trailing`},
		{`{"k" "v"}`, `{"k" "v"}`},
		{`{"k":"v"]`, `{"k":"v"]`},
		{`{"k":"\x"}`, `{"k":"\x"}`},
		{`[1, 2, 3]`, ``},
		{`{"key with \" quote":"value"}`, `value`},
	} {
		var x extractor
		if got := string(x.appendLineText(nil, []byte(c.line))); got != c.want {
			t.Errorf("%q: %q, want %q", c.line, got, c.want)
		}
	}
}

// The indexed text of a line is one line, without the highlight
// markers, and holds a JSON line's string values (but those of the
// format's own keys, and nothing of a line that says nothing).
func FuzzLineText(f *testing.F) {
	for _, seed := range []string{`{"type":"text","text":"hi"}`, `["a\nb"]`, "plain\x01\x02", `{"a":[{"b":"c"}]}`, `{"\u0001":"\u0002"}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if strings.Contains(line, "\n") {
			return
		}
		var x extractor
		got := x.appendLineText(nil, []byte(line))
		if bytes.ContainsAny(got, "\n\x01\x02") {
			t.Fatalf("%q gives %q", line, got)
		}
		if transcript.Silent([]byte(line)) {
			if len(got) != 0 {
				t.Fatalf("%q, a line that says nothing, gives %q", line, got)
			}
			return
		}
		var v any
		if json.Unmarshal([]byte(line), &v) == nil {
			if _, isObject := v.(map[string]any); isObject || isArray(v) {
				for _, s := range stringsOf(v) {
					if s = strings.TrimSpace(string(appendPlain(nil, []byte(s)))); s != "" && !bytes.Contains(got, []byte(strings.Fields(s)[0])) {
						t.Fatalf("%q gives %q, without %q", line, got, s)
					}
				}
			}
		}
	})
}

func isArray(v any) bool { _, ok := v.([]any); return ok }

func stringsOf(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, stringsOf(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for k, e := range v {
			if _, isString := e.(string); isString && skippedKeys[k] {
				delete(v, k)
			}
		}
		for _, e := range v {
			out = append(out, stringsOf(e)...)
		}
		return out
	}
	return nil
}

func TestSnippet(t *testing.T) {
	long := strings.Repeat("word ", 60) + "\x01needle\x02 " + strings.Repeat("tail ", 60)
	got, marks := snippet(long, 80)
	if len(marks) != 1 || got[marks[0][0]:marks[0][1]] != "needle" {
		t.Fatalf("%q %v", got, marks)
	}
	if !strings.HasPrefix(got, "…") || !strings.HasSuffix(got, "…") || len(got) > 80+2*len("…") {
		t.Errorf("not cut to a window: %q", got)
	}
	got, marks = snippet("  a   \x01b\x02   c  ", 80)
	if got != "a b c" || len(marks) != 1 || marks[0] != [2]int{2, 3} {
		t.Errorf("%q %v", got, marks)
	}
	// A window never cuts a character in two.
	got, _ = snippet(strings.Repeat("é", 100)+"\x01x\x02"+strings.Repeat("é", 100), 41)
	if !utf8Valid(got) {
		t.Errorf("invalid UTF-8: %q", got)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func TestIdentifiersAreNotIndexed(t *testing.T) {
	var x extractor
	line := `{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","session_id":"9f0c1e2a-4b3d-4c5e-8f7a-0123456789ab","text":"kept words_with_underscores2 ok","name":"golang-migrate-v4"}`
	if got := string(x.appendLineText(nil, []byte(line))); got != "kept words_with_underscores2 ok golang-migrate-v4" {
		t.Errorf("%q", got)
	}
}

func TestIdentifier(t *testing.T) {
	for s, want := range map[string]bool{
		"msg_01XFDUDYJgAACzvnptvVoYEL": true, "toolu_01A09q90qw90lq917835lq9": true,
		"9f0c1e2a-4b3d-4c5e-8f7a-0123456789ab": true, "3f786850e387550fdab836ed7e6dc881de23001b": true,
		"golang-migrate-v4": false, "words_with_underscores2": false, "internationalization": false,
		"TestIncrementalIndexing2": false, "a sentence with 1234567890abc in it": false,
	} {
		if got := identifier([]byte(s)); got != want {
			t.Errorf("%s: %v", s, got)
		}
	}
}
