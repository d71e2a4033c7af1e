package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/app/appsearch"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// ---- inputs and outputs: their JSON Schemas are inferred from them ----

// Target names a pipeline or one of its sessions.
type Target struct {
	Session string `json:"session,omitempty" jsonschema:"the session id, or a unique start or end of it (the sessions tool lists them); default: the latest session of the pipeline and spec"`
	Pipeline
}

// Pipeline names a pipeline and its spec, as the tools take them.
type Pipeline struct {
	File string `json:"file,omitempty" jsonschema:"the pipeline's phases.yaml, relative to the server's folder; default phases.yaml"`
	Spec string `json:"spec,omitempty" jsonschema:"the spec file whose frontmatter overrides phases.yaml (relative to the server's folder); default: the spec phases.yaml names"`
}

type ValidateInput struct {
	File  string   `json:"file,omitempty" jsonschema:"a phases.yaml, or a .md spec (its frontmatter), relative to the server's folder; default phases.yaml"`
	Files []string `json:"files,omitempty" jsonschema:"more files to check, as file"`
}

type ValidateOutput struct {
	// ExitCode is pipeline validate's: 0 valid, 2 not.
	ExitCode int `json:"exit_code" jsonschema:"pipeline validate's exit code: 0 every file is valid, 2 a problem was found"`
	app.ValidateResponse
}

type PlanInput struct {
	Pipeline
}

type PlanOutput struct {
	File string `json:"file"`
	Plan any    `json:"plan" jsonschema:"the merged plan as pipeline plan -o json prints it: every phase with its steps, triggers and policies, each value with its origin"`
}

type RunInput struct {
	Pipeline
	New  bool   `json:"new,omitempty" jsonschema:"start a new session even when the latest one is paused (default: run resumes it)"`
	From string `json:"from,omitempty" jsonschema:"start a new session at this phase"`
	Only string `json:"only,omitempty" jsonschema:"start a new session that runs this phase alone"`
}

type ResumeInput struct {
	Target
	Notes string `json:"notes,omitempty" jsonschema:"notes for the agent, shown in its resume context"`
	Phase string `json:"phase,omitempty" jsonschema:"jump to this phase instead of continuing where the session paused"`
}

// Started is a runner started in the background by run or resume.
type Started struct {
	Session string `json:"session"`
	// Status is the session's status when the tool returned: running,
	// or already paused, completed or failed.
	Status string `json:"status"`
	PID    int    `json:"pid" jsonschema:"the runner's process id"`
	Log    string `json:"log" jsonschema:"the runner's output (what pipeline run shows), a file under the store"`
	// ExitCode is the runner's, when it ended before the tool returned.
	ExitCode *int   `json:"exit_code,omitempty" jsonschema:"the runner's exit code when it already ended: 0 completed, 1 failed, 2 usage/spec error, 3 paused"`
	Watcher  bool   `json:"watcher,omitempty" jsonschema:"a pipeline watch holds this store: it follows the session from its index, and resumes it when its spec changes"`
	Next     string `json:"next" jsonschema:"what to call next"`
}

type PauseInput struct {
	Target
	Notes string `json:"notes,omitempty" jsonschema:"notes for the next resume; on a paused session they are added"`
}

type PauseOutput struct {
	Session string `json:"session"`
	Result  string `json:"result" jsonschema:"paused, already paused, or paused, notes added"`
	// ExitCode is pipeline pause's.
	ExitCode int    `json:"exit_code"`
	Next     string `json:"next"`
}

type StatusInput struct {
	Target
}

// StatusOutput is pipeline status -o json, and the exit code a run of the
// session ends with as it stands.
type StatusOutput struct {
	app.StatusResponse
	// RunExitCode is what pipeline run or resume exits with for this
	// status.
	RunExitCode *int   `json:"run_exit_code,omitempty" jsonschema:"the exit code a run ends with for this status: 0 completed, 1 failed, 3 paused; absent while it runs"`
	Resume      string `json:"resume_command,omitempty" jsonschema:"the command that resumes it, when it is paused or failed"`
}

