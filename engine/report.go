package engine

import (
	"fmt"
	"time"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

// StatusReport is where a session stands, as status prints it; its JSON
// is stable. ID, Pipeline, File, Spec and Created come from the session's
// metadata, which the caller fills in.
type StatusReport struct {
	ID string `json:"id"`
	// Name is the session's name (run --name), when it has one.
	Name        string `json:"name,omitempty"`
	Pipeline    string `json:"pipeline"`
	File        string `json:"file"`
	Spec        string `json:"spec,omitempty"`
	Status      string `json:"status"`
	Phase       string `json:"phase"`
	Step        string `json:"step,omitempty"`
	Attempt     int    `json:"attempt"`
	PauseReason string `json:"pause_reason,omitempty"`
	PauseNote   string `json:"pause_note,omitempty"`
	FailReason  string `json:"fail_reason,omitempty"`
	// Parent is the session this one was forked from.
	Parent *Parent `json:"parent,omitempty"`
	// ReplayOf is the session this one replays, and what it changed.
	ReplayOf *ReplayOf `json:"replay_of,omitempty"`
	// ByHand: pipeline complete marked the session completed.
	ByHand bool `json:"by_hand,omitempty"`
	// SpecStatus is the last move of the spec's status the session
	// made, or why it held it.
	SpecStatus *SpecStatusChange `json:"spec_status,omitempty"`
	Tokens     int               `json:"tokens"`
	CostUSD    float64           `json:"cost_usd"`
	Elapsed    string            `json:"elapsed"`
	// ElapsedMS is Elapsed in milliseconds, for a program to compare.
	ElapsedMS int64 `json:"elapsed_ms"`
	// Pause is what paused the session: the trigger, its expression and
	// the values it read.
	Pause   *Firing       `json:"pause,omitempty"`
	Created time.Time     `json:"created"`
	Phases  []PhaseReport `json:"phases"`
	// Context is the account of the resume contexts and compactions of
	// the whole session.
	Context ContextAccount `json:"context"`
}

// ContextAccount is what resume contexts and compactions saved: Sent
// contexts of SentTokens tokens stood for ReplacedTokens tokens of
// history (of the fresh native sessions they started; a context added to
// a native session that went on replaced nothing). Saved is the share of
// the replaced history not sent, in percent; 0 when nothing was
// replaced, or when the contexts were larger than what they replaced
// (a saving is never negative).
type ContextAccount struct {
	Compactions    int     `json:"compactions"`
	Sent           int     `json:"contexts_sent"`
	SentTokens     int     `json:"context_tokens"`
	ReplacedTokens int     `json:"replaced_tokens"`
	SavedPercent   float64 `json:"saved_percent"`
}

// add counts one phase's record in.
func (a *ContextAccount) add(p PhaseRecord) {
	a.Compactions += p.Compactions
	a.Sent += p.Contexts
	a.SentTokens += p.ContextTokens
	a.ReplacedTokens += p.ReplacedTokens
	if a.ReplacedTokens > 0 {
		a.SavedPercent = max(0, 100*float64(a.ReplacedTokens-a.SentTokens)/float64(a.ReplacedTokens))
	}
}

// PhaseReport is one phase's line of a StatusReport.
type PhaseReport struct {
	Name         string   `json:"name"`
	Status       string   `json:"status"`
	Attempts     int      `json:"attempts"`
	Tokens       int      `json:"tokens"`
	CostUSD      float64  `json:"cost_usd"`
	Duration     string   `json:"duration"`
	DurationMS   int64    `json:"duration_ms"`
	ExitCodes    []int    `json:"exit_codes"`
	Retries      int      `json:"retries"`
	Restarts     int      `json:"restarts"`
	Human        int      `json:"human_interventions"`
	Fired        []Firing `json:"triggers_fired"`
	FilesChanged []string `json:"files_changed"`
	HeadBefore   string   `json:"head_before,omitempty"`
	HeadAfter    string   `json:"head_after,omitempty"`
	// Checkpoint is the commit that keeps the work tree as the phase
	// left it (checkpoint: in phases.yaml).
	Checkpoint    string   `json:"checkpoint,omitempty"`
	NativeSession string   `json:"native_session,omitempty"`
	Notes         []string `json:"notes"`
	Summary       string   `json:"summary,omitempty"`
	// Context is the phase's share of StatusReport.Context.
	Context ContextAccount `json:"context"`
	// SkippedBy is the when: that skipped the phase, and the values it
	// read (see SkippedBy).
	SkippedBy *Firing `json:"skipped_by,omitempty"`
}

// Report projects a session's state onto what status prints. Lists are
// never null in its JSON.
func Report(plan *spec.Plan, s State) StatusReport {
	r := StatusReport{Status: string(s.Status), Attempt: s.Attempt, Tokens: s.TotalTokens, CostUSD: s.CostUSD,
		Elapsed: s.SessionElapsed.Round(time.Second).String(), ElapsedMS: s.SessionElapsed.Milliseconds(), FailReason: s.FailReason,
		Parent: s.Parent, ReplayOf: s.ReplayOf, ByHand: s.ByHand, SpecStatus: s.SpecStatus, Phases: make([]PhaseReport, 0, len(s.Phases))}
	if s.Status == "" {
		r.Status = string(StatusRunning)
	}
	if s.Phase < len(plan.Phases) {
		r.Phase = plan.Phases[s.Phase].Name
		if s.Step < len(plan.Phases[s.Phase].Steps) {
			r.Step = plan.Phases[s.Phase].Steps[s.Step].Name
		}
	}
	if s.Status == StatusPaused && s.Pause != nil {
		r.PauseReason, r.PauseNote = s.Pause.Reason, s.Pause.Note
		pause := *s.Pause
		r.Pause = &pause
	}
	for _, p := range s.Phases {
		pr := PhaseReport{Name: p.Name, Status: string(p.Status), Attempts: p.Attempts, Tokens: p.Tokens, CostUSD: p.CostUSD,
			Duration: p.Duration.Round(time.Millisecond).String(), DurationMS: p.Duration.Milliseconds(), ExitCodes: orEmpty(p.ExitCodes), Retries: p.Retries,
			Restarts: p.Restarts, Human: p.Human, Fired: orEmpty(p.Fired), FilesChanged: orEmpty(p.Files),
			HeadBefore: p.HeadBefore, HeadAfter: p.HeadAfter, Checkpoint: p.Checkpoint, NativeSession: p.NativeSession, Notes: orEmpty(p.Notes),
			Summary: p.Summary, SkippedBy: SkippedBy(p)}
		if pr.Status == "" {
			pr.Status = "pending"
		}
		pr.Context.add(p)
		r.Context.add(p)
		r.Phases = append(r.Phases, pr)
	}
	return r
}

func orEmpty[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}

// CompletedLine is how a completed session's run ends: "completed: 3
// phases" when every phase ran, otherwise how many ran and how many
// were skipped (run --from, run --only, resume --phase, a fork), failed
// and left behind (resume --phase), or never ran (pipeline complete).
func CompletedLine(s State) string {
	statuses := make([]Status, len(s.Phases))
	for i, p := range s.Phases {
		statuses[i] = p.Status
	}
	return completedLine(statuses, s.ByHand)
}

// CompletedLine is the report's CompletedLine.
func (r StatusReport) CompletedLine() string {
	statuses := make([]Status, len(r.Phases))
	for i, p := range r.Phases {
		statuses[i] = Status(p.Status)
	}
	return completedLine(statuses, r.ByHand)
}

func completedLine(statuses []Status, byHand bool) string {
	var ran, skipped, failed, other int
	for _, st := range statuses {
		switch st {
		case StatusCompleted:
			ran++
		case StatusSkipped:
			skipped++
		case StatusFailed:
			failed++
		default:
			other++
		}
	}
	line := "completed"
	if byHand {
		line += " (by hand)"
	}
	if ran == len(statuses) {
		return line + ": " + plural(ran, "phase")
	}
	line += ": " + plural(ran, "phase") + " run"
	for _, n := range []struct {
		count int
		what  string
	}{{failed, "failed"}, {skipped, "skipped"}, {other, "not run"}} {
		if n.count > 0 {
			line += fmt.Sprintf(", %d %s", n.count, n.what)
		}
	}
	return line
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
