package mcpserver

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// The caps of the logs tool and of a transcript resource.
const (
	defaultLines = 100
	maxLines     = 2000
	defaultBytes = 16 << 10
	maxBytes     = 256 << 10
)

// readSession finds the session of t (by id, or the latest of its
// pipeline and spec) for reading, as status does: no lock, nothing
// written.
func (s *Server) readSession(t Target) (*session.Ref, error) {
	var f found
	var err error
	if t.Session != "" {
		f, err = s.root.session(t.Session, t.File)
	} else {
		// The latest of the pipeline: the sessions tool would list it.
		var path, dir string
		if path, err = s.root.file("file", t.File, "phases.yaml"); err != nil {
			return nil, err
		}
		if dir, err = s.root.storeDir(path); err != nil {
			return nil, err
		}
		st, err := store.OpenExisting(dir)
		if err != nil {
			return nil, fmt.Errorf("no sessions of %s yet: call run to start one", s.root.rel(path))
		}
		defer st.Close()
		list, _ := st.List()
		for _, sum := range list {
			if st.Abs(sum.File) == path && (t.Spec == "" || strings.HasSuffix(sum.Spec, t.Spec)) {
				return s.readSession(Target{Session: sum.ID, Pipeline: Pipeline{File: t.File}})
			}
		}
		return nil, fmt.Errorf("no session of %s yet: call run to start one", s.root.rel(path))
	}
	if err != nil {
		return nil, err
	}
	st, err := store.OpenExisting(f.store)
	if err != nil {
		return nil, err
	}
	ref, err := session.Find(st, session.Options{ID: f.meta.ID})
	if err != nil {
		st.Close()
		return nil, err
	}
	return ref, nil
}

func (s *Server) logs(ctx context.Context, _ *mcp.CallToolRequest, in LogsInput) (*mcp.CallToolResult, LogsOutput, error) {
	var out LogsOutput
	lines, limit := in.Lines, in.Bytes
	if lines <= 0 {
		lines = defaultLines
	}
	if limit <= 0 {
		limit = defaultBytes
	}
	lines, limit = min(lines, maxLines), min(limit, maxBytes)
	ref, err := s.readSession(in.Target)
	if err != nil {
		return nil, out, err
	}
	defer ref.Store.Close()
	defer ref.Close()
	out.Session = ref.ID()
	order := map[string]int{}
	for i, p := range ref.Plan.Phases {
		order[p.Name] = i
	}
	if in.Phase != "" {
		if _, ok := order[in.Phase]; !ok {
			return nil, out, fmt.Errorf("phase %q is not a phase of session %s (its phases: %s)", in.Phase, out.Session, session.PhaseNames(ref.Plan))
		}
	}
	files, err := ref.Store.StepFiles(out.Session)
	if err != nil {
		return nil, out, err
	}
	files = slices.DeleteFunc(files, func(f store.SessionFile) bool {
		return f.Prompt || (in.Phase != "" && f.Phase != in.Phase) || (in.Attempt > 0 && f.Attempt != in.Attempt)
	})
	// In the order they were written: phase by phase, attempt by attempt.
	slices.SortStableFunc(files, func(a, b store.SessionFile) int {
		if a.ModTime.Equal(b.ModTime) {
			return order[a.Phase] - order[b.Phase]
		}
		return a.ModTime.Compare(b.ModTime)
	})
	if len(files) == 0 {
		what := "no transcripts yet"
		if in.Phase != "" || in.Attempt > 0 {
			what = "no transcript of that phase and attempt"
		}
		return nil, out, fmt.Errorf("session %s has %s; call status to see where it stands", out.Session, what)
	}
	// From the last file back, until a cap is reached.
	for i := len(files) - 1; i >= 0 && limit > 0 && lines > 0; i-- {
		f := files[i]
		text, cut, err := tail(ref.Store, out.Session, f, limit, lines)
		if err != nil {
			return nil, out, err
		}
		limit -= len(text)
		lines -= strings.Count(text, "\n")
		out.Transcripts = append(out.Transcripts, TranscriptTail{Transcript: strings.TrimPrefix(f.Rel, "transcripts/"), Phase: f.Phase,
			Attempt: f.Attempt, Step: f.Step, Size: f.Size, Text: text, Truncated: cut, Resource: transcriptURI(out.Session, f)})
		out.Truncated = out.Truncated || cut || (i > 0 && (limit <= 0 || lines <= 0))
	}
	slices.Reverse(out.Transcripts)
	return nil, out, nil
}

// tail reads the end of a transcript: at most limit bytes and lines
// lines, starting at a line's start when it was cut.
func tail(st *store.Store, id string, f store.SessionFile, limit, lines int) (string, bool, error) {
	file, err := st.OpenSessionFile(id, f.Rel)
	if err != nil {
		return "", false, err
	}
	defer file.Close()
	size, err := file.Seek(0, io.SeekEnd)
	if err != nil {
		return "", false, err
	}
	from := max(0, size-int64(limit))
	buf := make([]byte, size-from)
	if _, err := file.ReadAt(buf, from); err != nil && err != io.EOF {
		return "", false, err
	}
	text := string(buf)
	cut := from > 0
	if cut {
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			text = text[i+1:]
		}
	}
	// The last lines: a final line without its end counts as one.
	n := 0
	for i := len(text) - 1; i >= 0; i-- {
		if text[i] == '\n' && i != len(text)-1 {
			if n++; n == lines {
				return text[i+1:], true, nil
			}
		}
	}
	return text, cut, nil
}

func transcriptURI(id string, f store.SessionFile) string {
	return sessionURI(id) + "/" + f.Rel
}
