package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// ---- inputs and outputs: their JSON Schemas are inferred from them ----

// Target names a pipeline or one of its sessions.
type Target struct {
	Session string `json:"session,omitempty" jsonschema:"the session id (the sessions tool lists them); default: the latest session of the pipeline and spec"`
	Pipeline
}

// Pipeline names a pipeline and its spec, as the tools take them.
type Pipeline struct {
	File string `json:"file,omitempty" jsonschema:"the pipeline's phases.yaml, relative to the server's folder; default phases.yaml"`
	Spec string `json:"spec,omitempty" jsonschema:"the spec file whose frontmatter overrides phases.yaml (relative to the server's folder); default: the spec phases.yaml names"`
}

type ValidateInput struct {
	Files []string `json:"files,omitempty" jsonschema:"phases.yaml files, or .md specs (their frontmatter), relative to the server's folder; default phases.yaml"`
}

type ValidateOutput struct {
	Valid bool `json:"valid"`
	// ExitCode is pipeline validate's: 0 valid, 2 not.
	ExitCode int          `json:"exit_code" jsonschema:"pipeline validate's exit code: 0 every file is valid, 2 a problem was found"`
	Files    []Validation `json:"files"`
}

// Validation is one file's outcome, as pipeline validate -o json prints it.
type Validation struct {
	File     string         `json:"file"`
	Valid    bool           `json:"valid"`
	Phases   int            `json:"phases,omitempty"`
	Spec     string         `json:"spec,omitempty"`
	Problems []spec.Problem `json:"problems" jsonschema:"every problem, each at its file, line and column"`
	Warnings []spec.Problem `json:"warnings,omitempty"`
	Omitted  int            `json:"omitted,omitempty"`
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
	engine.StatusReport
	Live *LiveReport `json:"live,omitempty"`
	// RunExitCode is what pipeline run or resume exits with for this
	// status.
	RunExitCode *int   `json:"run_exit_code,omitempty" jsonschema:"the exit code a run ends with for this status: 0 completed, 1 failed, 3 paused; absent while it runs"`
	Resume      string `json:"resume_command,omitempty" jsonschema:"the command that resumes it, when it is paused or failed"`
}

// LiveReport is the running step's progress.
type LiveReport struct {
	Updated       time.Time `json:"updated"`
	Step          string    `json:"step"`
	StepTokens    int       `json:"step_tokens"`
	StepElapsed   string    `json:"step_elapsed"`
	StepElapsedMS int64     `json:"step_elapsed_ms"`
}

type SessionsInput struct {
	File   string `json:"file,omitempty" jsonschema:"only the sessions of this phases.yaml; default: every pipeline below the server's folder"`
	Active bool   `json:"active,omitempty" jsonschema:"only sessions not finished: running or paused"`
	Status string `json:"status,omitempty" jsonschema:"only sessions with this status: running, paused, completed or failed"`
}

type SessionsOutput struct {
	Sessions []SessionLine `json:"sessions"`
}

// SessionLine is one session as pipeline sessions -o json lists it.
type SessionLine struct {
	store.Summary
	Queued bool `json:"queued,omitempty"`
}

type LogsInput struct {
	Target
	Phase   string `json:"phase,omitempty" jsonschema:"only this phase"`
	Attempt int    `json:"attempt,omitempty" jsonschema:"only this attempt (1, 2, ...)"`
	Lines   int    `json:"lines,omitempty" jsonschema:"at most this many lines, the last ones (default 100, at most 2000)"`
	Bytes   int    `json:"bytes,omitempty" jsonschema:"at most this many bytes, the last ones (default 16384, at most 262144)"`
}

type LogsOutput struct {
	Session     string           `json:"session"`
	Transcripts []TranscriptTail `json:"transcripts"`
	// Truncated: earlier output was left out by the caps.
	Truncated bool `json:"truncated"`
}

