package app

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// MemoryRequest names a session (by id, or the latest of the pipeline
// and spec) whose working set to show or change.
type MemoryRequest struct {
	Pipeline
	Session string `json:"session,omitempty"`
}

// WorkingSetResponse is `pipeline memory -o json`: a session's working
// set, and the project's facts its resume context gets too. (Its fields
// are in the order of their keys, as the map it replaced printed them.)
type WorkingSetResponse struct {
	Decisions    []engine.MemoryItem `json:"decisions"`
	DoneTasks    []engine.MemoryItem `json:"done_tasks"`
	FilesTouched []engine.FileTouch  `json:"files_touched"`
	OpenTasks    []engine.MemoryItem `json:"open_tasks"`
	PinnedFacts  []engine.MemoryItem `json:"pinned_facts"`
	// ProjectError says why the project's memory could not be read.
	ProjectError string              `json:"project_error,omitempty"`
	ProjectFacts []engine.MemoryItem `json:"project_facts"`
	Session      string              `json:"session"`
	Status       engine.Status       `json:"status"`
	Summary      []engine.MemoryItem `json:"summary"`
}

// WorkingSet shows a session's working set. It reads: no lock, nothing
// written.
func WorkingSet(_ context.Context, req MemoryRequest) (*WorkingSetResponse, error) {
	ref, s, _, err := req.readState(req.Session)
	if err != nil {
		return nil, err
	}
	defer ref.Store.Close()
	defer ref.Close()
	if err := onFleet(ref.X.Meta, "memory", whyMemory); err != nil {
		return nil, err
	}
	project, projectErr := session.LoadProjectMemory(ref.Store)
	out := WorkingSetOf(ref.ID(), s, project.Pinned, projectErr)
	out = redacted(session.NewRedactor(ref.Plan), out)
	return &out, nil
}

// WorkingSetOf is the working set of session id standing as s, with the
// project's facts (or why they could not be read): what a backend
// answers pipeline memory with. It is not redacted.
func WorkingSetOf(id string, s engine.State, projectFacts []engine.MemoryItem, projectErr error) WorkingSetResponse {
	ws := s.WorkingSet
	out := WorkingSetResponse{Session: id, Status: s.Status,
		Summary: nonNil(ws.Summary), PinnedFacts: nonNil(ws.Pinned), Decisions: nonNil(ws.Decisions),
		OpenTasks: nonNil(ws.Open), DoneTasks: nonNil(ws.Done), FilesTouched: ws.Files,
		ProjectFacts: nonNil(projectFacts)}
	if out.FilesTouched == nil {
		out.FilesTouched = []engine.FileTouch{}
	}
	if projectErr != nil {
		out.ProjectError = projectErr.Error()
	}
	return out
}

// ProjectMemoryResponse is `pipeline memory --project -o json`.
type ProjectMemoryResponse struct {
	PinnedFacts []engine.MemoryItem `json:"pinned_facts"`
	Project     string              `json:"project"`
}

// ProjectMemory shows the facts pinned for every session of the
// project.
func ProjectMemory(_ context.Context, p Pipeline) (*ProjectMemoryResponse, error) {
	st, err := p.Existing()
	if err != nil {
		return nil, err
	}
	defer st.Close()
	m, err := session.LoadProjectMemory(st)
	if err != nil {
		return nil, err
	}
	out := redacted(environmentRedactor(), ProjectMemoryResponse{Project: st.Root, PinnedFacts: nonNil(m.Pinned)})
	return &out, nil
}

// ProjectEditResponse is what a change to the project's memory did.
type ProjectEditResponse struct {
	Item    engine.MemoryItem `json:"item"`
	Project string            `json:"project"`
	Result  string            `json:"result"`
}

// PinProject pins a fact for every session of the project.
func PinProject(_ context.Context, p Pipeline, text string) (*ProjectEditResponse, error) {
	if text == "" {
		return nil, Usagef("the fact to pin is empty")
	}
	return editProject(p, "pinned for the project", func(st *storeAndPlan) (engine.MemoryItem, error) {
		return session.PinProject(st.store, st.plan, text, time.Now())
	})
}

// UnpinProject unpins the project's fact number id.
func UnpinProject(_ context.Context, p Pipeline, id int) (*ProjectEditResponse, error) {
	return editProject(p, "unpinned from the project", func(st *storeAndPlan) (engine.MemoryItem, error) {
		return session.UnpinProject(st.store, id)
	})
}

// RememberProject applies one human change to the project's memory
// (memory pin --project, memory unpin --project), which holds pinned
// facts only.
func RememberProject(ctx context.Context, req RememberRequest) (*ProjectEditResponse, error) {
	switch {
	case req.Note.Kind != engine.NoteFact && req.Note.Kind != engine.NoteUnpin:
		return nil, Usagef("--project holds pinned facts only: use pipeline memory pin --project or unpin --project")
	case req.Session != "":
		return nil, Usagef("--project and --session name different memories: give one")
	case req.Note.Kind == engine.NoteFact:
		return PinProject(ctx, req.Pipeline, req.Note.Text)
	}
	return UnpinProject(ctx, req.Pipeline, req.Note.ID)
}

func editProject(p Pipeline, did string, edit func(*storeAndPlan) (engine.MemoryItem, error)) (*ProjectEditResponse, error) {
	st, err := p.Open()
	if err != nil {
		return nil, err
	}
	defer st.Close()
	// The plan's secrets are redacted too, when phases.yaml loads.
	plan, _ := p.LoadPlan()
	item, err := edit(&storeAndPlan{store: st, plan: plan})
	if err != nil {
		return nil, StoreWriteFailed(err)
	}
	out := redacted(environmentRedactor(), ProjectEditResponse{Project: st.Root, Result: did, Item: item})
	return &out, nil
}