type SessionsInput struct {
	File   string `json:"file,omitempty" jsonschema:"only the sessions of this phases.yaml; default: every pipeline below the server's folder"`
	Active bool   `json:"active,omitempty" jsonschema:"only sessions not finished: running or paused"`
	Status string `json:"status,omitempty" jsonschema:"only sessions with this status: running, paused, completed or failed"`
}

type SessionsOutput struct {
	Sessions []app.SessionLine `json:"sessions"`
}

type LogsInput struct {
	Target
	Phase   string `json:"phase,omitempty" jsonschema:"only this phase"`
	Attempt int    `json:"attempt,omitempty" jsonschema:"only this attempt (1, 2, ...)"`
	Lines   int    `json:"lines,omitempty" jsonschema:"at most this many lines, the last ones (default 100, at most 2000)"`
	Bytes   int    `json:"bytes,omitempty" jsonschema:"at most this many bytes, the last ones (default 16384, at most 262144)"`
	Raw     bool   `json:"raw,omitempty" jsonschema:"the transcripts as the agent CLIs wrote them (stream-json), not rendered as a conversation"`
}

type LogsOutput struct {
	Session     string           `json:"session"`
	Transcripts []TranscriptTail `json:"transcripts"`
	// Truncated: earlier output was left out by the caps.
	Truncated bool `json:"truncated"`
}

// TranscriptTail is the end of one step's transcript, and its resource.
type TranscriptTail struct {
	app.TranscriptTail
	Resource string `json:"resource" jsonschema:"its resource URI"`
}

type MemoryInput struct {
	Target
	Project  bool   `json:"project,omitempty" jsonschema:"the project's memory (every session's resume context gets it) rather than a session's working set"`
	Pin      string `json:"pin,omitempty" jsonschema:"pin this fact: every resume context carries it"`
	TaskAdd  string `json:"task_add,omitempty" jsonschema:"add this open task"`
	TaskDone string `json:"task_done,omitempty" jsonschema:"close the open task with this number or text"`
}

type MemoryOutput struct {
	Action string `json:"action" jsonschema:"show, pin, task add or task done"`
	Memory any    `json:"memory" jsonschema:"what pipeline memory -o json prints"`
}

type SearchInput struct {
	Query   string `json:"query" jsonschema:"the words to look for, all must match; \"quoted words\" as a phrase; word* as a prefix"`
	File    string `json:"file,omitempty" jsonschema:"the pipeline whose sessions to search, relative to the server's folder; default phases.yaml (or the session's)"`
	Session string `json:"session,omitempty" jsonschema:"only this session"`
	Phase   string `json:"phase,omitempty" jsonschema:"only this phase"`
	Since   string `json:"since,omitempty" jsonschema:"only what is newer: 3d, 12h, or a date 2026-11-20"`
	Limit   int    `json:"limit,omitempty" jsonschema:"at most this many hits (default 20)"`
}

type SearchOutput struct {
	Results any `json:"results" jsonschema:"what pipeline search -o json prints: the hits, best first"`
}

// ---- the tools ----

func (s *Server) addTools() {
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "validate", Title: "Validate phases.yaml",
		Description: "Check phases.yaml files (or specs' frontmatter) and report every problem with file:line:col. Exit code 0 when valid, 2 otherwise.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.validate)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "plan", Title: "Show the merged plan",
		Description: "The phases, steps, triggers and policies as they will run (phases.yaml merged with the spec's frontmatter), each value with where it came from.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.plan)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "run", Title: "Run a pipeline",
		Description: "Start running a pipeline in the background (resuming its paused session unless new is set) and return its session id at once. Then call status (or subscribe to pipeline://sessions/<id>) until it pauses or completes."}, s.run)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "resume", Title: "Resume a session",
		Description: "Continue a paused or failed session in the background, with notes for the agent and optionally at another phase; returns at once. Then call status."}, s.resume)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "pause", Title: "Pause a session",
		Description: "Pause a running session now (its step is stopped gracefully), with notes for the next resume; on a paused session, add the notes."}, s.pause)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "status", Title: "Session status",
		Description: "Where a session stands: status, phase, step, why it paused (the trigger, its expression and values, the note), tokens, cost, time, every phase's history.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.status)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "sessions", Title: "List sessions",
		Description: "The sessions of every pipeline below the server's folder (or of one phases.yaml), newest first.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.sessions)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "logs", Title: "Tail a session's transcripts",
		Description: "The last lines of a session's step transcripts, bounded by lines and bytes, optionally of one phase or attempt.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.logs)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "memory", Title: "Working set",
		Description: "A session's working set (phase summaries, pinned facts, decisions, open and done tasks, files touched), or the project's memory; or pin a fact, add or close a task (one change per call)."}, s.memory)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "search", Title: "Search sessions",
		Description: "Full-text search over the transcripts, prompts, notes and working sets of a pipeline's sessions, best hits first.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.search)
}

