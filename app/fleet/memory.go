//go:build temporal

package fleet

import (
	"context"
	"time"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
)

// WorkingSet is a fleet session's working set, from its workflow's state,
// with the project's facts this checkout keeps.
func (b *Backend) WorkingSet(ctx context.Context, req app.MemoryRequest) (*app.WorkingSetResponse, error) {
	id, _, err := b.Session(ctx, req.Pipeline, req.Session)
	if err != nil {
		return nil, err
	}
	s, err := b.Client.State(ctx, id)
	if err != nil {
		return nil, err
	}
	var facts []engine.MemoryItem
	var factsErr error
	if st, err := req.Existing(); err == nil {
		m, err := session.LoadProjectMemory(st)
		facts, factsErr = m.Pinned, err
		st.Close()
	}
	out := app.WorkingSetOf(id, s, facts, factsErr)
	return &out, nil
}

// rememberWait bounds the wait for the workflow to take a change: it
// decides one as it comes, even while a step runs.
const rememberWait = 5 * time.Second

// Remember signals a human's change to a fleet session's working set; its
// workflow decides it as its next event, so that the next step's prompt
// has it. The change checked against the working set first, as locally.
func (b *Backend) Remember(ctx context.Context, req app.RememberRequest) (*app.RememberResponse, error) {
	id, _, err := b.Session(ctx, req.Pipeline, req.Session)
	if err != nil {
		return nil, err
	}
	before, err := b.Client.State(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := app.CheckMemoryNote(before.WorkingSet, req.Note); err != nil {
		return nil, err
	}
	if err := b.Client.Remember(ctx, id, []engine.MemoryNote{req.Note}); err != nil {
		return nil, err
	}
	out := &app.RememberResponse{Session: id, Result: app.MemoryResult(req.Note.Kind), Queued: true}
	if req.Note.Kind == engine.NoteUnpin {
		out.Queued = false // an unpin makes no item to show
		return out, nil
	}
	// The item is numbered by the workflow: asked for until it shows.
	deadline := time.Now().Add(rememberWait)
	for time.Now().Before(deadline) {
		after, err := b.Client.State(ctx, id)
		if err != nil {
			break
		}
		if item := app.ChangedItem(before.WorkingSet, after.WorkingSet, req.Note.Kind); item != nil {
			out.Item, out.Queued = item, false
			break
		}
		select {
		case <-ctx.Done():
			return out, nil
		case <-time.After(Poll / 4):
		}
	}
	return out, nil
}
