package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"golang.org/x/term"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/internal/cireport"
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
		key, err := readKey()
		fmt.Fprintln(w)
		if err != nil {
			return false, "", nil // no key to read: left paused
		}
		switch key {
		case 'r', 'R':
			return true, "", nil
		case 'n', 'N':
			notes, ok := readNotes(w)
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

// readKey reads one key from the terminal on standard input, without
// waiting for Enter.
func readKey() (byte, error) {
	fd := int(os.Stdin.Fd())
	old, err := term.MakeRaw(fd)
	if err != nil {
		return 0, err
	}
	defer term.Restore(fd, old)
	var b [1]byte
	if _, err := os.Stdin.Read(b[:]); err != nil {
		return 0, err
	}
	return b[0], nil
}

// readNotes reads the notes for the resume: a line, or, when the line is
// empty and $EDITOR is set, what the person writes in the editor. ok is
// false when there are none (back to the question).
func readNotes(w io.Writer) (string, bool) {
	editor := os.Getenv("VISUAL")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	hint := ""
	if editor != "" {
		hint = " (Enter on an empty line opens " + editor + ")"
	}
	fmt.Fprintf(w, "notes for the agent%s: ", hint)
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if line = strings.TrimSpace(line); line != "" {
		return line, true
	}
	if err != nil || editor == "" {
		return "", false
	}
	notes, err := editNotes(editor)
	if err != nil {
		fmt.Fprintf(w, "pipeline: %s: %v\n", editor, err)
		return "", false
	}
	return notes, notes != ""
}

// editNotes opens a file in the person's editor and returns what they
// wrote in it.
func editNotes(editor string) (string, error) {
	f, err := os.CreateTemp("", "pipeline-notes-*.md")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	f.Close()
	cmd := exec.Command("sh", "-c", editor+` "$1"`, "sh", f.Name())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", err
	}
	content, err := os.ReadFile(f.Name())
	return strings.TrimSpace(string(content)), err
}

// showChanges shows the files changed since the phase started and the
// spec's own diff, from the checkpoint git took as the phase began.
func (l *launch) showChanges(w io.Writer, id string) {
	r, err := app.Changes(context.Background(), app.ChangesRequest{Pipeline: *l.pipeline, Session: id})
	if err != nil {
		fmt.Fprintf(w, "%s\n", err)
		return
	}
	fmt.Fprintf(w, "files changed since phase %s began (checkpoint %.12s): %d\n", r.Phase, r.Since, len(r.Files))
	for _, f := range r.Files {
		fmt.Fprintf(w, "  %s\n", f)
	}
	switch {
	case r.Spec == "":
	case r.SpecDiff == "":
		fmt.Fprintf(w, "the spec %s is unchanged\n", r.Spec)
	default:
		io.WriteString(w, r.SpecDiff)
	}
}

// showLastLines shows the end of the step's transcript, as logs renders it.
func (l *launch) showLastLines(w io.Writer, id string) {
	r, err := app.Tail(context.Background(), app.TailRequest{Pipeline: *l.pipeline, Session: id, Lines: 20})
	if err != nil {
		fmt.Fprintf(w, "%s\n", err)
		return
	}
	for _, t := range r.Transcripts {
		fmt.Fprintf(w, "==> %s <==\n%s", t.Transcript, t.Text)
	}
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