func (s *Server) validate(ctx context.Context, _ *mcp.CallToolRequest, in ValidateInput) (*mcp.CallToolResult, ValidateOutput, error) {
	var out ValidateOutput
	files := in.Files
	if in.File != "" {
		files = append([]string{in.File}, files...)
	}
	if len(files) == 0 {
		files = []string{app.DefaultFile}
	}
	var paths []string
	for _, f := range files {
		path, err := s.root.file("file", f, app.DefaultFile)
		if err == nil {
			err = s.root.specOf(path)
		}
		if err != nil {
			return nil, out, err
		}
		paths = append(paths, path)
	}
	r := app.Validate(ctx, app.ValidateRequest{Files: paths})
	// Files as the client named them: relative to the server's folder.
	for i := range r.Files {
		f := &r.Files[i]
		f.File = s.root.rel(f.File)
		for _, list := range [][]spec.Problem{f.Problems, f.Warnings} {
			for j := range list {
				if filepath.IsAbs(list[j].File) {
					list[j].File = s.root.rel(list[j].File)
				}
			}
		}
	}
	out.ValidateResponse = *r
	if !r.Valid {
		out.ExitCode = app.ExitUsage
	}
	return nil, out, nil
}

func (s *Server) plan(ctx context.Context, _ *mcp.CallToolRequest, in PlanInput) (*mcp.CallToolResult, PlanOutput, error) {
	var out PlanOutput
	path, specPath, err := s.root.pipeline(in.Pipeline)
	if err != nil {
		return nil, out, err
	}
	r, err := app.Plan(ctx, app.Pipeline{File: path, Spec: specPath})
	if err != nil {
		return nil, out, toolError(err, "\nCall validate for every problem of the file.")
	}
	out.File, out.Plan = s.root.rel(path), r.JSON
	return nil, out, nil
}

func (s *Server) status(ctx context.Context, _ *mcp.CallToolRequest, in StatusInput) (*mcp.CallToolResult, StatusOutput, error) {
	out, err := s.statusOf(ctx, in.Target)
	return nil, out, err
}

// statusOf is the status of the session of t.
func (s *Server) statusOf(ctx context.Context, t Target) (StatusOutput, error) {
	var out StatusOutput
	p, id, err := s.target(t)
	if err != nil {
		return out, err
	}
	r, err := app.Status(ctx, app.StatusRequest{Pipeline: p, Session: id})
	if err != nil {
		return out, toolError(err, "\nCall sessions to list the sessions below "+s.root.root+".")
	}
	out.StatusResponse = *r
	code := -1
	switch engine.Status(out.Status) {
	case engine.StatusCompleted:
		code = app.ExitCompleted
	case engine.StatusFailed:
		code = app.ExitFailed
	case engine.StatusPaused:
		code = app.ExitPaused
	}
	if code >= 0 {
		out.RunExitCode = &code
	}
	if code > 0 {
		out.Resume = "pipeline resume " + out.ID
	}
	return out, nil
}

// settleSession settles (see settle) the session t names by id, before
// a change to it.
func (s *Server) settleSession(t Target) {
	if t.Session == "" {
		return
	}
	if f, err := s.root.session(t.Session, t.File); err == nil {
		if st, err := store.OpenExisting(f.store); err == nil {
			settle(st, f.meta.Key)
			st.Close()
		}
	}
}

