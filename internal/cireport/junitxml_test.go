package cireport

import (
	"bytes"
	"encoding/xml"
	"math/rand/v2"
	"testing"
)

// encodingXML is the report as encoding/xml writes the junit types, as
// JUnit wrote it before junitXML.
func encodingXML(t *testing.T, all junitSuites) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	enc.Indent("", "  ")
	if err := enc.EncodeElement(all, xml.StartElement{Name: xml.Name{Local: "testsuites"}}); err != nil {
		t.Fatal(err)
	}
	b.WriteString("\n")
	return b.Bytes()
}

// junitXML writes what encoding/xml writes, byte for byte: attributes
// left out when empty where the tags say omitempty, suites without
// properties or cases, outcomes and system-out present or not, and text
// with markup, quotes, tabs, line breaks, control characters, bytes that
// are not UTF-8, U+FFFD, characters beyond the BMP and "]]>" in CDATA.
func TestJUnitXMLIsEncodingXMLs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	texts := []string{"", "plain", `a "quoted" 'word'`, "<b>&amp;</b>", "tab\there", "two\nlines\r\n", "\x00\x1b[31m\x7f",
		"\xff\xfe not UTF-8", "\ufffd", "é 😀 \U0010ffff", "]]>", "x]]>y]]>z", "]]", "\ufffe\uffff"}
	text := func() string { return texts[rng.IntN(len(texts))] + texts[rng.IntN(len(texts))] }
	outcome := func() *junitOutcome {
		if rng.IntN(3) == 0 {
			return nil
		}
		return &junitOutcome{Message: text(), Type: texts[rng.IntN(2)], Text: text()}
	}
	for i := range 500 {
		all := junitSuites{Name: text(), Tests: rng.IntN(5), Failures: rng.IntN(3), Time: "1.250"}
		for range rng.IntN(3) {
			s := junitSuite{Name: text(), Tests: rng.IntN(9), Skipped: rng.IntN(2), Time: "0.001", Timestamp: "2026-01-02T03:04:05",
				ID: text(), File: texts[rng.IntN(3)]}
			for range rng.IntN(3) {
				s.Properties = append(s.Properties, junitProperty{text(), text()})
			}
			for range rng.IntN(4) {
				c := junitCase{Name: text(), Classname: text(), Time: "2.000", Failure: outcome(), Skipped: outcome()}
				if rng.IntN(2) == 0 {
					c.SystemOut = &junitText{text()}
				}
				s.Cases = append(s.Cases, c)
			}
			all.Suites = append(all.Suites, s)
		}
		if got, want := junitXML(all), encodingXML(t, all); !bytes.Equal(got, want) {
			t.Fatalf("report %d:\n%s\nencoding/xml:\n%s", i, got, want)
		}
	}
}
