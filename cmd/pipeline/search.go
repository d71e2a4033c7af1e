package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/engine/search"
	"github.com/pipeline-dev/pipeline/triggers"
)

// Markers of a match in a snippet where there is no colour: on a pipe,
// in a file, under NO_COLOR, and in the "marked" field of -o json. They
// are not brackets, which transcripts are full of ([CHECKPOINT], JSON,
// markdown links).
const (
	matchOpen  = "«"
	matchClose = "»"
)

func searchCommand() *cobra.Command {
	var (
		flags        *storeFlags
		output       *outputFlag
		sessionID    string
		phase, since string
		limit        int
	)
	cmd := newCommand(&cobra.Command{
		Use:   "search QUERY...",
		Short: "Search the transcripts, prompts, notes and working sets of all sessions",
		Long: `Search everything the sessions of the store kept: the steps' transcripts
and prompts, the human notes and phase summaries, the working sets. Hits
come best first (BM25), each with its session, phase, attempt, step, kind,
the line of its file, and a snippet with the matches marked.

The words of QUERY must all match, in any order; "quoted words" match as a
phrase (quote the quotes for the shell); a word ending in * matches as a
prefix. Nothing else in a query is syntax.

The index lives in the store's folder (search/index.db, SQLite FTS5) and
is brought up to date by each search: only what is new is read. It is a
cache: deleted or corrupt, it is built again from the sessions.

Exit status, as grep's: 0 when something was found, 1 when nothing was,
2 for a usage or store error.`,
		Example: `  pipeline search flaky test
  pipeline search '"connection refused"' --phase implementation
  pipeline search migrat* --since 3d -o json
  pipeline search timeout --session 20261125-093000123-a1b2c3 --since 2026-11-20`,
		Args: cobra.ArbitraryArgs,
	}, func(cmd *cobra.Command, args []string) error {
		if err := output.check(); err != nil {
			return err
		}
		text := strings.Join(args, " ")
		if strings.TrimSpace(text) == "" {
			return usagef("search needs a QUERY: the words to look for, e.g. pipeline search flaky test")
		}
		if _, err := search.MatchExpression(text); errors.Is(err, search.ErrNoWords) {
			return usagef("the query %q has no words to search for: give letters or digits", text)
		}
		if limit < 1 {
			return usagef("--limit must be 1 or more, not %d", limit)
		}
		q := search.Query{Text: text, Phase: phase, Limit: limit}
		if since != "" {
			at, err := parseSince(since, time.Now())
			if err != nil {
				return err
			}
			q.Since = at
		}
		st, err := flags.existing()
		if err != nil {
			return err
		}
		defer st.Close()
		if sessionID != "" {
			meta, err := st.Find(sessionID)
			if err != nil {
				return usagef("--session: %v (pipeline sessions lists them)", err)
			}
			q.Session = meta.ID
		}
		r, err := search.Search(cmd.Context(), st, q, search.Options{Warn: cmd.ErrOrStderr()})
		if err != nil {
			return storeWriteFailed(err)
		}
		// No hit exits 1, as grep does (a script tests for a match).
		var noHits error
		if len(r.Hits) == 0 {
			noHits = &exitStatus{code: exitFailed, printed: true}
		}
		if output.json() {
			return errors.Join(writeJSON(cmd.OutOrStdout(), searchJSON(text, r)), noHits)
		}
		printHits(cmd.OutOrStdout(), text, r.Hits)
		return noHits
	})
	flags = addStoreFlags(cmd, false)
	output = addOutputFlag(cmd)
	cmd.Flags().StringVar(&sessionID, "session", "", "only this session (its id, or the start of it)")
	cmd.Flags().StringVar(&phase, "phase", "", "only this phase")
	cmd.Flags().StringVar(&since, "since", "", "only what was written since: a duration back from now (2h, 3d, 1d12h) or a date (2026-11-20, or RFC 3339)")
	cmd.Flags().IntVar(&limit, "limit", search.DefaultLimit, "the number of hits at most")
	cmd.RegisterFlagCompletionFunc("session", completeSessions)
	return cmd
}

// parseSince reads --since: a duration back from now, or a date (local
// midnight), or a time in RFC 3339.
func parseSince(text string, now time.Time) (time.Time, error) {
	if d, err := triggers.ParseDuration(text); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	if at, err := time.ParseInLocation("2006-01-02", text, time.Local); err == nil {
		return at, nil
	}
	if at, err := time.Parse(time.RFC3339, text); err == nil {
		return at, nil
	}
	return time.Time{}, usagef("--since %q is neither a duration (2h, 3d, 1d12h) nor a date (2026-11-20, or 2026-11-20T15:04:05Z)", text)
}

// hitJSON is a hit under -o json: the snippet also with its matches
// between « and ».
type hitJSON struct {
	search.Hit
	Marked string `json:"marked"`
}

type searchReport struct {
	Query   string       `json:"query"`
	Hits    []hitJSON    `json:"hits"`
	Indexed search.Stats `json:"indexed"`
	Rebuilt string       `json:"rebuilt,omitempty"`
}

func searchJSON(query string, r search.Result) searchReport {
	out := searchReport{Query: query, Hits: []hitJSON{}, Indexed: r.Indexed, Rebuilt: r.Rebuilt}
	for _, h := range r.Hits {
		out.Hits = append(out.Hits, hitJSON{Hit: h, Marked: h.Marked(matchOpen, matchClose)})
	}
	return out
}

// printHits writes each hit as a heading (session, where, kind and line)
// and its snippet, indented. On a terminal with colour the matches are
// bold, elsewhere between « and ».
func printHits(w io.Writer, query string, hits []search.Hit) {
	if len(hits) == 0 {
		fmt.Fprintf(w, "no hits for %s\n", terminalLine(query))
		return
	}
	open, close := matchOpen, matchClose
	tty := isTerminal(w)
	if tty && colourWanted() {
		open, close = "\x1b[1;33m", "\x1b[0m"
	}
	for _, h := range hits {
		fmt.Fprintf(w, "%s  %s\n", h.Session, terminalLine(hitPlace(h)))
		fmt.Fprintf(w, "    %s\n", markedLine(h, open, close, tty))
	}
}

// hitPlace says where a hit is: "design · attempt 1 · agent · transcript
// line 12", "design · note (human 1)", "working-set decisions #3".
func hitPlace(h search.Hit) string {
	var parts []string
	if h.Phase != "" {
		parts = append(parts, h.Phase)
	}
	switch h.Kind {
	case search.KindTranscript, search.KindPrompt:
		parts = append(parts, fmt.Sprintf("attempt %d", h.Attempt), h.Step, fmt.Sprintf("%s line %d", h.Kind, h.Line))
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
func markedLine(h search.Hit, open, close string, tty bool) string {
	safe := func(s string) string {
		if tty {
			return terminalLine(s)
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
