package render

import "text/tabwriter"

import "bytes"

import "fmt"

import "strings"

import "github.com/pipeline-dev/pipeline/internal/termview"

import "io"

import "github.com/pipeline-dev/pipeline/engine/watch"

// WatchStopped says what stopping the watch did: the sessions it
// paused, or that none was running.
func WatchStopped(e *watch.InterruptedError) string {
	if e == nil || len(e.Paused) == 0 {
		return "no session was running, so none was paused"
	}
	const shown = 5
	ids := e.Paused[:min(len(e.Paused), shown)]
	list := strings.Join(ids, ", ")
	if len(e.Paused) > shown {
		list += fmt.Sprintf(" and %d more", len(e.Paused)-shown)
	}
	if len(e.Paused) == 1 {
		return "paused session " + list + ", which was running (pipeline watch or pipeline resume continues it)"
	}
	return fmt.Sprintf("paused %d sessions that were running: %s (pipeline watch or pipeline resume continues them)", len(e.Paused), list)
}

// WatchEvent is an event as a line of text.
func WatchEvent(e watch.Event) string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Change != "" && e.Event == watch.EventChanged {
			fmt.Fprintf(&b, " changed (%s)", e.Change)
		}
		b.WriteString(": ")
	} else if e.Change != "" && e.Event != watch.EventChanged {
		b.WriteString(e.Change + ": ")
	}
	if e.Session != "" {
		fmt.Fprintf(&b, "session %s ", e.Session)
	}
	switch e.Event {
	case watch.EventChanged:
		return strings.TrimSuffix(b.String(), ": ")
	case watch.EventResumed:
		b.WriteString("resumed")
		if e.Reason != "" {
			b.WriteString(" (it was paused: " + e.Reason + ")")
		}
		return b.String()
	case watch.EventReady:
		return "watching: " + e.Reason
	case watch.EventFollowed:
		return b.String() + "(" + e.Status + ") is watched from now on"
	case watch.EventInvalid:
		return strings.TrimSpace(b.String() + "invalid, not applied:\n" + e.Reason)
	}
	b.WriteString(e.Event)
	if e.Reason != "" {
		b.WriteString(": " + e.Reason)
	}
	return b.String()
}

// Indent puts prefix before every line of text but the empty ones.
func Indent(text, prefix string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}

// WatchTable prints the watched sessions, for a terminal.
func WatchTable(w io.Writer, list []watch.Watched, text termview.ScreenText) {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  SESSION\tSPEC\tSTATUS\tREASON")
	for _, s := range list {
		status := s.Status
		if s.Queued {
			status = "queued"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", text.Line(s.ID), text.Line(OrDash(s.Spec)), text.Line(status), text.Line(OrDash(s.Reason)))
	}
	tw.Flush()
	w.Write(b.Bytes())
}

// ShortID is the random tail of a session id, enough to tell the
// sessions of one watch apart.
func ShortID(id string) string {
	if i := strings.LastIndexByte(id, '-'); i >= 0 {
		return id[i+1:]
	}
	return id
}
