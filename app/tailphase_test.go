package app_test

import (
	"context"
	"testing"

	"github.com/pipeline-dev/pipeline/app"
)

// The tail of a phase that never ran is refused (no transcript of that
// phase and attempt), as before transcripts were made at their first
// byte: only steps that ran and wrote nothing answer an empty tail.
func TestTailOfAPhaseThatNeverRanIsRefused(t *testing.T) {
	p := newProject(t, "version: 1\nphases:\n  - name: one\n    steps: [{run: 'exit 3'}]\n  - name: two\n    steps: [{run: 'true'}]\n")
	id, _ := p.run()
	if r, err := app.Tail(context.Background(), app.TailRequest{Pipeline: p.pipeline(), Session: id, Phase: "two"}); err == nil {
		t.Errorf("tail of phase two, which never ran: no error, %+v", r)
	}
	if r, err := app.Tail(context.Background(), app.TailRequest{Pipeline: p.pipeline(), Session: id, Phase: "one"}); err != nil {
		t.Errorf("tail of phase one, which ran: %v", err)
	} else if len(r.Transcripts) != 0 {
		t.Errorf("tail of phase one, whose step wrote nothing: %+v", r.Transcripts)
	}
}