// TranscriptTail is the end of one step's transcript.
type TranscriptTail struct {
	Transcript string `json:"transcript" jsonschema:"phase/attempt-step.log"`
	Phase      string `json:"phase"`
	Attempt    int    `json:"attempt"`
	Step       string `json:"step"`
	Size       int64  `json:"size"`
	Text       string `json:"text"`
	Truncated  bool   `json:"truncated,omitempty"`
	Resource   string `json:"resource" jsonschema:"its resource URI"`
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
	if len(files) == 0 {
		files = []string{"phases.yaml"}
	}
	args := []string{"validate"}
	for _, f := range files {
		path, err := s.root.file("file", f, "phases.yaml")
		if err != nil {
			return nil, out, err
		}
		args = append(args, s.root.rel(path))
	}
	r, err := s.cli(ctx, s.root.root, args...)
	if err != nil {
		return nil, out, err
	}
	if json.Unmarshal(r.stdout, &out) != nil || out.Files == nil {
		return nil, out, r.failure("")
	}
	out.ExitCode = r.code
	return nil, out, nil
}

func (s *Server) plan(ctx context.Context, _ *mcp.CallToolRequest, in PlanInput) (*mcp.CallToolResult, PlanOutput, error) {
	var out PlanOutput
	path, specPath, err := s.root.pipeline(in.Pipeline)
	if err != nil {
		return nil, out, err
	}
	args := []string{"plan", s.root.rel(path)}
	if specPath != "" {
		args = append(args, "--spec", s.root.rel(specPath))
	}
	r, err := s.cli(ctx, s.root.root, args...)
	if err != nil {
		return nil, out, err
	}
	if r.code != 0 {
		return nil, out, r.failure("\nCall validate for every problem of the file.")
	}
	out.File = s.root.rel(path)
	return nil, out, r.decode(&out.Plan, "")
}

func (s *Server) status(ctx context.Context, _ *mcp.CallToolRequest, in StatusInput) (*mcp.CallToolResult, StatusOutput, error) {
	out, err := s.statusOf(ctx, in.Target)
	return nil, out, err
}

