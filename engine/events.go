package engine

import (
	"fmt"
	"strings"
	"time"
)

// Event is something that happened to a session. Every event is plain
// data, so the store can append it to the session's log as it comes.
type Event interface{ eventTime() time.Time }

// Started begins a new session. Plan, on Started, Resumed and Recovered,
// is the digest of the plan the run decides with (spec.Plan.Digest), so
// that a replay knows which plan made the decisions it replays.
// From, when set, starts at that phase (run --from): the phases before it
// are skipped; Only runs that phase alone (run --only), the phases after
// it skipped too.
type Started struct {
	At   time.Time
	Plan string `json:",omitempty"`
	From string `json:",omitempty"`
	Only bool   `json:",omitempty"`
	// Parent, on a session pipeline fork started, is the session it
	// branched from.
	Parent *Parent `json:",omitempty"`
	// ReplayOf, on a session pipeline replay started, is the session it
	// replays and what the replay changed.
	ReplayOf *ReplayOf `json:",omitempty"`
}

// ReplayOf is the session a replay replays (its id), and what the replay
// runs differently: the model and the agent kind given on the command
// line (empty: the original's), and the spec file its plan reads when
// the original's spec changed since it started (the copy kept then).
type ReplayOf struct {
	Session string `json:"session"`
	Model   string `json:"model,omitempty"`
	Agent   string `json:"agent,omitempty"`
	Spec    string `json:"spec,omitempty"`
}

// Parent is the session a fork branched from: its id and folder, the
// phase the fork starts at, and the checkpoint (taken before that
// phase) its work tree was made from.
type Parent struct {
	Session    string `json:"session"`
	Dir        string `json:"dir"`
	Phase      string `json:"phase"`
	Checkpoint string `json:"checkpoint"`
	// Native is the parent's native agent sessions as the phase started:
	// the fork's agent resumes them as forks, where the CLI can.
	Native map[string]NativeRef `json:"native,omitempty"`
	// WorkingSet is the parent's working set as of the phases before the
	// fork's (and what humans pinned): the fork starts knowing it.
	WorkingSet *WorkingSet `json:"working_set,omitempty"`
}

// StepFinished is the end of the running step. Execution is the
// StartStep's (see State.Execution); 0, in a session recorded before
// executions were numbered, is taken for the step running.
type StepFinished struct {
	At        time.Time
	Result    StepResult
	Execution int `json:",omitempty"`
}

// StepResult is what a step left behind.
type StepResult struct {
	ExitCode       int           `json:"exit_code"`
	TimedOut       bool          `json:"timed_out,omitempty"`
	Stopped        bool          `json:"stopped,omitempty"`
	Tokens         int           `json:"tokens"`
	InputTokens    int           `json:"input_tokens,omitempty"`  // of Tokens, what the agent read
	OutputTokens   int           `json:"output_tokens,omitempty"` // of Tokens, what it wrote
	ContextTokens  int           `json:"context_tokens,omitempty"`
	CostUSD        float64       `json:"cost_usd,omitempty"`
	Elapsed        time.Duration `json:"elapsed"`
	Output         string        `json:"output,omitempty"`
	Checkpoint     bool          `json:"checkpoint,omitempty"`
	CheckpointNote string        `json:"checkpoint_note,omitempty"`
	SessionID      string        `json:"session_id,omitempty"`
	FilesChanged   int           `json:"files_changed,omitempty"`
	// Files and Head come from git when the work folder is a repository:
	// the files changed since the phase started, and HEAD now.
	Files      []string `json:"files,omitempty"`
	Head       string   `json:"head,omitempty"`
	HeadBefore string   `json:"head_before,omitempty"`
	// TreeBefore is the snapshot of the work tree when the phase started
	// (see PhaseRecord.TreeBefore).
	TreeBefore string `json:"tree_before,omitempty"`
	// OutOfScope are the files (named from the folder of phases.yaml)
	// the step changed outside its phase's writes globs; Reverted, that
	// they were put back as they were before the step.
	OutOfScope []string `json:"out_of_scope,omitempty"`
	Reverted   bool     `json:"reverted,omitempty"`
	// Agent is the kind and model that ran, "claude/sonnet".
	Agent string `json:"agent,omitempty"`
	// SessionLost: the CLI said the native session to resume is gone.
	SessionLost bool `json:"session_lost,omitempty"`
	// RateLimited: the vendor refused for now; ResumeAfter is when it
	// said to come back, when it said.
	RateLimited bool      `json:"rate_limited,omitempty"`
	ResumeAfter time.Time `json:"resume_after,omitempty"`
	// Error is what the agent reported as its error, if anything.
	Error string `json:"error,omitempty"`
	// NotStarted: the step's program could not be started (not found, not
	// executable); Error says why. Retrying cannot help: the phase fails.
	NotStarted bool `json:"not_started,omitempty"`
	// ContextSent is the tokens of the resume context the step's prompt
	// began with (0: none); ContextReplaced the tokens of the history it
	// stood for: the agent's last context size (or, when the agent
	// reports none, the session's tokens so far) when the step started a
	// fresh native session, 0 when it went on in the native one, which
	// keeps its history.
	ContextSent     int `json:"context_sent,omitempty"`
	ContextReplaced int `json:"context_replaced,omitempty"`
	// Leftovers are the processes the step left running when it exited
	// (killed then), "pid (command)"; OutputHeld, that one of them kept
	// its output open.
	Leftovers  []string `json:"leftovers,omitempty"`
	OutputHeld bool     `json:"output_held,omitempty"`
}

