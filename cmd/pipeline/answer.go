package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/internal/cireport"
	"github.com/pipeline-dev/pipeline/internal/render"
	"github.com/pipeline-dev/pipeline/internal/termask"
	"github.com/pipeline-dev/pipeline/internal/termsafe"
)

// answerMenu is what a pause on a terminal asks.
const answerMenu = "  [r] resume now  [n] resume with notes  [d] what changed  [l] the step's last lines  [q] leave it paused: "

// asks tells whether a pause is answered where it happens: run or resume
// on a terminal (standard input and the output), not in CI, not with
// --no-prompt, not printing JSON, not watching after it.
func (l *launch) asks() bool {
	if l.noPrompt || l.pipeline == nil || l.ci.Enabled || cireport.Mode(nil, os.Getenv).Enabled || l.json || l.watchNext {
		return false
	}
	out, ok := l.cmd.ErrOrStderr().(*os.File)
	return ok && term.IsTerminal(int(os.Stdin.Fd())) && term.IsTerminal(int(out.Fd()))
}

// answer asks what to do with the session that paused, one key at a time,
// until the person resumes it (with notes) or leaves it paused: resume is
// then true. d and l show what changed and the step's last lines, then ask
// again.
func (l *launch) answer(id string, s engine.State) (resume bool, notes string, err error) {
	// What it shows comes from outside (a note, the spec, a transcript):
	// made safe for the terminal.
	w := termsafe.Output(l.cmd.ErrOrStderr())
	if s.Pause != nil {
		fmt.Fprintf(w, "\nsession %s paused: %s\n", id, local.DescribeFiring(*s.Pause))
	}
	for {
		fmt.Fprint(w, answerMenu)
		key, err := termask.Key()
		fmt.Fprintln(w)
		if err != nil {
			return false, "", nil // no key to read: left paused
		}
		switch key {
		case 'r', 'R':
			return true, "", nil
		case 'n', 'N':
			notes, ok := termask.Notes(w)
			if ok {
				return true, notes, nil
			}
		case 'd', 'D':
			l.showChanges(w, id)
		case 'l', 'L':
			l.showLastLines(w, id)
		case 'q', 'Q', '\r', '\n', 3, 4, 27:
			return false, "", nil
		}
	}
}

// showChanges shows the files changed since the phase started and the
// spec's own diff, from the checkpoint git took as the phase began.
func (l *launch) showChanges(w io.Writer, id string) {
	r, err := app.Changes(context.Background(), app.ChangesRequest{Pipeline: *l.pipeline, Session: id})
	if err != nil {
		fmt.Fprintf(w, "%s\n", err)
		return
	}
	render.Changes(w, r)
}

// showLastLines shows the end of the step's transcript, as logs renders it.
func (l *launch) showLastLines(w io.Writer, id string) {
	r, err := app.Tail(context.Background(), app.TailRequest{Pipeline: *l.pipeline, Session: id, Lines: 20})
	if err != nil {
		fmt.Fprintf(w, "%s\n", err)
		return
	}
	render.Tail(w, r)
}

// resumeHere resumes the session that paused in this process, as
// pipeline resume would, with the person's notes.
func (l *launch) resumeHere(id, notes string) error {
	opened, err := app.OpenResume(context.Background(), app.ResumeRequest{Pipeline: *l.pipeline, Session: id, Notes: notes,
		NoHumanGates: l.noHumanGates})
	if err != nil {
		return err
	}
	fmt.Fprintf(l.cmd.ErrOrStderr(), "resuming session %s\n", id)
	return l.run(opened.Session, opened.Events...)
}
