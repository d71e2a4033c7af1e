// Package engine is the pure core of pipeline: the decision function from
// (session state, event) to (new state, actions), the events, actions and
// pause reasons, and the Report that status prints. It starts no process,
// opens no file and reads no clock: the drivers around it (engine/local,
// and later watch and the fleet) carry the actions out, and replaying a
// session's events through Decide rebuilds its state. The spec model lives
// in engine/spec, the session service in engine/session.
package engine

import (
	"time"

	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/triggers"
)

// Status is where a session stands.
type Status string

// Session statuses.
const (
	StatusRunning   Status = "running"
	StatusPaused    Status = "paused"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	// StatusSkipped is a phase's only: run --from, --only or resume
	// --phase jumped over it.
	StatusSkipped Status = "skipped"
)

// Pause reasons the engine gives itself; a trigger's own name is the reason
// when a trigger pauses.
const (
	ReasonNeedsHuman      = "needs-human"
	ReasonInterrupted     = "interrupted"
	ReasonPhaseComplete   = "phase-complete"
	ReasonExpressionError = "expression-error"
	ReasonHuman           = "paused-by-human"
	ReasonRateLimit       = "rate-limit"
	ReasonSessionLost     = "session-lost"
	ReasonAgentChanged    = "agent-changed"
	ReasonStoreError      = "store-error" // the session could not be recorded: a full disk, an I/O error
	// ReasonOutOfScope pauses a step that changed files outside its
	// phase's writes globs; ReasonOutOfScopeReverted records, without
	// pausing, that on_out_of_scope: revert put them back.
	ReasonOutOfScope         = "out-of-scope"
	ReasonOutOfScopeReverted = "out-of-scope-reverted"
	ReasonConflicts          = "conflicts" // a resume found conflict markers in files changed while paused
	ReasonRewound            = "rewound"   // pipeline rewind set the session back to a phase's start
	// ReasonRunnerDied is shown, never recorded, for a session marked
	// running whose runner is gone (killed, crashed): resume continues it.
	ReasonRunnerDied = "runner-died"
	// ResumedFromFailure is what a resume of a failed session continued
	// from (Resumption.Firing): no pause, the failure.
	ResumedFromFailure = "failed"
	// ReasonRetry and ReasonNotDone are what an agent step's new attempt
	// continues from (Resumption.Firing), not pauses: the retry policy
	// runs a failed step again; a false done_when runs the phase again.
	ReasonRetry   = "retry"
	ReasonNotDone = "not-done"
)

// StepFailure is how a step failed (see State.Failed).
type StepFailure = spec.StepFailure

// StepAt is the name of the step s stands at in its phase; "" when it is
// past the phase's steps.
func StepAt(plan *spec.Plan, s State) string {
	if steps := plan.Phases[s.Phase].Steps; s.Step >= 0 && s.Step < len(steps) {
		return steps[s.Step].Name
	}
	return ""
}

// RunnerDied is how a session whose runner died shows: paused, reason
// runner-died. It changes nothing stored.
func RunnerDied(s State) State {
	s.Status = StatusPaused
	s.Pause = &Firing{Reason: ReasonRunnerDied,
		Note: "the runner stopped without pausing (killed or crashed); resume continues the session"}
	return s
}

