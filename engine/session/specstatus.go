package session

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/atomicfile"
)

// SpecWrittenHashFile keeps ContentHash of the spec as the session last
// wrote it (its LeanSpec status): pipeline watch takes a change of the
// spec to that content for the session's own, and resumes nothing.
const SpecWrittenHashFile = "spec-written.sha256"

// followSpec moves the spec's LeanSpec status after ev was recorded: to
// in-progress when the session started, to complete when it completed
// (held at in-progress by unchecked items, unless forced). What it did,
// or why it did nothing, is recorded as a SpecStatusChanged; a spec it
// has nothing to say about (no status, already there, spec_status off)
// records nothing. A spec that cannot be written does not stop the
// session: the event says why.
func (s *Session) followSpec(ev engine.Event, before engine.Status) error {
	if s.Plan.Spec == "" || !s.Plan.SpecStatus.Value || s.state.ReplayOf != nil {
		return nil
	}
	to := ""
	switch {
	case isStart(ev) && s.state.Status == engine.StatusRunning:
		to = spec.StatusInProgress
	case s.state.Status == engine.StatusCompleted && before != engine.StatusCompleted:
		to = spec.StatusComplete
	default:
		return nil
	}
	now := time.Now()
	change, digest := s.writeSpecStatus(to, now)
	if change == nil {
		return nil
	}
	s.say("spec %s", describeChange(*change))
	moved := engine.SpecStatusChanged{At: now, Change: *change, Plan: digest}
	next, _ := engine.Decide(s.Plan, s.state, moved)
	return s.Record(moved, next)
}

func isStart(ev engine.Event) bool {
	_, ok := ev.(engine.Started)
	return ok
}

// writeSpecStatus edits the spec file and keeps the hash of what it
// wrote; nil when there is nothing to record. digest names the plan with
// the spec as written ("" when the file was not written).
func (s *Session) writeSpecStatus(to string, now time.Time) (change *engine.SpecStatusChange, digest string) {
	path := s.Plan.Spec
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	change = &engine.SpecStatusChange{Spec: s.Plan.Spec, At: now}
	content, err := os.ReadFile(path)
	if err != nil {
		change.Held = "the spec could not be read: " + err.Error()
		return change, ""
	}
	edit, err := spec.SetStatus(content, to, now, s.forceSpec)
	change.From, change.To, change.Held, change.Unchecked = edit.From, edit.To, edit.Held, edit.Unchecked
	if err != nil {
		change.Held = err.Error()
		return change, ""
	}
	if !edit.Changed() {
		if edit.Held == "" {
			return nil, ""
		}
		return change, ""
	}
	info, err := os.Stat(path)
	if err == nil {
		err = atomicfile.Write(path, info.Mode().Perm(), func(w io.Writer) error {
			_, err := w.Write(edit.Content)
			return err
		})
	}
	s.specWrites.Add(1) // even a write that failed may have replaced the file
	if err != nil {
		change.To, change.Held = change.From, "the spec could not be written: "+err.Error()
		return change, ""
	}
	if err := s.X.WriteFile(SpecWrittenHashFile, []byte(ContentHash(edit.Content))); err != nil {
		change.Held = "written, but its hash not kept (pipeline watch may take the change for a human's): " + err.Error()
	}
	if kept, _ := s.X.ReadFile(SpecAtStartHashFile); strings.TrimSpace(string(kept)) == ContentHash(content) {
		// Nobody but the session changed the spec since it started: a
		// replay takes it as it is now, its own status moves and all,
		// and does not say the spec changed.
		_ = s.saveSpecAtStart()
	}
	return change, s.Plan.DigestWithSpec(edit.Content)
}

// describeChange is the line a session says about its spec's status.
func describeChange(c engine.SpecStatusChange) string {
	switch {
	case c.Held != "" && c.From == c.To:
		return c.Spec + " stays " + c.From + ": " + c.Held
	case c.Held != "":
		return c.Spec + ": " + c.From + " → " + c.To + " (" + c.Held + ")"
	}
	return c.Spec + ": " + c.From + " → " + c.To
}
