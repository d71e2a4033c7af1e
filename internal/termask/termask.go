// Package termask reads a person's answer at a terminal: one key, without
// waiting for Enter, or a line of notes (or what they write in their
// editor). pipeline run and resume ask this way at a pause.
package termask

import "os/exec"

import "strings"

import "bufio"

import "fmt"

import "golang.org/x/term"

import "os"

import "io"

// Key reads one key from the terminal on standard input, without
// waiting for Enter.
func Key() (byte, error) {
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

// Notes reads the notes for the resume: a line, or, when the line is
// empty and $EDITOR is set, what the person writes in the editor. ok is
// false when there are none (back to the question).
func Notes(w io.Writer) (string, bool) {
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
