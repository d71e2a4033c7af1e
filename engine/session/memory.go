package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// ProjectMemory is the store's memory.json: the facts pinned for every
// session of the project (pipeline memory pin --project). Each goes into
// the resume context of every session of the store.
type ProjectMemory struct {
	Version int                 `json:"version"`
	Pinned  []engine.MemoryItem `json:"pinned_facts"`
	LastID  int                 `json:"last_id"`
}

// projectMemoryVersion is the format of memory.json.
const projectMemoryVersion = 1

// LoadProjectMemory reads the project's memory; a store without one has
// an empty memory. A file that is not the memory (hand-edited into bad
// JSON, another version) is an error naming it: nothing is written over
// it.
func LoadProjectMemory(st *store.Store) (ProjectMemory, error) {
	content, err := st.ReadProjectFile(store.ProjectMemoryName)
	if err != nil {
		return ProjectMemory{}, storeRefused(st, err)
	}
	return parseProjectMemory(st, content)
}

func parseProjectMemory(st *store.Store, content []byte) (ProjectMemory, error) {
	m := ProjectMemory{Version: projectMemoryVersion}
	if len(strings.TrimSpace(string(content))) == 0 {
		return m, nil
	}
	path := st.Root + string(os.PathSeparator) + store.ProjectMemoryName
	if err := json.Unmarshal(content, &m); err != nil {
		return m, refused("%s is not a project memory (%v): fix it or move it away; pipeline memory pin --project writes a new one", path, err)
	}
	if m.Version != projectMemoryVersion {
		return m, refused("%s has format version %d; this pipeline reads version %d", path, m.Version, projectMemoryVersion)
	}
	return m, nil
}

// PinProject pins a fact for every session of the project. The text is
// redacted as everything the store keeps is (plan gives the secrets to
// look for; nil looks for the environment's and the known patterns).
func PinProject(st *store.Store, plan *spec.Plan, text string, now time.Time) (engine.MemoryItem, error) {
	var pinned engine.MemoryItem
	text = redactWith(plan, text)
	err := st.UpdateProjectFile(store.ProjectMemoryName, func(old []byte) ([]byte, error) {
		m, err := parseProjectMemory(st, old)
		if err != nil {
			return nil, err
		}
		var w engine.WorkingSet
		w.Pinned, w.LastID = m.Pinned, m.LastID
		w.Remember(engine.MemoryNote{Kind: engine.NoteFact, Text: text}, "", engine.SourceHuman, now)
		if w.LastID == m.LastID {
			return nil, refused("the project already has that fact pinned")
		}
		m.Pinned, m.LastID = w.Pinned, w.LastID
		pinned = w.Pinned[len(w.Pinned)-1]
		return json.MarshalIndent(m, "", "  ")
	})
	return pinned, err
}

// UnpinProject removes a project fact by its number (as pipeline memory
// --project lists it).
func UnpinProject(st *store.Store, id int) (engine.MemoryItem, error) {
	var removed engine.MemoryItem
	err := st.UpdateProjectFile(store.ProjectMemoryName, func(old []byte) ([]byte, error) {
		m, err := parseProjectMemory(st, old)
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(m.Pinned, func(item engine.MemoryItem) bool { return item.ID == id })
		if i < 0 {
			return nil, refused("the project has no pinned fact %d (pipeline memory --project lists them)", id)
		}
		removed = m.Pinned[i]
		m.Pinned = slices.Delete(m.Pinned, i, i+1)
		return json.MarshalIndent(m, "", "  ")
	})
	return removed, err
}

// ProjectFacts is the project's pinned facts as the first prompt of a
// fresh conversation gets them, "" when there are none. A memory that
// cannot be read is an error that names it: the caller says so, and the
// prompt goes without.
func (s *Session) ProjectFacts() (string, error) {
	m, err := LoadProjectMemory(s.Store)
	if err != nil || len(m.Pinned) == 0 {
		return "", err
	}
	var b strings.Builder
	b.WriteString("## Project facts (pinned for every session of this project)")
	for _, f := range m.Pinned {
		b.WriteString("\n- " + strings.ReplaceAll(f.Text, "\n", " "))
	}
	return b.String(), nil
}

