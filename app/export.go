package app

import (
	"context"
	"io"
	"time"

	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/atomicfile"
)

// ExportRequest names a session (by id, or the latest of the pipeline
// and spec) and where to write it.
type ExportRequest struct {
	Pipeline
	Session string `json:"session,omitempty"`
	// Output is the file to write; "": pipeline-session-ID.tar.gz in the
	// current folder.
	Output string `json:"output,omitempty"`
	// To, when set, gets the archive in place of a file (the command
	// line's standard output).
	To io.Writer `json:"-"`
}

// ExportResponse is what export wrote.
type ExportResponse struct {
	Session     string `json:"session"`
	Status      string `json:"status"`
	PauseReason string `json:"pause_reason,omitempty"`
	Files       int    `json:"files"`
	Bytes       int64  `json:"bytes"`
	// Output is the file written; "" when written to To.
	Output string `json:"output,omitempty"`
}

// Export writes a session to one gzip'd tar (session.Export: its files,
// redacted again, after a manifest), to resume it elsewhere with Import.
// A running session is refused. A file is written whole or not at all.
func Export(_ context.Context, req ExportRequest) (*ExportResponse, error) {
	ref, err := req.FindSession(req.Session)
	if err != nil {
		return nil, err
	}
	defer ref.Store.Close()
	defer ref.Close()
	if err := errFleetReadOnly(ref, "export"); err != nil {
		return nil, err
	}
	var m store.Manifest
	path := ""
	if req.To != nil {
		m, err = session.Export(ref, req.To, time.Now())
	} else {
		if path = req.Output; path == "" {
			path = "pipeline-session-" + ref.ID() + ".tar.gz"
		}
		err = atomicfile.Write(path, 0o600, func(w io.Writer) error {
			var err error
			m, err = session.Export(ref, w, time.Now())
			return err
		})
	}
	if err != nil {
		return nil, err
	}
	out := ExportResponse{Session: m.Session, Status: m.Summary.Status, PauseReason: m.Summary.PauseReason, Files: len(m.Files), Output: path}
	for _, f := range m.Files {
		out.Bytes += f.Size
	}
	out = redacted(environmentRedactor(), out)
	return &out, nil
}
