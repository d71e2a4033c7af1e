package app

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/transcript"
)

// LogsRequest asks for a session's transcripts, phase by phase, attempt
// by attempt: all of them, or of one phase; with Prompts each agent
// step's prompt before its transcript; with Follow what the steps write
// until the session stops running.
type LogsRequest struct {
	Pipeline
	Session string `json:"session,omitempty"`
	Phase   string `json:"phase,omitempty"`
	Prompts bool   `json:"prompts,omitempty"`
	Follow  bool   `json:"follow,omitempty"`
	// Raw passes the transcripts as the steps wrote them; else each is
	// rendered as a conversation (Verbose: the model's thinking too).
	Raw     bool `json:"raw,omitempty"`
	Verbose bool `json:"verbose,omitempty"`
}

// LogChunk is a piece of a transcript or a prompt read: its file,
// relative to the session's transcripts folder (phase/1-step.log), and
// the bytes past what was read of it before.
type LogChunk struct {
	File   string
	Prompt bool
	Text   []byte
	// First: the first bytes read of this file, or the first since
	// another file's.
	First bool
	// Items are what Text says, rendered: set unless the request was Raw.
	Items []transcript.Item
}

// Logs reads a session's transcripts and passes each piece read to emit,
// as the store keeps them (redacted when they were written). It reads: no
// lock, nothing written.
func Logs(ctx context.Context, req LogsRequest, emit func(LogChunk) error) error {
	f, err := req.FindSession(req.Session)
	if err != nil {
		return err
	}
	defer f.Store.Close()
	defer f.Close()
	order := map[string]int{}
	for i, p := range f.Plan.Phases {
		order[p.Name] = i
	}
	if _, ok := order[req.Phase]; req.Phase != "" && !ok {
		return Usagef("--phase %q is not a phase of %s (%s)%s", req.Phase, f.X.Meta.File, session.PhaseNames(f.Plan), session.PhaseHint(f.Plan, req.Phase))
	}
	follow := req.Follow && f.Running()
	var rendered *logRenderer
	if !req.Raw {
		rendered = newLogRenderer(f.Plan, transcript.Options{Verbose: req.Verbose}, emit)
		emit = func(c LogChunk) error { return rendered.chunk(c, !follow) }
	}
	r := &logReader{root: filepath.Join(f.X.Dir, "transcripts"), phase: req.Phase, order: order, prompts: req.Prompts,
		offsets: map[string]int64{}, emit: emit}
	if err := r.catchUp(); err != nil || !follow {
		return err
	}
	err = r.follow(ctx, f.Running)
	if rendered != nil && err == nil {
		err = rendered.flush()
	}
	return err
}

// logReader reads transcripts from where it last stopped in each.
type logReader struct {
	root, phase string
	order       map[string]int
	prompts     bool
	offsets     map[string]int64
	last        string
	emit        func(LogChunk) error
}

func (r *logReader) catchUp() error {
	for _, p := range store.OrderedStepFiles(r.root, r.phase, r.order, r.prompts) {
		if err := r.read(p); err != nil {
			return err
		}
	}
	return nil
}

// read passes on what path has beyond what was read of it.
func (r *logReader) read(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(r.offsets[path], io.SeekStart); err != nil {
		return err
	}
	text, err := io.ReadAll(f)
	if err != nil || len(text) == 0 {
		return err
	}
	r.offsets[path] += int64(len(text))
	rel, _ := filepath.Rel(r.root, path)
	first := r.last != path
	r.last = path
	return r.emit(LogChunk{File: rel, Prompt: filepath.Ext(path) == store.PromptExt, Text: text, First: first})
}

// follow reads new output as fsnotify reports writes, until running says
// the session stopped or ctx is done.
func (r *logReader) follow(ctx context.Context, running func() bool) error {
	w, err := watchTranscripts(r.root)
	if err != nil {
		return err
	}
	defer w.Close()
	// What was written before the watch began (a folder made since the
	// catch-up, with its file) is read now.
	if err := r.catchUp(); err != nil {
		return err
	}
	check := time.NewTicker(500 * time.Millisecond)
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-w.Events:
			made := w.folderMade(ev)
			if made || strings.HasSuffix(ev.Name, ".log") || (r.prompts && strings.HasSuffix(ev.Name, store.PromptExt)) {
				if err := r.catchUp(); err != nil {
					return err
				}
			}
		case err := <-w.Errors:
			return err
		case <-check.C:
			// The runner's end is not a file event: look at its lock.
			if !running() {
				return r.catchUp()
			}
		}
	}
}

// ReadLogs passes each transcript (and with prompts each prompt) below
// root, a session's transcripts folder, to emit: of one phase, or of all
// when phase is "", in phase order (order), then attempt, then step.
func ReadLogs(root, phase string, order map[string]int, prompts bool, emit func(LogChunk) error) error {
	r := &logReader{root: root, phase: phase, order: order, prompts: prompts, offsets: map[string]int64{}, emit: emit}
	return r.catchUp()
}