// checkProjectMemory refuses to run a session of a store whose project
// memory cannot be read: its facts would leave every prompt unsaid.
// The error is memory --project's: the file, and what to do.
func checkProjectMemory(st *store.Store) error {
	_, err := LoadProjectMemory(st)
	return err
}

func redactWith(plan *spec.Plan, text string) string {
	if plan == nil {
		plan = &spec.Plan{}
	}
	return NewRedactor(plan).String(text)
}

// memoryRequestPrefix starts the name of a change to the working set left
// for a running session's runner (pipeline memory pin while it runs): one
// file each, so that two people pinning at once lose nothing.
const memoryRequestPrefix = "memory-request-"

// memoryRequest is one such file.
type memoryRequest struct {
	At    time.Time           `json:"at"`
	Notes []engine.MemoryNote `json:"notes"`
}

// memoryLockFile orders those who leave memory requests for a session
// (Ref.Remember) against the runner that takes them as it ends
// (Session.Close): a request is written only while a runner holds the
// session and has not begun to end, so none is stranded.
const memoryLockFile = "memory.lock"

// Remember changes the session's working set on a human's behalf
// (pipeline memory pin, unpin, task add, task done). A session that is
// not running records it now (two at once take turns); a running one
// gets it from its runner before its next step, or as the runner ends
// (or, if the runner dies first, when the session is next opened). It
// reports whether the change was left for the runner.
func (r *Ref) Remember(now time.Time, notes []engine.MemoryNote, say func(string, ...any)) (queued bool, err error) {
	for i := range notes {
		notes[i].Text = NewRedactor(r.Plan).String(notes[i].Text)
	}
	release, err := r.X.WaitLock(memoryLockFile)
	if err != nil {
		return false, err
	}
	defer release()
	if !r.Running() {
		s, err := Open(context.Background(), r.Store, Options{ID: r.ID(), Plan: r.Plan, Say: say, memoryLocked: true})
		if err == nil {
			_, err = s.Apply(engine.Remembered{At: now, Source: engine.SourceHuman, Notes: notes})
			return false, errors.Join(err, s.Close())
		}
		if !r.Running() {
			return false, err
		}
		// A runner took the session meanwhile: it gets the request, at
		// the latest as it ends, which waits for this lock.
	}
	content, err := json.Marshal(memoryRequest{At: now, Notes: notes})
	if err != nil {
		return false, err
	}
	var random [4]byte
	_, _ = rand.Read(random[:])
	file := fmt.Sprintf("%s%020d-%s.json", memoryRequestPrefix, now.UnixNano(), hex.EncodeToString(random[:]))
	if err := r.X.WriteFile(file, content); err != nil {
		return false, err
	}
	return true, nil
}

// TakeMemoryRequests records the changes to the working set a human left
// while the session ran (see Ref.Remember), oldest first, and removes
// them. A request that cannot be read is left where it is and said.
func (s *Session) TakeMemoryRequests(say func(string, ...any)) error {
	files, err := s.X.Files(memoryRequestPrefix)
	if err != nil {
		// A folder that cannot be listed (deleted under the run) is the
		// record's to report, with the words for it: nothing is taken.
		return nil
	}
	for _, f := range files {
		content, err := s.X.ReadFile(f)
		if err != nil {
			return err
		}
		var req memoryRequest
		if err := json.Unmarshal(content, &req); err != nil {
			if say != nil {
				say("pipeline: a memory change left for the session cannot be read (%v); it is kept as %s", err, f)
			}
			continue
		}
		if _, err := s.Apply(engine.Remembered{At: req.At, Source: engine.SourceHuman, Notes: req.Notes}); err != nil {
			return err
		}
		// Applied twice after a crash here, a note changes nothing more:
		// the working set keeps one of each text.
		if err := s.X.RemoveFile(f); err != nil {
			return err
		}
	}
	return nil
}