// RememberRequest is one human change to a session's working set: pin
// or unpin a fact, add or close a task.
type RememberRequest struct {
	MemoryRequest
	Note engine.MemoryNote `json:"note"`
}

// RememberResponse is what the change did. Queued: the session is
// running, and its runner takes the change before its next step.
type RememberResponse struct {
	Queued  bool   `json:"queued"`
	Result  string `json:"result"`
	Session string `json:"session"`
	// Item is the fact pinned, the task added or the task closed, with
	// its number; none while queued (the runner numbers it).
	Item *engine.MemoryItem `json:"item,omitempty"`
}

// Remember applies one human change to a session's working set.
func Remember(_ context.Context, req RememberRequest) (*RememberResponse, error) {
	note := req.Note
	switch {
	case (note.Kind == engine.NoteFact || note.Kind == engine.NoteTodo) && note.Text == "":
		return nil, Usagef("the %s is empty", map[bool]string{true: "fact to pin", false: "task"}[note.Kind == engine.NoteFact])
	case note.Kind == engine.NoteDone && note.Text == "" && note.ID == 0:
		return nil, Usagef("name the task to close: its number (pipeline memory lists them) or its text")
	}
	ref, err := req.FindSession(req.Session)
	if err != nil {
		return nil, err
	}
	defer ref.Store.Close()
	defer ref.Close()
	if f := ref.X.Meta.OnFleet(); f != nil {
		return nil, &Error{Code: ExitUsage,
			Message: fmt.Sprintf("session %s runs on %s, not here: %s", ref.ID(), f.Where(), whyMemory),
			Hint:    "use: " + FleetCommand("memory "+memoryVerb(note.Kind), *f, "--session "+ref.ID()+" …")}
	}
	before, _, err := ref.State()
	if err != nil {
		return nil, err
	}
	if err := CheckMemoryNote(before.WorkingSet, note); err != nil {
		return nil, err
	}
	queued, err := ref.Remember(time.Now(), []engine.MemoryNote{note}, req.Say)
	if err != nil {
		return nil, StoreWriteFailed(err)
	}
	out := &RememberResponse{Session: ref.ID(), Result: MemoryResult(note.Kind), Queued: queued}
	if !queued {
		if after, _, err := ref.State(); err == nil {
			out.Item = ChangedItem(before.WorkingSet, after.WorkingSet, note.Kind)
		}
	}
	return redacted(environmentRedactor(), out), nil
}

// ChangedItem is the item a change to the working set made or closed:
// the pinned fact or the open task that was not there before, or the
// task that was open and is done now.
func ChangedItem(before, after engine.WorkingSet, kind string) *engine.MemoryItem {
	list, was := map[string][]engine.MemoryItem{engine.NoteFact: after.Pinned, engine.NoteTodo: after.Open, engine.NoteDone: after.Done}[kind],
		map[string][]engine.MemoryItem{engine.NoteFact: before.Pinned, engine.NoteTodo: before.Open, engine.NoteDone: before.Done}[kind]
	for i := len(list) - 1; i >= 0; i-- {
		if !slices.ContainsFunc(was, func(m engine.MemoryItem) bool { return m.ID == list[i].ID }) {
			item := list[i]
			return &item
		}
	}
	return nil
}

// storeAndPlan is what a change to the project's memory needs: the
// store, and the plan whose secrets are redacted (nil when phases.yaml
// cannot be loaded: the environment's and the known patterns are).
type storeAndPlan struct {
	store *store.Store
	plan  *spec.Plan
}

// MemoryResult says what a change of kind did: pinned, unpinned, task
// added, task done.
func MemoryResult(kind string) string {
	return map[string]string{engine.NoteFact: "pinned", engine.NoteUnpin: "unpinned",
		engine.NoteTodo: "task added", engine.NoteDone: "task done"}[kind]
}

// memoryVerb is the pipeline memory command of a change of kind.
func memoryVerb(kind string) string {
	return map[string]string{engine.NoteFact: "pin", engine.NoteUnpin: "unpin",
		engine.NoteTodo: "task add", engine.NoteDone: "task done"}[kind]
}

// CheckMemoryNote refuses a change that would do nothing, so that a
// mistyped number says so rather than pass in silence.
func CheckMemoryNote(w engine.WorkingSet, note engine.MemoryNote) error {
	has := func(list []engine.MemoryItem, id int) bool {
		for _, m := range list {
			if m.ID == id {
				return true
			}
		}
		return false
	}
	switch {
	case note.Kind == engine.NoteUnpin && !has(w.Pinned, note.ID):
		return Usagef("the session has no pinned fact %d (pipeline memory lists them)", note.ID)
	case note.Kind == engine.NoteDone && note.ID != 0 && !has(w.Open, note.ID):
		return Usagef("the session has no open task %d (pipeline memory lists them)", note.ID)
	case note.Kind == engine.NoteDone && note.ID == 0 && engine.MatchTask(w.Open, note.Text) < 0:
		if i := engine.NearestTask(w.Open, note.Text); i >= 0 {
			near := w.Open[i]
			return &Error{Code: ExitUsage, Message: fmt.Sprintf("no open task matches %q closely enough; did you mean #%d %q?", note.Text, near.ID, near.Text),
				Hint: fmt.Sprintf("close it by its number: pipeline memory task done %d (pipeline memory lists the open tasks)", near.ID)}
		}
		return Usagef("no open task matches %q (pipeline memory lists them); close one by its number", note.Text)
	}
	return nil
}

func nonNil(list []engine.MemoryItem) []engine.MemoryItem {
	if list == nil {
		return []engine.MemoryItem{}
	}
	return list
}