// TriggerFired is a pause_when trigger that became true while a step
// ran: the step of Execution (0: the step running, as StepFinished's).
type TriggerFired struct {
	At        time.Time
	Firing    Firing
	Execution int `json:",omitempty"`
}

// TimerExpired ends a back-off.
type TimerExpired struct{ At time.Time }

// PauseRequested asks the session to pause: Ctrl+C, SIGTERM or pause.
type PauseRequested struct {
	At     time.Time
	Reason string
	Notes  string
}

// Resumed continues a paused or failed session (a failed one at the step
// that failed); Phase, when set, jumps to that phase.
type Resumed struct {
	At    time.Time
	Notes string
	Phase string
	Plan  string `json:",omitempty"`
	// Changed are the files the work tree changed in while the session
	// was paused (since its pause checkpoint): what the human did.
	Changed []string `json:",omitempty"`
	// Conflicts are those that hold conflict markers: the session stays
	// paused (reason conflicts) until they are resolved.
	Conflicts []string `json:",omitempty"`
	// Head and Tree are the work tree as the resume found it (the
	// snapshot that found Changed): a phase that starts here counts its
	// files_changed from them, with no second snapshot on the way to its
	// first step.
	Head string `json:",omitempty"`
	Tree string `json:",omitempty"`
}

// Recovered continues a session whose runner died (killed, crashed, the
// machine rebooted) while it was running: the step it was running, if any,
// runs again. With NewAttempt it runs as the phase's next attempt: a fleet
// worker was lost mid-step, and the attempt it ran counts (attempt in
// escalate_when sees it), as a failed one would.
type Recovered struct {
	At         time.Time
	Plan       string `json:",omitempty"`
	NewAttempt bool   `json:",omitempty"`
}

// PlanChanged switches a live session to another plan (phases.yaml or
// the spec's frontmatter changed while it ran under pipeline watch): the
// decisions from the next event on are the new plan's. Its phases are
// the same, in the same order; only what they do changed.
type PlanChanged struct {
	At   time.Time
	Plan string `json:",omitempty"`
}

// Noted adds a human's notes to a paused session.
type Noted struct {
	At    time.Time
	Notes string
}

// Completed marks a session done by hand.
type Completed struct{ At time.Time }

// SpecStatusChanged records that the session moved its spec's LeanSpec
// status (spec_status), or why it held it: a draft, unchecked checklist
// items, a spec that could not be written. The session wrote the file
// before recording it; Decide only keeps it for status.
type SpecStatusChanged struct {
	At     time.Time
	Change SpecStatusChange
	// Plan is the digest of the plan with the spec as written: its
	// frontmatter changed, so the plan's name did ("" when unchanged).
	Plan string `json:",omitempty"`
}