// State is everything the decision function knows of a session. It is
// plain data, written as JSON by the store after every event.
type State struct {
	Status Status `json:"status"`
	// Phase and Step index the plan: the step running, to run next, or
	// that paused.
	Phase int `json:"phase"`
	Step  int `json:"step"`
	// Attempt counts the tries of the current phase, from 1: a retry of a
	// step and a re-run after done_when was false are both new attempts.
	Attempt           int `json:"attempt"`
	Errors            int `json:"errors"`
	ConsecutiveErrors int `json:"consecutive_errors"`

	// StepRunning is set from StartStep to StepFinished; Waiting while a
	// back-off sleeps.
	StepRunning bool `json:"step_running,omitempty"`
	Waiting     bool `json:"waiting,omitempty"`
	// Execution is the number of the latest step (or compaction turn)
	// started in the session, counted from 1 (StartStep.Execution).
	Execution int `json:"execution,omitempty"`

	// AttemptEnded: the session paused because the attempt failed (an
	// escalation to a human, a pause_when that fired on a failed step):
	// the resume starts a new attempt, with a transcript of its own.
	AttemptEnded bool `json:"attempt_ended,omitempty"`

	// Stopping is the trigger (or human) that asked the running step to
	// stop; the pause takes effect when the step has ended.
	Stopping *Firing `json:"stopping,omitempty"`

	Pause      *Firing `json:"pause,omitempty"`
	FailReason string  `json:"fail_reason,omitempty"`
	// ByHand: pipeline complete marked the session done.
	ByHand bool `json:"by_hand,omitempty"`
	// SpecStatus is the last move of the spec's LeanSpec status the
	// session made (or held), spec_status.
	SpecStatus *SpecStatusChange `json:"spec_status,omitempty"`
	// Only: the session ends with its current phase (run --only).
	Only        bool    `json:"only,omitempty"`
	TotalTokens int     `json:"total_tokens"`
	CostUSD     float64 `json:"cost_usd"`
	// SessionElapsed and PhaseElapsed add up the time steps ran, across
	// attempts and resumes.
	SessionElapsed time.Duration `json:"session_elapsed"`
	PhaseElapsed   time.Duration `json:"phase_elapsed"`
	FilesChanged   int           `json:"files_changed"`

	// NativeSessions maps a session key (the agent's feature, or
	// phase/step) to the agent CLI's own session id, for resume.
	NativeSessions map[string]string `json:"native_sessions,omitempty"`
	// NativeAgents holds, per session key, the kind and model that made
	// the native session: another agent never gets its id.
	NativeAgents map[string]string `json:"native_agents,omitempty"`
	// ForkOnly holds the session keys whose native session is the
	// conversation as an earlier phase started, gone on since (a rewind,
	// or a fork's parent): it is resumed only as a fork of that point, and
	// a CLI that cannot fork starts a fresh session instead.
	ForkOnly map[string]bool `json:"fork_only,omitempty"`
	// FreshSession makes the next agent step start a new native session
	// (a restart policy fired).
	FreshSession bool `json:"fresh_session,omitempty"`
	// ResumeContext is owed to the next agent step: the session was
	// resumed, recovered or restarted since the agent last ran.
	ResumeContext bool `json:"resume_context,omitempty"`
	// Resuming is what the owed resume context answers: the pause a
	// resume continued, or the runner's death a recovery continued. The
	// next agent step takes it (StartStep.Resuming); a restart policy
	// owes a context without one.
	Resuming *Resumption `json:"resuming,omitempty"`
	// Steps holds the last result of each step of the current phase.
	Steps map[string]triggers.StepVars `json:"steps,omitempty"`
	// Failed is what failed in the current phase and is not told yet:
	// the next agent step takes it (StartStep.Failed), with a resume
	// context, so that a retry is not the same prompt again. A step that
	// then passes is taken off it; a new phase starts without it.
	Failed []StepFailure `json:"failed,omitempty"`

	Phases []PhaseRecord `json:"phases"`

	// StartCheckpoint is the checkpoint taken when the session started,
	// PauseCheckpoint the one of its latest pause (what the human changed
	// while paused is counted from it).
	StartCheckpoint string `json:"start_checkpoint,omitempty"`
	// Parent is the session this one was forked from (pipeline fork).
	Parent          *Parent `json:"parent,omitempty"`
	PauseCheckpoint string  `json:"pause_checkpoint,omitempty"`
	// ReplayOf is the session this one replays (pipeline replay).
	ReplayOf *ReplayOf `json:"replay_of,omitempty"`

	// PlanDigest is the digest of the plan of the latest start, resume or
	// recovery: the plan the recorded decisions were made with.
	PlanDigest string `json:"plan_digest,omitempty"`

	// WorkingSet is what the session knows beyond one conversation (see
	// WorkingSet).
	WorkingSet WorkingSet `json:"working_set,omitzero"`
	// Compaction is the compaction under way (see Compact): the step's
	// result waits in it for the compaction's end.
	Compaction *PendingCompaction `json:"compaction,omitempty"`
	// Dropped holds the session keys whose native session was dropped on
	// purpose (a restart policy, a compaction) and no other made since:
	// the agent's own copy of it is not adopted again by feature.
	Dropped map[string]bool `json:"dropped,omitempty"`
	// LastContext is, per session key, the agent's context size in
	// tokens as its last turn ended: the history a fresh session's
	// resume context stands for.
	LastContext map[string]int `json:"last_context,omitempty"`
}