// statusOf runs pipeline status for the session of t.
func (s *Server) statusOf(ctx context.Context, t Target) (StatusOutput, error) {
	var out StatusOutput
	dir, args, err := s.target(t)
	if err != nil {
		return out, err
	}
	r, err := s.cli(ctx, dir, append([]string{"status"}, args...)...)
	if err != nil {
		return out, err
	}
	if r.code != 0 {
		return out, r.failure("\nCall sessions to list the sessions below " + s.root.root + ".")
	}
	if err := r.decode(&out, ""); err != nil {
		return out, err
	}
	code := -1
	switch engine.Status(out.Status) {
	case engine.StatusCompleted:
		code = 0
	case engine.StatusFailed:
		code = 1
	case engine.StatusPaused:
		code = 3
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

// target is the folder and arguments that name t's session to a
// command: its id (found below the root), or its pipeline and spec.
func (s *Server) target(t Target) (dir string, args []string, err error) {
	if t.Session != "" {
		f, err := s.root.session(t.Session, t.File)
		if err != nil {
			return "", nil, err
		}
		dir, args := s.pipelineArgs(f)
		return dir, append([]string{f.meta.ID}, args...), nil
	}
	path, err := s.root.file("file", t.File, "phases.yaml")
	if err != nil {
		return "", nil, err
	}
	if _, err := s.root.storeDir(path); err != nil {
		return "", nil, err
	}
	args = []string{"--file", s.root.rel(path)}
	if t.Spec != "" {
		specPath, err := s.root.file("spec", t.Spec, "")
		if err != nil {
			return "", nil, err
		}
		args = append(args, "--spec", s.root.rel(specPath))
	}
	return s.root.root, args, nil
}

func (s *Server) pause(ctx context.Context, _ *mcp.CallToolRequest, in PauseInput) (*mcp.CallToolResult, PauseOutput, error) {
	var out PauseOutput
	s.settleSession(in.Target)
	dir, args, err := s.target(in.Target)
	if err != nil {
		return nil, out, err
	}
	args = append([]string{"pause"}, args...)
	if in.Notes != "" {
		args = append(args, "--notes", in.Notes)
	}
	r, err := s.cli(ctx, dir, append(args, "--wait", "30s")...)
	if err != nil {
		return nil, out, err
	}
	if r.code != 0 {
		return nil, out, r.failure("\nCall status to see where the session stands.")
	}
	if err := r.decode(&out, ""); err != nil {
		return nil, out, err
	}
	out.ExitCode = r.code
	out.Next = "call resume with the session id (and notes) to continue it"
	return nil, out, nil
}

func (s *Server) sessions(ctx context.Context, _ *mcp.CallToolRequest, in SessionsInput) (*mcp.CallToolResult, SessionsOutput, error) {
	var out SessionsOutput
	args := []string{"sessions"}
	if in.File == "" {
		args = append(args, "--all")
	} else {
		path, err := s.root.file("file", in.File, "phases.yaml")
		if err != nil {
			return nil, out, err
		}
		if _, err := s.root.storeDir(path); err != nil {
			return nil, out, err
		}
		args = append(args, "--file", s.root.rel(path))
	}
	if in.Active {
		args = append(args, "--active")
	}
	if in.Status != "" {
		args = append(args, "--status", in.Status)
	}
	r, err := s.cli(ctx, s.root.root, args...)
	if err != nil {
		return nil, out, err
	}
	if r.code != 0 {
		return nil, out, r.failure("")
	}
	if err := r.decode(&out.Sessions, ""); err != nil {
		return nil, out, err
	}
	if out.Sessions == nil {
		out.Sessions = []SessionLine{}
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
	dir, args, err := s.target(t)
	if err != nil {
		return nil, out, err
	}
	// A session's id is an argument of memory, --session of its
	// subcommands.
	if t.Session != "" && edits > 0 {
		args = append([]string{"--session"}, args...)
	}
	if in.Project {
		args = append(args, "--project")
	}
	switch {
	case in.Pin != "":
		out.Action, args = "pin", append([]string{"memory", "pin", in.Pin}, args...)
	case in.TaskAdd != "":
		out.Action, args = "task add", append([]string{"memory", "task", "add", in.TaskAdd}, args...)
	case in.TaskDone != "":
		out.Action, args = "task done", append([]string{"memory", "task", "done", in.TaskDone}, args...)
	default:
		args = append([]string{"memory"}, args...)
	}
	r, err := s.cli(ctx, dir, args...)
	if err != nil {
		return nil, out, err
	}
	if r.code != 0 {
		return nil, out, r.failure("")
	}
	return nil, out, r.decode(&out.Memory, "")
}

func (s *Server) search(ctx context.Context, _ *mcp.CallToolRequest, in SearchInput) (*mcp.CallToolResult, SearchOutput, error) {
	var out SearchOutput
	if strings.TrimSpace(in.Query) == "" {
		return nil, out, fmt.Errorf("search needs a query: the words to look for, e.g. {\"query\": \"flaky test\"}")
	}
	var (
		dir  string
		args []string
	)
	if in.Session != "" {
		f, err := s.root.session(in.Session, in.File)
		if err != nil {
			return nil, out, err
		}
		dir, args = s.pipelineArgs(f)
		args = append(args, "--session", f.meta.ID)
	} else {
		path, err := s.root.file("file", in.File, "phases.yaml")
		if err != nil {
			return nil, out, err
		}
		if _, err := s.root.storeDir(path); err != nil {
			return nil, out, err
		}
		dir, args = filepath.Dir(path), []string{"--file", filepath.Base(path)}
	}
	if in.Phase != "" {
		args = append(args, "--phase", in.Phase)
	}
	if in.Since != "" {
		args = append(args, "--since", in.Since)
	}
	if in.Limit > 0 {
		args = append(args, "--limit", fmt.Sprint(in.Limit))
	}
	// The query last, after --: words that start with - are words.
	args = append(append([]string{"search"}, args...), "--", in.Query)
	r, err := s.cli(ctx, dir, args...)
	if err != nil {
		return nil, out, err
	}
	if r.code != 0 {
		return nil, out, r.failure("")
	}
	return nil, out, r.decode(&out.Results, "")
}