// SpecStatusChange is the last move of a session's spec status: From and
// To (equal when Held says why it did not move), and the unchecked
// checklist items that held it at completion.
type SpecStatusChange struct {
	Spec      string    `json:"spec"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	At        time.Time `json:"at"`
	Held      string    `json:"held,omitempty"`
	Unchecked []string  `json:"unchecked,omitempty"`
}

// Checkpoint kinds: when a checkpoint was taken.
const (
	CheckpointStart = "start" // the session started
	CheckpointPhase = "phase" // a phase completed
	CheckpointPause = "pause" // the session paused
)

// Checkpointed records a snapshot of the work tree kept by git (a commit
// under refs/pipeline/<session>/, or on the branch with checkpoint:
// commit): Kind says when, Phase which phase it follows or paused in.
type Checkpointed struct {
	At     time.Time
	Kind   string
	Phase  int
	Commit string
}

// Rewound sets the session back to the start of Phase, as a new attempt,
// after pipeline rewind restored the work tree to Checkpoint (the one
// taken before the phase). Rescued is the ref that keeps what the work
// tree held that no checkpoint did (rewind --force). Nothing recorded
// before is deleted: the rewind is one more intervention in the history.
type Rewound struct {
	At         time.Time
	Phase      string
	Checkpoint string `json:",omitempty"`
	Rescued    string `json:",omitempty"`
}

func (e Started) eventTime() time.Time           { return e.At }
func (e StepFinished) eventTime() time.Time      { return e.At }
func (e TriggerFired) eventTime() time.Time      { return e.At }
func (e TimerExpired) eventTime() time.Time      { return e.At }
func (e PauseRequested) eventTime() time.Time    { return e.At }
func (e Resumed) eventTime() time.Time           { return e.At }
func (e Recovered) eventTime() time.Time         { return e.At }
func (e PlanChanged) eventTime() time.Time       { return e.At }
func (e Noted) eventTime() time.Time             { return e.At }
func (e Completed) eventTime() time.Time         { return e.At }
func (e SpecStatusChanged) eventTime() time.Time { return e.At }
func (e Checkpointed) eventTime() time.Time      { return e.At }
func (e Rewound) eventTime() time.Time           { return e.At }

// Action is what the decision function asks the runner to do.
type Action interface{ isAction() }

// StartStep runs step Step of phase Phase. SessionID, when set, is the
// agent's native session to resume.
type StartStep struct {
	Phase, Step int
	Attempt     int
	// Execution numbers this run of a step in the session (State.Execution):
	// the events of the step (TriggerFired, StepFinished) carry it, so
	// that one delivered after its step ended is known and dropped.
	Execution  int `json:",omitempty"`
	SessionKey string
	SessionID  string
	// Fork resumes SessionID as a new native session branched from it,
	// leaving it as it was (Claude Code's --fork-session, codex exec
	// fork): the first turn of a phase in a session an earlier phase
	// made, so that a rewind to the phase can go back to it. A CLI that
	// cannot fork resumes it.
	Fork bool
	// ForkOnly, with Fork: SessionID is the conversation as the phase
	// started and has gone on since (after a rewind, or in a fork): a CLI
	// that cannot fork starts a fresh session instead (the resume context
	// is owed).
	ForkOnly bool
	// ResumeContext asks for the resume context in the prompt: the first
	// agent step after a resume, a recovery or a restart.
	ResumeContext bool
	// Resuming, with ResumeContext, is the pause or the runner's death
	// the session was continued from; nil after a restart policy.
	Resuming *Resumption
	// Failed, with ResumeContext, is what failed before this attempt
	// (State.Failed): the resume context says it.
	Failed []StepFailure
	// Recover asks the runner to look for the agent's own session of this
	// feature (the store has none: it was lost or deleted), and adopt it.
	Recover bool
	// Note says why the native session changed, for the view.
	Note string
}

// StopStep stops the running step gracefully.
type StopStep struct{ Reason string }

// Sleep waits before the next action (a retry's back-off); the runner
// answers with TimerExpired.
type Sleep struct{ Duration time.Duration }

// DropSession forgets the agent's native session under Key: the next
// attempt starts fresh with the resume context.
type DropSession struct{ Key string }

// Pause ends the run with the session paused.
type Pause struct{ Firing Firing }

// Complete ends the run with every phase done.
type Complete struct{}

// Fail ends the run with the session failed.
type Fail struct{ Reason string }

// Checkpoint asks the runner to keep the work tree in git, before any
// step that follows starts: a commit under refs/pipeline/<session>/Name,
// or on the branch when Commit (checkpoint: commit, a phase's end). Kind
// says when (CheckpointStart, CheckpointPhase, CheckpointPause) and Phase
// which phase (-1 for the start; PhaseName its name). The runner answers
// with Checkpointed, or says why git could not make it.
type Checkpoint struct {
	Kind      string
	Phase     int
	PhaseName string `json:",omitempty"`
	Name      string
	Commit    bool `json:",omitempty"`
}

// Message is the checkpoint's commit message in session id's history.
func (c Checkpoint) Message(id string) string {
	switch c.Kind {
	case CheckpointStart:
		return fmt.Sprintf("pipeline: session %s started", id)
	case CheckpointPause:
		return fmt.Sprintf("pipeline: session %s paused in phase %s", id, c.PhaseName)
	}
	return fmt.Sprintf("pipeline: phase %s completed (session %s)", c.PhaseName, id)
}

// CheckpointName names the checkpoint of phase i (from 0): 01-design.
// A phase name's characters that a ref may not hold become -.
func CheckpointName(i int, phase string) string {
	safe := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, phase)
	return fmt.Sprintf("%02d-%s", i+1, safe)
}

// RunHooks asks the runner to run the plan's on: commands for Events
// (HookEvents: where the session stopped), in the folder of phases.yaml,
// each bounded by its timeout. It comes just before the Pause, Complete
// or Fail that ends the run, and only when the plan has commands for
// those events. Nothing comes back: a hook changes nothing of the
// session.
type RunHooks struct{ Events []string }

// TakeMemory asks the runner to take the changes to the working set a
// human left for the session (pipeline memory pin, task add …) before the
// step that follows starts, so that its prompt has them: the runner
// answers with a Remembered event for each.
type TakeMemory struct{}

func (StartStep) isAction()   {}
func (Checkpoint) isAction()  {}
func (RunHooks) isAction()    {}
func (TakeMemory) isAction()  {}
func (StopStep) isAction()    {}
func (Sleep) isAction()       {}
func (DropSession) isAction() {}
func (Pause) isAction()       {}
func (Complete) isAction()    {}
func (Fail) isAction()        {}

// HookTimeout bounds each on: hook when the driver sets no other bound:
// a hook tells somebody, and must not hold the run's end for long.
const HookTimeout = 30 * time.Second
