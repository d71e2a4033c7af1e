package cireport

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The JUnit report is written here as encoding/xml's Encoder, indented by
// two spaces, writes the junit types (their xml tags say how; the test
// TestJUnitXMLIsEncodingXMLs holds the two to the same bytes). Linking
// encoding/xml cost every start of pipeline, --version included, about 13
// page faults and 0.1 ms: its init builds the map of HTML's 250 entities
// (xml.HTMLEntity), which a report never reads.

// xmlHeader is xml.Header.
const xmlHeader = `<?xml version="1.0" encoding="UTF-8"?>` + "\n"

// xmlWriter writes elements indented as encoding/xml's Encoder does: each
// start tag on a line of its own, an end tag on its start tag's line when
// the element holds no element.
type xmlWriter struct {
	b          bytes.Buffer
	depth      int
	putNewline bool // a tag was written: the next one starts a line
	indentedIn bool // the last tag written was a start tag
}

// indent is encoding/xml's writeIndent: delta is 1 before a start tag,
// -1 before an end tag.
func (w *xmlWriter) indent(delta int) {
	if delta < 0 {
		w.depth--
		if w.indentedIn {
			w.indentedIn = false
			return
		}
	}
	w.indentedIn = false
	if w.putNewline {
		w.b.WriteByte('\n')
	} else {
		w.putNewline = true
	}
	w.b.WriteString(strings.Repeat("  ", w.depth))
	if delta > 0 {
		w.depth++
		w.indentedIn = true
	}
}

// start writes a start tag; attrs are name and value pairs, written in
// order, values escaped.
func (w *xmlWriter) start(name string, attrs ...string) {
	w.indent(1)
	w.b.WriteString("<" + name)
	for i := 0; i+1 < len(attrs); i += 2 {
		w.b.WriteString(" " + attrs[i] + `="`)
		w.escape(attrs[i+1])
		w.b.WriteByte('"')
	}
	w.b.WriteByte('>')
}

func (w *xmlWriter) end(name string) {
	w.indent(-1)
	w.b.WriteString("</" + name + ">")
}

// escape writes s as character data or an attribute value, as
// encoding/xml's EscapeText: markup characters, tab, line feed and
// carriage return as references, what XML cannot hold (and bytes that
// are not UTF-8) as U+FFFD.
func (w *xmlWriter) escape(s string) {
	last := 0
	for i := 0; i < len(s); {
		r, width := utf8.DecodeRuneInString(s[i:])
		i += width
		esc := ""
		switch r {
		case '"':
			esc = "&#34;"
		case '\'':
			esc = "&#39;"
		case '&':
			esc = "&amp;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '\t':
			esc = "&#x9;"
		case '\n':
			esc = "&#xA;"
		case '\r':
			esc = "&#xD;"
		default:
			if !xmlChar(r) || r == utf8.RuneError && width == 1 {
				esc = "\uFFFD"
				break
			}
			continue
		}
		w.b.WriteString(s[last:i-width] + esc)
		last = i
	}
	w.b.WriteString(s[last:])
}

// cdata writes s in a CDATA section (none when s is empty), a "]]>" in it
// split across two, as encoding/xml's ",cdata" fields.
func (w *xmlWriter) cdata(s string) {
	if s == "" {
		return
	}
	w.b.WriteString("<![CDATA[" + strings.ReplaceAll(s, "]]>", "]]]]><![CDATA[>") + "]]>")
}

// xmlChar reports whether XML 1.0 can hold r (its production Char).
func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D || r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

// junitXML is all as JUnit XML, the header first and a line break last.
func junitXML(all junitSuites) []byte {
	w := &xmlWriter{}
	w.b.WriteString(xmlHeader)
	itoa := strconv.Itoa
	w.start("testsuites", "name", all.Name, "tests", itoa(all.Tests), "failures", itoa(all.Failures),
		"errors", itoa(all.Errors), "time", all.Time)
	for _, s := range all.Suites {
		attrs := []string{"name", s.Name, "tests", itoa(s.Tests), "failures", itoa(s.Failures), "errors", itoa(s.Errors),
			"skipped", itoa(s.Skipped), "time", s.Time, "timestamp", s.Timestamp, "id", s.ID}
		if s.File != "" {
			attrs = append(attrs, "file", s.File)
		}
		w.start("testsuite", attrs...)
		w.start("properties")
		for _, p := range s.Properties {
			w.start("property", "name", p.Name, "value", p.Value)
			w.end("property")
		}
		w.end("properties")
		for _, c := range s.Cases {
			w.junitCase(c)
		}
		w.end("testsuite")
	}
	w.end("testsuites")
	w.b.WriteString("\n")
	return w.b.Bytes()
}

func (w *xmlWriter) junitCase(c junitCase) {
	w.start("testcase", "name", c.Name, "classname", c.Classname, "time", c.Time)
	for _, o := range []struct {
		name    string
		outcome *junitOutcome
	}{{"failure", c.Failure}, {"skipped", c.Skipped}} {
		if o.outcome == nil {
			continue
		}
		attrs := []string{"message", o.outcome.Message}
		if o.outcome.Type != "" {
			attrs = append(attrs, "type", o.outcome.Type)
		}
		w.start(o.name, attrs...)
		w.escape(o.outcome.Text)
		w.end(o.name)
	}
	if c.SystemOut != nil {
		w.start("system-out")
		w.cdata(c.SystemOut.Text)
		w.end("system-out")
	}
	w.end("testcase")
}
