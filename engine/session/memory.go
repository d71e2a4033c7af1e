package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/osrand"
	"github.com/pipeline-dev/pipeline/internal/tokens"
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

// The bounds of what a human pins (pipeline memory pin, --project or
// not): a fact holds at most engine.MaxMemoryText bytes, and a project
// memory, or a session's human pins, at most MaxPinnedFacts facts and
// MaxPinnedBytes bytes of them in all. The facts go into prompts; a pin
// past a bound is refused, saying which. A memory.json over
// maxProjectMemoryFile (grown by hand) is refused as unreadable.
const (
	MaxPinnedFacts       = 200
	MaxPinnedBytes       = 64 << 10
	maxProjectMemoryFile = 1 << 20
)

// pinHolder is what holds pinned facts, for checkPin's messages: its
// name, and the command that lists them.
type pinHolder struct{ name, lists string }

var projectPins = pinHolder{"the project memory", "pipeline memory --project"}

// checkPin refuses a fact to pin that is over a bound, h holding count
// facts of size bytes already.
func checkPin(text string, h pinHolder, count, size int) error {
	switch {
	case len(text) > engine.MaxMemoryText:
		return refused("the fact is %d bytes; a pinned fact holds at most %d: shorten it (or keep the text in a file, and pin where it is)",
			len(text), engine.MaxMemoryText)
	case count >= MaxPinnedFacts:
		return refused("%s holds %d pinned facts, the most it may: unpin one first (%s lists them)", h.name, count, h.lists)
	case size+len(text) > MaxPinnedBytes:
		return refused("%s holds %d bytes of pinned facts; with this one it would hold more than %d: unpin some first (%s lists them)",
			h.name, size, MaxPinnedBytes, h.lists)
	}
	return nil
}

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
	if len(content) > maxProjectMemoryFile {
		return m, refused("%s is %d bytes, more than a project memory holds (%d facts, %d bytes of them): move it away, or cut it down by hand",
			path, len(content), MaxPinnedFacts, MaxPinnedBytes)
	}
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
	text = strings.TrimSpace(redactWith(plan, text))
	if err := checkPin(text, projectPins, 0, 0); err != nil {
		return pinned, err
	}
	err := st.UpdateProjectFile(store.ProjectMemoryName, func(old []byte) ([]byte, error) {
		m, err := parseProjectMemory(st, old)
		if err != nil {
			return nil, err
		}
		size := 0
		for _, f := range m.Pinned {
			size += len(f.Text)
		}
		if err := checkPin(text, projectPins, len(m.Pinned), size); err != nil {
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
// fresh conversation gets them, "" when there are none: within the
// resume context's budget, cut as it cuts them (engine.RenderProjectFacts).
// A memory that cannot be read is an error that names it: the caller
// says so, and the prompt goes without.
func (s *Session) ProjectFacts() (string, error) {
	m, err := LoadProjectMemory(s.Store)
	if err != nil || len(m.Pinned) == 0 {
		return "", err
	}
	facts := make([]string, len(m.Pinned))
	for i, f := range m.Pinned {
		facts[i] = f.Text
	}
	return engine.RenderProjectFacts(facts, resumeBudget(s.Plan), tokens.Count), nil
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

// The memory lock orders those who leave memory requests for a session
// (Ref.Remember) against the runner that takes them as it ends
// (Session.Close): a request is written only while a runner holds the
// session and has not begun to end, so none is stranded. It is the lock
// of the session's folder (no file is made for it: a run's close makes
// no inode), and memoryLockFile's as well where that file is there, or is
// made by a writer: older builds take that file's lock alone (a writer
// of one, or a runner of one still running after an upgrade).
const memoryLockFile = "memory.lock"

// lockMemory takes the memory lock of x; with create (a writer), the file
// of older builds' is made if it is not there.
func lockMemory(x *store.Session, create bool) (release func(), err error) {
	folder, err := x.WaitFolderLock()
	if err != nil {
		return nil, err
	}
	file, err := x.WaitLock(memoryLockFile, create)
	if err != nil && (create || !errors.Is(err, fs.ErrNotExist)) {
		folder()
		return nil, err
	}
	return func() {
		file()
		folder()
	}, nil
}

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
	if err := r.checkPins(notes); err != nil {
		return false, err
	}
	release, err := lockMemory(r.X, true)
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
	file := fmt.Sprintf("%s%020d-%s.json", memoryRequestPrefix, now.UnixNano(), osrand.Hex(4))
	if err := r.X.WriteFile(file, content); err != nil {
		return false, err
	}
	return true, nil
}

// checkPins refuses facts a human pins in the session past the bounds
// of checkPin, counted over the session's human pins as its files hold
// them.
func (r *Ref) checkPins(notes []engine.MemoryNote) error {
	var count, size int
	loaded := false
	for _, n := range notes {
		if n.Kind != engine.NoteFact {
			continue
		}
		if !loaded {
			s, _, err := r.State()
			if err != nil {
				return err
			}
			for _, f := range s.WorkingSet.Pinned {
				if f.Source == engine.SourceHuman {
					count, size = count+1, size+len(f.Text)
				}
			}
			loaded = true
		}
		text := strings.TrimSpace(n.Text)
		if err := checkPin(text, pinHolder{"session " + r.ID(), "pipeline memory " + r.ID()}, count, size); err != nil {
			return err
		}
		count, size = count+1, size+len(text)
	}
	return nil
}

// TakeMemoryRequests records the changes to the working set a human left
// while the session ran (see Ref.Remember), oldest first, and removes
// them. A request that cannot be read is left where it is and said.
func (s *Session) TakeMemoryRequests(say func(string, ...any)) error {
	return s.TakeMemoryRequestsTo(say, nil)
}

// TakeMemoryRequestsTo is TakeMemoryRequests that also hands each change
// it records to took: a fleet worker's copy of the session records them,
// and the workflow, which holds the session's state, decides them too.
func (s *Session) TakeMemoryRequestsTo(say func(string, ...any), took func(engine.Remembered)) error {
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
		ev := engine.Remembered{At: req.At, Source: engine.SourceHuman, Notes: req.Notes}
		if _, err := s.Apply(ev); err != nil {
			return err
		}
		if took != nil {
			took(ev)
		}
		// Applied twice after a crash here, a note changes nothing more:
		// the working set keeps one of each text.
		if err := s.X.RemoveFile(f); err != nil {
			return err
		}
	}
	return nil
}