// PhaseRecord is the history of one phase. Its zeros are left out of the
// snapshot, so that the phases not reached of a plan of a thousand do
// not weigh on every status.
type PhaseRecord struct {
	Name      string        `json:"name"`
	Status    Status        `json:"status,omitempty"`
	Attempts  int           `json:"attempts,omitempty"`
	Tokens    int           `json:"tokens,omitempty"`
	CostUSD   float64       `json:"cost_usd,omitempty"`
	Duration  time.Duration `json:"duration,omitempty"`
	ExitCodes []int         `json:"exit_codes,omitempty"`
	Fired     []Firing      `json:"fired,omitempty"`
	Restarts  int           `json:"restarts,omitempty"`
	Retries   int           `json:"retries,omitempty"`
	Human     int           `json:"human_interventions,omitempty"`
	Notes     []string      `json:"notes,omitempty"`
	// NativeSession is the agent's own session id last used in the phase.
	NativeSession string `json:"native_session,omitempty"`
	// NativeAtStart is the agent's native sessions as the phase started,
	// per session key: what a rewind to the phase, or a fork at it,
	// resumes as a fork. The phase's first turn in each forks it (where
	// the CLI can), so the conversation behind these ids stays as it was.
	NativeAtStart map[string]NativeRef `json:"native_at_start,omitempty"`
	HeadBefore    string               `json:"head_before,omitempty"`
	// TreeBefore is a git tree of the work tree, uncommitted files
	// included, when the phase started: files_changed counts from it.
	TreeBefore string    `json:"tree_before,omitempty"`
	HeadAfter  string    `json:"head_after,omitempty"`
	Files      []string  `json:"files_changed,omitempty"`
	Started    time.Time `json:"started,omitzero"`
	Ended      time.Time `json:"ended,omitzero"`
	Summary    string    `json:"summary,omitempty"`
	// Checkpoint is the commit that keeps the work tree as the phase left
	// it when it completed (see Checkpointed).
	Checkpoint string `json:"checkpoint,omitempty"`
	// Compactions counts the compactions of the phase (compact_when).
	Compactions int `json:"compactions,omitempty"`
	// Contexts counts the resume contexts sent to the phase's agent
	// steps, ContextTokens their tokens, and ReplacedTokens the tokens of
	// the history they stood for (see StepResult.ContextReplaced).
	Contexts       int `json:"contexts,omitempty"`
	ContextTokens  int `json:"context_tokens,omitempty"`
	ReplacedTokens int `json:"replaced_tokens,omitempty"`
}

// Resumption is why a session was continued: the pause (or the runner's
// death) it was continued from, the phase it stood at then, and the phase
// a resume --phase jumped to.
type Resumption struct {
	Firing   Firing `json:"firing"`
	Phase    string `json:"phase"`
	JumpedTo string `json:"jumped_to,omitempty"`
	// Changed are the files changed in the work tree while the session
	// was paused (Resumed.Changed).
	Changed []string `json:"changed,omitempty"`
	// Notes are the human's notes given with the resume (Resumed.Notes).
	Notes string `json:"notes,omitempty"`
	// RecentOutput, after a compaction, is the end of the last step's
	// output: the fresh session sees where the conversation it replaces
	// stopped.
	RecentOutput string `json:"recent_output,omitempty"`
}

// Firing records a trigger or policy that fired, and the values of the
// variables it read at that moment.
type Firing struct {
	Reason     string         `json:"reason"`
	Expression string         `json:"expression,omitempty"`
	Values     map[string]any `json:"values,omitempty"`
	Note       string         `json:"note,omitempty"`
	At         time.Time      `json:"at"`
	// ResumeAfter is when a rate limit says to come back.
	ResumeAfter *time.Time `json:"resume_after,omitempty"`
}

// NativeRef is one native agent session: the CLI's id and the agent
// (kind/model) that made it.
type NativeRef struct {
	ID    string `json:"id"`
	Agent string `json:"agent,omitempty"`
}

// markDropped records that the native session of key was dropped on
// purpose.
func (s *State) markDropped(key string) {
	if s.Dropped == nil {
		s.Dropped = map[string]bool{}
	}
	s.Dropped[key] = true
}
