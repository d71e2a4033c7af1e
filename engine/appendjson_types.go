package engine

import (
	"slices"
	"strconv"

	"github.com/pipeline-dev/pipeline/triggers"
)

// AppendJSON appends the event's JSON, as encoding/json writes it.
func (e Started) AppendJSON(b []byte) ([]byte, error) {
	o := jsonObject{b: slices.Grow(b, 256)}
	o.time("At", e.At, false)
	o.str("Plan", e.Plan, true)
	o.str("From", e.From, true)
	o.bool("Only", e.Only, true)
	o.marshal("Parent", e.Parent, e.Parent == nil)
	o.marshal("ReplayOf", e.ReplayOf, e.ReplayOf == nil)
	return o.end(e)
}

// AppendJSON appends the event's JSON, as encoding/json writes it.
func (e StepFinished) AppendJSON(b []byte) ([]byte, error) {
	o := jsonObject{b: slices.Grow(b, 256)}
	o.time("At", e.At, false)
	o.key("Result")
	o.nested(e.Result.appendFields)
	o.int("Execution", int64(e.Execution), true)
	return o.end(e)
}

// AppendJSON appends the event's JSON, as encoding/json writes it.
func (e Completed) AppendJSON(b []byte) ([]byte, error) {
	o := jsonObject{b: slices.Grow(b, 256)}
	o.time("At", e.At, false)
	return o.end(e)
}

// AppendJSON appends the event's JSON, as encoding/json writes it.
func (e Checkpointed) AppendJSON(b []byte) ([]byte, error) {
	o := jsonObject{b: slices.Grow(b, 256)}
	o.time("At", e.At, false)
	o.str("Kind", e.Kind, false)
	o.int("Phase", int64(e.Phase), false)
	o.str("Commit", e.Commit, false)
	return o.end(e)
}

func (r StepResult) appendFields(o *jsonObject) {
	o.int("exit_code", int64(r.ExitCode), false)
	o.bool("timed_out", r.TimedOut, true)
	o.bool("stopped", r.Stopped, true)
	o.int("tokens", int64(r.Tokens), false)
	o.int("input_tokens", int64(r.InputTokens), true)
	o.int("output_tokens", int64(r.OutputTokens), true)
	o.int("context_tokens", int64(r.ContextTokens), true)
	o.float("cost_usd", r.CostUSD, true)
	o.int("elapsed", int64(r.Elapsed), false)
	o.str("output", r.Output, true)
	o.bool("checkpoint", r.Checkpoint, true)
	o.str("checkpoint_note", r.CheckpointNote, true)
	o.str("session_id", r.SessionID, true)
	o.int("files_changed", int64(r.FilesChanged), true)
	o.strings("files", r.Files, true)
	o.str("head", r.Head, true)
	o.str("head_before", r.HeadBefore, true)
	o.str("tree_before", r.TreeBefore, true)
	o.strings("out_of_scope", r.OutOfScope, true)
	o.bool("reverted", r.Reverted, true)
	o.str("agent", r.Agent, true)
	o.bool("session_lost", r.SessionLost, true)
	o.bool("rate_limited", r.RateLimited, true)
	o.time("resume_after", r.ResumeAfter, false) // omitempty keeps a struct
	o.str("error", r.Error, true)
	o.bool("not_started", r.NotStarted, true)
	o.int("context_sent", int64(r.ContextSent), true)
	o.int("context_replaced", int64(r.ContextReplaced), true)
	o.strings("leftovers", r.Leftovers, true)
	o.bool("output_held", r.OutputHeld, true)
}

// AppendJSON appends the state's JSON, as encoding/json writes it: a
// snapshot.
func (s State) AppendJSON(b []byte) ([]byte, error) {
	o := jsonObject{b: slices.Grow(b, 1024)}
	s.appendRun(&o)
	s.appendSessions(&o)
	s.appendHistory(&o)
	return o.end(s)
}

// appendRun writes where the state stands and what it used.
func (s *State) appendRun(o *jsonObject) {
	o.str("status", string(s.Status), false)
	o.int("phase", int64(s.Phase), false)
	o.int("step", int64(s.Step), false)
	o.int("attempt", int64(s.Attempt), false)
	o.int("errors", int64(s.Errors), false)
	o.int("consecutive_errors", int64(s.ConsecutiveErrors), false)
	o.bool("step_running", s.StepRunning, true)
	o.bool("waiting", s.Waiting, true)
	o.int("execution", int64(s.Execution), true)
	o.bool("attempt_ended", s.AttemptEnded, true)
	o.marshal("stopping", s.Stopping, s.Stopping == nil)
	o.marshal("pause", s.Pause, s.Pause == nil)
	o.str("fail_reason", s.FailReason, true)
	o.bool("by_hand", s.ByHand, true)
	o.marshal("spec_status", s.SpecStatus, s.SpecStatus == nil)
	o.bool("only", s.Only, true)
	o.int("total_tokens", int64(s.TotalTokens), false)
	o.float("cost_usd", s.CostUSD, false)
	o.int("session_elapsed", int64(s.SessionElapsed), false)
	o.int("phase_elapsed", int64(s.PhaseElapsed), false)
	o.int("files_changed", int64(s.FilesChanged), false)
}

