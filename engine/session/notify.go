package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/notify"
	"github.com/pipeline-dev/pipeline/internal/transcript"
)

// notify sends the plan's notifications for where the run left the
// session (events, as HookEvents names them): each webhook gets the most
// particular event it wants (needs-human over paused), the desktop the
// most particular one. A notification that cannot be sent is said, and
// changes nothing.
func (s *Session) notify(ctx context.Context, st engine.State, events []string, say func(format string, args ...any)) {
	n := s.Plan.Notify
	if len(events) == 0 || (!n.Desktop && len(n.Webhook) == 0) {
		return
	}
	redact := s.Redactor().String
	report := s.statusReportOf(st)
	lastError := s.lastErrorLine(st)
	compose := func(event string) notify.Message { return notify.Compose(event, report, lastError, redact) }
	if n.Desktop {
		err := notify.Desktop(ctx, compose(events[len(events)-1]))
		switch {
		case errors.Is(err, notify.ErrNoDesktop):
			say("pipeline: notify.desktop: %v: no desktop notification", err)
		case err != nil:
			say("pipeline: notify.desktop: %v", err)
		}
	}
	for i, w := range n.Webhook {
		event := ""
		for _, ev := range events {
			if w.Wants(ev) {
				event = ev
			}
		}
		if event == "" {
			continue
		}
		if err := notify.Post(ctx, w, compose(event), os.Getenv); err != nil {
			say("pipeline: notify.webhook[%d]: %s (the session is as it was)", i, redact(err.Error()))
		} else {
			say("notified %s (notify.webhook[%d], %s)", event, i, formatName(w.Format))
		}
	}
}

func formatName(format string) string {
	if format == "" {
		return spec.FormatJSON
	}
	return format
}

// lastErrorLine is the last line the step that failed wrote, as logs
// renders it: "" unless the session failed or the step exited non-zero
// by itself.
func (s *Session) lastErrorLine(st engine.State) string {
	if st.Phase >= len(st.Phases) || st.Phase >= len(s.Plan.Phases) {
		return ""
	}
	codes := st.Phases[st.Phase].ExitCodes
	if st.Status != engine.StatusFailed && (len(codes) == 0 || codes[len(codes)-1] <= 0) {
		return ""
	}
	root := filepath.Join(s.X.Dir, "transcripts")
	last := store.StandingTranscript(root, s.Plan.Phases[st.Phase].Name, st.Attempt, engine.StepAt(s.Plan, st))
	if last == "" {
		return ""
	}
	content, err := readEnd(last, 64<<10)
	if err != nil {
		return ""
	}
	rel, _ := filepath.Rel(root, last)
	items := transcript.Render(content, transcript.FormatIn(s.Plan, filepath.ToSlash(rel)), "")
	for i := len(items) - 1; i >= 0; i-- {
		lines := strings.Split(strings.TrimSpace(transcript.Line(items[i], transcript.Options{})), "\n")
		if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
			return l
		}
	}
	return ""
}

// readEnd reads the last n bytes of a file, from a line's start.
func readEnd(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	from := max(0, info.Size()-n)
	buf := make([]byte, info.Size()-from)
	got, _ := f.ReadAt(buf, from)
	buf = buf[:got]
	if from > 0 {
		if i := strings.IndexByte(string(buf), '\n'); i >= 0 {
			buf = buf[i+1:]
		}
	}
	return buf, nil
}