// target is the pipeline and session id that name t's session to an
// operation: its id (found below the root) with its pipeline and store,
// or its pipeline and spec (the latest session of them).
func (s *Server) target(t Target) (app.Pipeline, string, error) {
	if t.Session != "" {
		f, err := s.root.session(t.Session, t.File)
		if err != nil {
			return app.Pipeline{}, "", err
		}
		return app.Pipeline{File: f.file, StateDir: f.store}, f.meta.ID, nil
	}
	path, err := s.root.file("file", t.File, app.DefaultFile)
	if err != nil {
		return app.Pipeline{}, "", err
	}
	dir, err := s.root.storeDir(path)
	if err != nil {
		return app.Pipeline{}, "", err
	}
	p := app.Pipeline{File: path, StateDir: dir}
	if t.Spec != "" {
		if p.Spec, err = s.root.file("spec", t.Spec, ""); err != nil {
			return app.Pipeline{}, "", err
		}
	} else if err := s.root.specOf(path); err != nil {
		return app.Pipeline{}, "", err
	}
	return p, "", nil
}

func (s *Server) pause(ctx context.Context, _ *mcp.CallToolRequest, in PauseInput) (*mcp.CallToolResult, PauseOutput, error) {
	var out PauseOutput
	s.settleSession(in.Target)
	p, id, err := s.target(in.Target)
	if err != nil {
		return nil, out, err
	}
	r, err := app.Pause(ctx, app.PauseRequest{Pipeline: p, Session: id, Notes: in.Notes, Wait: 30 * time.Second})
	if err != nil {
		return nil, out, toolError(err, "\nCall status to see where the session stands.")
	}
	out.Session, out.Result = r.Session, r.Result
	out.Next = "call resume with the session id (and notes) to continue it"
	return nil, out, nil
}

func (s *Server) sessions(ctx context.Context, _ *mcp.CallToolRequest, in SessionsInput) (*mcp.CallToolResult, SessionsOutput, error) {
	var out SessionsOutput
	req := app.SessionsRequest{Active: in.Active, Status: in.Status}
	if in.File == "" {
		req.All, req.Root = true, s.root.root
	} else {
		path, err := s.root.file("file", in.File, app.DefaultFile)
		if err != nil {
			return nil, out, err
		}
		if req.StateDir, err = s.root.storeDir(path); err != nil {
			return nil, out, err
		}
		req.File = path
	}
	r, err := app.Sessions(ctx, req)
	if err != nil {
		return nil, out, toolError(err, "")
	}
	out.Sessions = r.Sessions
	if req.All {
		// $PIPELINE_STATE_DIR below the root holds sessions too.
		if dir := s.root.stateDirWithin(); dir != "" {
			extra, err := app.Sessions(ctx, app.SessionsRequest{Pipeline: app.Pipeline{StateDir: dir}, Active: in.Active, Status: in.Status})
			if err == nil {
				out.Sessions = append(out.Sessions, extra.Sessions...)
			}
		}
	}
	return nil, out, nil
}