// appendSessions writes the agents' native sessions and the steps' values.
func (s *State) appendSessions(o *jsonObject) {
	stringMap(o, "native_sessions", s.NativeSessions, true, func(v string) { o.b = appendJSONString(o.b, v) })
	stringMap(o, "native_agents", s.NativeAgents, true, func(v string) { o.b = appendJSONString(o.b, v) })
	stringMap(o, "fork_only", s.ForkOnly, true, func(v bool) { o.b = strconv.AppendBool(o.b, v) })
	o.bool("fresh_session", s.FreshSession, true)
	o.bool("resume_context", s.ResumeContext, true)
	o.marshal("resuming", s.Resuming, s.Resuming == nil)
	stringMap(o, "steps", s.Steps, true, func(v triggers.StepVars) { o.nested(func(in *jsonObject) { appendStepVars(in, v) }) })
	o.marshal("failed", s.Failed, len(s.Failed) == 0)
}

// appendHistory writes the phases and what the session keeps of its past.
func (s *State) appendHistory(o *jsonObject) {
	o.key("phases")
	if s.Phases == nil {
		o.b = append(o.b, "null"...)
	} else {
		o.b = append(o.b, '[')
		for i := range s.Phases {
			if i > 0 {
				o.b = append(o.b, ',')
			}
			o.nested(s.Phases[i].appendFields)
		}
		o.b = append(o.b, ']')
	}
	o.str("start_checkpoint", s.StartCheckpoint, true)
	o.marshal("parent", s.Parent, s.Parent == nil)
	o.str("pause_checkpoint", s.PauseCheckpoint, true)
	o.marshal("replay_of", s.ReplayOf, s.ReplayOf == nil)
	o.str("plan_digest", s.PlanDigest, true)
	o.marshal("working_set", s.WorkingSet, isZero(s.WorkingSet))
	o.marshal("compaction", s.Compaction, s.Compaction == nil)
	stringMap(o, "dropped", s.Dropped, true, func(v bool) { o.b = strconv.AppendBool(o.b, v) })
	stringMap(o, "last_context", s.LastContext, true, func(v int) { o.b = strconv.AppendInt(o.b, int64(v), 10) })
}

func appendStepVars(o *jsonObject, v triggers.StepVars) {
	o.int("ExitCode", int64(v.ExitCode), false)
	o.bool("TimedOut", v.TimedOut, false)
	o.int("Tokens", int64(v.Tokens), false)
	o.float("CostUSD", v.CostUSD, false)
	o.int("Elapsed", int64(v.Elapsed), false)
	o.str("Output", v.Output, false)
	o.bool("Ran", v.Ran, false)
}

func (p *PhaseRecord) appendFields(o *jsonObject) {
	o.str("name", p.Name, false)
	o.str("status", string(p.Status), true)
	o.int("attempts", int64(p.Attempts), true)
	o.int("tokens", int64(p.Tokens), true)
	o.float("cost_usd", p.CostUSD, true)
	o.int("duration", int64(p.Duration), true)
	if len(p.ExitCodes) > 0 {
		o.key("exit_codes")
		o.b = append(o.b, '[')
		for i, c := range p.ExitCodes {
			if i > 0 {
				o.b = append(o.b, ',')
			}
			o.b = strconv.AppendInt(o.b, int64(c), 10)
		}
		o.b = append(o.b, ']')
	}
	o.marshal("fired", p.Fired, len(p.Fired) == 0)
	o.int("restarts", int64(p.Restarts), true)
	o.int("retries", int64(p.Retries), true)
	o.int("human_interventions", int64(p.Human), true)
	o.strings("notes", p.Notes, true)
	o.str("native_session", p.NativeSession, true)
	stringMap(o, "native_at_start", p.NativeAtStart, true, func(v NativeRef) {
		o.nested(func(in *jsonObject) {
			in.str("id", v.ID, false)
			in.str("agent", v.Agent, true)
		})
	})
	o.str("head_before", p.HeadBefore, true)
	o.str("tree_before", p.TreeBefore, true)
	o.str("head_after", p.HeadAfter, true)
	o.strings("files_changed", p.Files, true)
	o.time("started", p.Started, true)
	o.time("ended", p.Ended, true)
	o.str("summary", p.Summary, true)
	o.str("checkpoint", p.Checkpoint, true)
	o.int("compactions", int64(p.Compactions), true)
	o.int("contexts", int64(p.Contexts), true)
	o.int("context_tokens", int64(p.ContextTokens), true)
	o.int("replaced_tokens", int64(p.ReplacedTokens), true)
}
