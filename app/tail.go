package app

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// The caps of Tail.
const (
	DefaultTailLines = 100
	MaxTailLines     = 2000
	DefaultTailBytes = 16 << 10
	MaxTailBytes     = 256 << 10
)

// TailRequest asks for the end of a session's step transcripts, bounded
// by lines and bytes, optionally of one phase or attempt.
type TailRequest struct {
	Pipeline
	Session string `json:"session,omitempty"`
	Phase   string `json:"phase,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	Lines   int    `json:"lines,omitempty"`
	Bytes   int    `json:"bytes,omitempty"`
	// Raw reads the transcripts as the steps wrote them; else each is
	// rendered as a conversation (internal/transcript).
	Raw bool `json:"raw,omitempty"`
}

// TailResponse is the end of the session's transcripts, in the order they
// were written.
type TailResponse struct {
	Session     string           `json:"session"`
	Transcripts []TranscriptTail `json:"transcripts"`
	// Truncated: earlier output was left out by the caps.
	Truncated bool `json:"truncated"`
}

// TranscriptTail is the end of one step's transcript.
type TranscriptTail struct {
	Transcript string `json:"transcript" jsonschema:"phase/attempt-step.log"`
	Phase      string `json:"phase"`
	Attempt    int    `json:"attempt"`
	Step       string `json:"step"`
	Size       int64  `json:"size"`
	Text       string `json:"text"`
	Truncated  bool   `json:"truncated,omitempty"`
	// Rel is the file's path in the session's folder.
	Rel string `json:"-"`
}

// Tail reads the end of a session's transcripts. It reads: no lock,
// nothing written.
func Tail(_ context.Context, req TailRequest) (*TailResponse, error) {
	lines, limit := tailCaps(req)
	ref, err := req.FindSession(req.Session)
	if err != nil {
		return nil, err
	}
	defer ref.Store.Close()
	defer ref.Close()
	out := &TailResponse{Session: ref.ID(), Transcripts: []TranscriptTail{}}
	order := map[string]int{}
	for i, p := range ref.Plan.Phases {
		order[p.Name] = i
	}
	if _, ok := order[req.Phase]; req.Phase != "" && !ok {
		return nil, Usagef("phase %q is not a phase of session %s (its phases: %s)%s", req.Phase, out.Session, session.PhaseNames(ref.Plan), session.PhaseHint(ref.Plan, req.Phase))
	}
	files, err := ref.Store.StepFiles(out.Session)
	if err != nil {
		return nil, err
	}
	files = slices.DeleteFunc(files, func(f store.SessionFile) bool {
		return f.Prompt || (req.Phase != "" && f.Phase != req.Phase) || (req.Attempt > 0 && f.Attempt != req.Attempt)
	})
	// In the order they were written: phase by phase, attempt by attempt.
	slices.SortStableFunc(files, func(a, b store.SessionFile) int {
		if a.ModTime.Equal(b.ModTime) {
			return order[a.Phase] - order[b.Phase]
		}
		return a.ModTime.Compare(b.ModTime)
	})
	if len(files) == 0 && stepsRan(ref, req.Phase, req.Attempt) {
		// Its steps wrote nothing: a transcript is made at its first
		// byte, and an empty one has no end to show.
		r := redacted(session.NewRedactor(ref.Plan), *out)
		return &r, nil
	}
	if len(files) == 0 {
		what := "no transcripts yet"
		if req.Phase != "" || req.Attempt > 0 {
			what = "no transcript of that phase and attempt"
		}
		return nil, Usagef("session %s has %s; pipeline status shows where it stands", out.Session, what)
	}
	// From the last file back, until a cap is reached.
	for i := len(files) - 1; i >= 0 && limit > 0 && lines > 0; i-- {
		f := files[i]
		text, cut, err := tail(ref.Store, out.Session, f, limit, lines, renderer(ref.Plan, f, req.Raw))
		if err != nil {
			return nil, err
		}
		limit -= len(text)
		lines -= strings.Count(text, "\n")
		out.Transcripts = append(out.Transcripts, TranscriptTail{Transcript: strings.TrimPrefix(f.Rel, "transcripts/"), Phase: f.Phase,
			Attempt: f.Attempt, Step: f.Step, Size: f.Size, Text: text, Truncated: cut, Rel: f.Rel})
		out.Truncated = out.Truncated || cut || (i > 0 && (limit <= 0 || lines <= 0))
	}
	slices.Reverse(out.Transcripts)
	r := redacted(session.NewRedactor(ref.Plan), *out)
	return &r, nil
}

// stepsRan reports whether a step of the session started (and may have
// written nothing), in phase and attempt when they are given.
func stepsRan(ref *session.Ref, phase string, attempt int) bool {
	s, _, err := ref.State()
	if err != nil || s.Execution == 0 {
		return false
	}
	for _, ph := range s.Phases {
		if (phase == "" || ph.Name == phase) && ph.Attempts >= max(attempt, 1) {
			return true
		}
	}
	return false
}

// tailCaps are the lines and bytes a Tail reads at most.
func tailCaps(req TailRequest) (lines, limit int) {
	lines, limit = req.Lines, req.Bytes
	if lines <= 0 {
		lines = DefaultTailLines
	}
	if limit <= 0 {
		limit = DefaultTailBytes
	}
	return min(lines, MaxTailLines), min(limit, MaxTailBytes)
}

// tail reads the end of a transcript: at most limit bytes and lines
// lines, starting at a line's start when it was cut; rendered as a
// conversation unless format is Raw. The rendered end is rendered from
// a window of the file renderedWindow times larger, as a conversation
// takes far fewer bytes than the JSON it is read from.
func tail(st *store.Store, id string, f store.SessionFile, limit, lines int, render func([]byte) string) (string, bool, error) {
	window := limit
	if render != nil {
		window = min(limit*renderedWindow, maxRenderedWindow)
	}
	text, cut, err := readEnd(st, id, f, window)
	if err != nil {
		return "", false, err
	}
	if render != nil {
		text = render([]byte(text))
	}
	if len(text) > limit {
		text, cut = text[len(text)-limit:], true
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			text = text[i+1:]
		}
	}
	text, more := lastLines(text, lines)
	return text, cut || more, nil
}

const (
	renderedWindow    = 16
	maxRenderedWindow = 8 << 20
)

// readEnd reads the last n bytes of a session's file, from the start of a
// line when it cut the file.
func readEnd(st *store.Store, id string, f store.SessionFile, n int) (string, bool, error) {
	file, err := st.OpenSessionFile(id, f.Rel)
	if err != nil {
		return "", false, err
	}
	defer file.Close()
	size, err := file.Seek(0, io.SeekEnd)
	if err != nil {
		return "", false, err
	}
	from := max(0, size-int64(n))
	buf := make([]byte, size-from)
	if _, err := file.ReadAt(buf, from); err != nil && err != io.EOF {
		return "", false, fmt.Errorf("reading %s: %w", f.Rel, err)
	}
	text := string(buf)
	cut := from > 0
	if cut {
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			text = text[i+1:]
		}
	}
	return text, cut, nil
}

// lastLines keeps the last lines of text: a final line without its end
// counts as one.
func lastLines(text string, lines int) (string, bool) {
	n := 0
	for i := len(text) - 1; i >= 0; i-- {
		if text[i] == '\n' && i != len(text)-1 {
			if n++; n == lines {
				return text[i+1:], true
			}
		}
	}
	return text, false
}