func (s *Server) memory(ctx context.Context, _ *mcp.CallToolRequest, in MemoryInput) (*mcp.CallToolResult, MemoryOutput, error) {
	out := MemoryOutput{Action: "show"}
	edits := 0
	for _, e := range []string{in.Pin, in.TaskAdd, in.TaskDone} {
		if e != "" {
			edits++
		}
	}
	if edits > 1 {
		return nil, out, fmt.Errorf("give one of pin, task_add and task_done per call (got %d); call memory once for each change", edits)
	}
	t := in.Target
	if in.Project {
		t.Session = "" // the project's memory is every session's
	}
	if edits > 0 {
		s.settleSession(t)
	}
	p, id, err := s.target(t)
	if err != nil {
		return nil, out, err
	}
	req := app.MemoryRequest{Pipeline: p, Session: id}
	var note engine.MemoryNote
	switch {
	case in.Project && in.Pin != "":
		out.Action = "pin"
		out.Memory, err = app.PinProject(ctx, p, strings.TrimSpace(in.Pin))
	case in.Project && edits > 0:
		return nil, out, fmt.Errorf("the project's memory holds pinned facts only: give pin with project, or task_add and task_done without it")
	case in.Project:
		out.Memory, err = app.ProjectMemory(ctx, p)
	case in.Pin != "":
		out.Action, note = "pin", engine.MemoryNote{Kind: engine.NoteFact, Text: strings.TrimSpace(in.Pin)}
	case in.TaskAdd != "":
		out.Action, note = "task add", engine.MemoryNote{Kind: engine.NoteTodo, Text: strings.TrimSpace(in.TaskAdd)}
	case in.TaskDone != "":
		out.Action, note = "task done", engine.MemoryNote{Kind: engine.NoteDone, Text: strings.TrimSpace(in.TaskDone)}
		if n, err := strconv.Atoi(note.Text); err == nil {
			note = engine.MemoryNote{Kind: engine.NoteDone, ID: n}
		}
	default:
		out.Memory, err = app.WorkingSet(ctx, req)
	}
	if note.Kind != "" {
		out.Memory, err = app.Remember(ctx, app.RememberRequest{MemoryRequest: req, Note: note})
	}
	if err != nil {
		return nil, out, toolError(err, "")
	}
	return nil, out, nil
}

func (s *Server) search(ctx context.Context, _ *mcp.CallToolRequest, in SearchInput) (*mcp.CallToolResult, SearchOutput, error) {
	var out SearchOutput
	if strings.TrimSpace(in.Query) == "" {
		return nil, out, fmt.Errorf("search needs a query: the words to look for, e.g. {\"query\": \"flaky test\"}")
	}
	req := appsearch.SearchRequest{Query: in.Query, Phase: in.Phase, Limit: in.Limit}
	if in.Session != "" {
		f, err := s.root.session(in.Session, in.File)
		if err != nil {
			return nil, out, err
		}
		req.Pipeline, req.Session = app.Pipeline{File: f.file, StateDir: f.store}, f.meta.ID
	} else {
		path, err := s.root.file("file", in.File, app.DefaultFile)
		if err != nil {
			return nil, out, err
		}
		dir, err := s.root.storeDir(path)
		if err != nil {
			return nil, out, err
		}
		req.Pipeline = app.Pipeline{File: path, StateDir: dir}
	}
	if in.Since != "" {
		at, err := appsearch.ParseSince(in.Since, time.Now())
		if err != nil {
			return nil, out, err
		}
		req.Since = at
	}
	r, err := appsearch.Search(ctx, req)
	if err != nil {
		return nil, out, toolError(err, "")
	}
	out.Results = r
	return nil, out, nil
}

// toolError is an operation's error as a tool reports it: its message,
// each problem at its place, its hint, and what its exit code means.
func toolError(err error, then string) error {
	return errors.New(describeReport(app.Report(err), then))
}

// describeReport is an error report as text for an agent.
func describeReport(e app.ErrorReport, then string) string {
	var b strings.Builder
	b.WriteString(e.Error)
	for _, p := range e.Problems {
		fmt.Fprintf(&b, "\n%s: %s", p.Position, p.Message)
		if p.Hint != "" {
			b.WriteString(" (" + p.Hint + ")")
		}
	}
	if e.Hint != "" {
		b.WriteString("\nhint: " + e.Hint)
	}
	fmt.Fprintf(&b, "\n(exit code %d: %s)", e.Code, exitMeaning(e.Code))
	b.WriteString(then)
	return b.String()
}

// exitMeaning says what an exit code of pipeline means (README, "Exit
// codes").
func exitMeaning(code int) string {
	switch code {
	case app.ExitCompleted:
		return "completed"
	case app.ExitFailed:
		return "failed"
	case app.ExitUsage:
		return "usage, spec or environment error; nothing ran"
	case app.ExitPaused:
		return "paused"
	}
	return "unexpected"
}
