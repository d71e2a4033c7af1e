// Package hits writes search hits as pipeline search prints them. It is
// apart from package render because search links SQLite (app/appsearch),
// which only the full build (pipeline-temporal) has.
package hits

import (
	"fmt"
	"io"
	"strings"

	"github.com/pipeline-dev/pipeline/app/appsearch"
	"github.com/pipeline-dev/pipeline/engine/search"
	"github.com/pipeline-dev/pipeline/internal/termsafe"
	"github.com/pipeline-dev/pipeline/internal/termview"
)

// Write writes each hit as a heading (session, where, kind and line)
// and its snippet, indented. On a terminal with colour the matches are
// bold, elsewhere between « and ».
func Write(w io.Writer, query string, hits []appsearch.Hit) {
	if len(hits) == 0 {
		fmt.Fprintf(w, "no hits for %s\n", termsafe.Line(query))
		return
	}
	open, close := appsearch.MatchOpen, appsearch.MatchClose
	tty := termsafe.IsTerminal(w)
	if tty && termview.ColourWanted() {
		open, close = "\x1b[1;33m", "\x1b[0m"
	}
	for _, h := range hits {
		fmt.Fprintf(w, "%s  %s\n", h.Session, termsafe.Line(place(h)))
		fmt.Fprintf(w, "    %s\n", marked(h, open, close, tty))
	}
}

// place says where a hit is: "design · attempt 1 · agent · transcript
// line 12", "design · note (human 1)", "working-set decisions #3".
func place(h appsearch.Hit) string {
	var parts []string
	if h.Phase != "" {
		parts = append(parts, h.Phase)
	}
	switch h.Kind {
	case search.KindTranscript, search.KindPrompt:
		parts = append(parts, fmt.Sprintf("attempt %d", h.Attempt), h.Step, fmt.Sprintf("%s line %d", h.Kind, h.Line))
		if h.Turn > 0 {
			parts = append(parts, fmt.Sprintf("turn %d", h.Turn))
		}
		if h.Call > 0 {
			parts = append(parts, fmt.Sprintf("call %d (%s)", h.Call, h.Tool))
		}
	case search.KindNote:
		what := "note (" + h.Section
		if h.Item > 0 {
			what += fmt.Sprintf(" %d", h.Item)
		}
		parts = append(parts, what+")")
	default:
		what := h.Kind + " " + h.Section
		if h.Item > 0 {
			what += fmt.Sprintf(" #%d", h.Item)
		}
		parts = append(parts, what)
	}
	return strings.Join(parts, " · ")
}

// marked is the snippet with its matches marked, each piece of it
// made safe for a terminal when it goes to one (the markers are ours).
func marked(h appsearch.Hit, open, close string, tty bool) string {
	safe := func(s string) string {
		if tty {
			return termsafe.Line(s)
		}
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range h.Marks {
		b.WriteString(safe(h.Snippet[last:m[0]]))
		b.WriteString(open + safe(h.Snippet[m[0]:m[1]]) + close)
		last = m[1]
	}
	b.WriteString(safe(h.Snippet[last:]))
	return b.String()
}
