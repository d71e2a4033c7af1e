//go:build temporal

package fleet

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine/session"
)

// LiveFile names the steps' live output in the chunks Logs emits.
const LiveFile = "live output"

// Logs passes to emit the transcripts of a session's steps where this
// machine can read them (a shared folder, or a worker here), and tells
// req.Say the workers and folders of the others; with req.Follow, then
// what the running steps print as their workers report it, until the
// session stops or ctx ends.
func (b *Backend) Logs(ctx context.Context, req app.LogsRequest, emit func(app.LogChunk) error) error {
	t, err := b.Transcripts(ctx, req.Pipeline, req.Session)
	if err != nil {
		return err
	}
	order := map[string]int{}
	for i, p := range t.Plan.Phases {
		order[p.Name] = i
	}
	if _, ok := order[req.Phase]; req.Phase != "" && !ok {
		return app.Usagef("--phase %q is not a phase of %s (%s)%s", req.Phase, t.Plan.File, session.PhaseNames(t.Plan), session.PhaseHint(t.Plan, req.Phase))
	}
	say := func(format string, args ...any) {
		if req.Say != nil {
			req.Say(format, args...)
		}
	}
	if len(t.Dirs) == 0 && !req.Follow {
		say("session %s: no step has ended yet; the transcripts of a running step are where its worker writes them", t.ID)
	}
	for _, dir := range t.Dirs {
		// The session's folder, not its transcripts/: that comes with the
		// first byte a step writes, and a worker's steps may have written
		// none.
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			say("session %s: transcripts in %s on worker %s, not on this machine: run pipeline logs there, or give the workers a shared folder (pipeline worker --state-dir)",
				t.ID, dir, strings.Join(t.Workers[dir], ", "))
			continue
		}
		if err := app.ReadLogs(filepath.Join(dir, "transcripts"), req.Phase, order, req.Prompts, emit); err != nil {
			return err
		}
	}
	if !req.Follow {
		return nil
	}
	return b.Client.FollowOutput(ctx, t.ID, &chunkWriter{emit: emit, first: true})
}

// chunkWriter passes what is written to it on as chunks of LiveFile.
type chunkWriter struct {
	emit  func(app.LogChunk) error
	first bool
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	err := w.emit(app.LogChunk{File: LiveFile, Text: append([]byte(nil), p...), First: w.first})
	w.first = false
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// Follow writes to w what the session's running steps print from now
// on, as their workers report it, until it stops running or ctx ends.
func (b *Backend) Follow(ctx context.Context, req app.FollowRequest, w io.Writer) error {
	id, _, err := b.Session(ctx, req.Pipeline, req.Session)
	if err != nil {
		return err
	}
	if req.Following != nil {
		req.Following()
	}
	return b.Client.FollowOutput(ctx, id, w)
}
