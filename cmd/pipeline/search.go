//go:build temporal

package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app/appsearch"
	"github.com/pipeline-dev/pipeline/engine/search"
	"github.com/pipeline-dev/pipeline/internal/termsafe"
)

// Markers of a match in a snippet where there is no colour: on a pipe,
// in a file, under NO_COLOR (see appsearch.MatchOpen).
const (
	matchOpen  = appsearch.MatchOpen
	matchClose = appsearch.MatchClose
)

// searchOptions are search's flags.
type searchOptions struct {
	flags        *storeFlags
	output       *outputFlag
	sessionID    string
	phase, since string
	limit        int
}

func searchCommand() *cobra.Command {
	o := &searchOptions{}
	cmd := newCommand(&cobra.Command{
		Use:     "search QUERY...",
		Short:   searchShort,
		Long:    helpText("search"),
		Example: helpText("search.example"),
		Args:    cobra.ArbitraryArgs,
	}, o.run)
	o.flags = addStoreFlags(cmd, false)
	o.output = addOutputFlag(cmd)
	cmd.Flags().StringVar(&o.sessionID, "session", "", "only this session (its id, or a unique start or end of it)")
	cmd.Flags().StringVar(&o.phase, "phase", "", "only this phase")
	cmd.Flags().StringVar(&o.since, "since", "", "only what was written since: a duration back from now (2h, 3d, 1d12h) or a date (2026-11-20, or RFC 3339)")
	cmd.Flags().IntVar(&o.limit, "limit", search.DefaultLimit, "the number of hits at most")
	cmd.RegisterFlagCompletionFunc("session", completeSessions)
	return cmd
}

func (o *searchOptions) run(cmd *cobra.Command, args []string) error {
	if err := o.output.check(); err != nil {
		return err
	}
	text := strings.Join(args, " ")
	if strings.TrimSpace(text) == "" {
		return usagef("search needs a QUERY: the words to look for, e.g. pipeline search flaky test")
	}
	if o.limit < 1 {
		return usagef("--limit must be 1 or more, not %d", o.limit)
	}
	req := appsearch.SearchRequest{Pipeline: o.flags.pipeline(sayTo(cmd)), Query: text, Session: o.sessionID, Phase: o.phase, Limit: o.limit,
		Warn: cmd.ErrOrStderr()}
	if o.since != "" {
		at, err := appsearch.ParseSince(o.since, time.Now())
		if err != nil {
			return err
		}
		req.Since = at
	}
	r, err := appsearch.Search(cmd.Context(), req)
	if err != nil {
		return err
	}
	// No hit exits 1, as grep does (a script tests for a match).
	var noHits error
	if len(r.Hits) == 0 {
		noHits = &exitStatus{code: exitFailed, printed: true}
	}
	if o.output.json() {
		return errors.Join(writeJSON(cmd.OutOrStdout(), r), noHits)
	}
	printHits(cmd.OutOrStdout(), text, r.Hits)
	return noHits
}

// printHits writes each hit as a heading (session, where, kind and line)
// and its snippet, indented. On a terminal with colour the matches are
// bold, elsewhere between « and ».
func printHits(w io.Writer, query string, hits []appsearch.Hit) {
	if len(hits) == 0 {
		fmt.Fprintf(w, "no hits for %s\n", termsafe.Line(query))
		return
	}
	open, close := matchOpen, matchClose
	tty := termsafe.IsTerminal(w)
	if tty && colourWanted() {
		open, close = "\x1b[1;33m", "\x1b[0m"
	}
	for _, h := range hits {
		fmt.Fprintf(w, "%s  %s\n", h.Session, termsafe.Line(hitPlace(h)))
		fmt.Fprintf(w, "    %s\n", markedLine(h, open, close, tty))
	}
}

// hitPlace says where a hit is: "design · attempt 1 · agent · transcript
// line 12", "design · note (human 1)", "working-set decisions #3".
func hitPlace(h appsearch.Hit) string {
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

// markedLine is the snippet with its matches marked, each piece of it
// made safe for a terminal when it goes to one (the markers are ours).
func markedLine(h appsearch.Hit, open, close string, tty bool) string {
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
