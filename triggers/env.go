// Package triggers compiles the expressions written in phases.yaml (pause,
// restart, retry and done conditions, back-off durations) against the typed
// environment a running step exposes, and evaluates them.
package triggers

import (
	"reflect"
	"time"

	"github.com/pipeline-dev/pipeline/internal/lazy"
)

// Env is what an expression can read. Every field is documented in
// docs/expressions.md; the expr tag is the name used in phases.yaml.
type Env struct {
	Tokens            int                 `expr:"tokens"`
	ContextTokens     int                 `expr:"context_tokens"`
	TotalTokens       int                 `expr:"total_tokens"`
	CostUSD           float64             `expr:"cost_usd"`
	Elapsed           time.Duration       `expr:"elapsed"`
	PhaseElapsed      time.Duration       `expr:"phase_elapsed"`
	SessionElapsed    time.Duration       `expr:"session_elapsed"`
	ExitCode          int                 `expr:"exit_code"`
	TimedOut          bool                `expr:"timed_out"`
	Checkpoint        bool                `expr:"checkpoint"`
	CheckpointNote    string              `expr:"checkpoint_note"`
	Output            string              `expr:"output"`
	Errors            int                 `expr:"errors"`
	ConsecutiveErrors int                 `expr:"consecutive_errors"`
	Attempt           int                 `expr:"attempt"`
	Phase             string              `expr:"phase"`
	Step              string              `expr:"step"`
	Steps             map[string]StepVars `expr:"steps"`
	FilesChanged      int                 `expr:"files_changed"`
	FilesOutOfScope   int                 `expr:"files_out_of_scope"`
	Spec              map[string]any      `expr:"spec"`
	// Phases is read only by a phase's when: (kind When), before the
	// phase runs; the expressions of a running step cannot read it.
	Phases map[string]PhaseVars `expr:"phases"`
}

// PhaseVars is what a phase's when: reads of another phase, as
// phases.<name>.<field>: every phase of the plan is there, "pending"
// until it is reached.
type PhaseVars struct {
	Status       string `expr:"status" json:"status"`
	FilesChanged int    `expr:"files_changed" json:"files_changed"`
	Attempts     int    `expr:"attempts" json:"attempts"`
}

// PhaseFieldNames are the fields of PhaseVars, for hints.
var PhaseFieldNames = []string{"status", "files_changed", "attempts"}

// WhenVariables are the variables a phase's when: may read: what is known
// before the phase runs.
var WhenVariables = []string{"spec", "phases", "files_changed"}

// StepVars is the last result of one named step of the current phase,
// reachable as steps.<name>.<field>.
type StepVars struct {
	ExitCode int           `expr:"exit_code"`
	TimedOut bool          `expr:"timed_out"`
	Tokens   int           `expr:"tokens"`
	CostUSD  float64       `expr:"cost_usd"`
	Elapsed  time.Duration `expr:"elapsed"`
	Output   string        `expr:"output"`
	Ran      bool          `expr:"ran"`
}

// Variable describes one name of Env for documentation, completion and
// "did you mean" hints.
type Variable struct {
	Name    string
	Type    string
	Meaning string
}

// Variables lists every name an expression can read, in the order the
// documentation shows them.
var Variables = []Variable{
	{"tokens", "int", "tokens used by the current step in this attempt (input + output)"},
	{"context_tokens", "int", "size of the agent's context window in use at its last turn"},
	{"total_tokens", "int", "tokens used by the whole session, across phases, attempts and resumes"},
	{"cost_usd", "float", "cost of the whole session so far, in US dollars, as the agent reports it"},
	{"elapsed", "duration", "time the current step has been running"},
	{"phase_elapsed", "duration", "time spent in the current phase, across attempts and resumes"},
	{"session_elapsed", "duration", "time spent running the session, across resumes"},
	{"exit_code", "int", "exit code of the current step; 0 while it runs, -1 when it was killed by a signal"},
	{"timed_out", "bool", "the current step hit its timeout or idle_timeout"},
	{"checkpoint", "bool", "the step printed [CHECKPOINT] in a line of output"},
	{"checkpoint_note", "string", "the rest of the line after the last [CHECKPOINT]"},
	{"output", "string", "the last 64 KiB of the current step's output"},
	{"errors", "int", "failed attempts in the current phase"},
	{"consecutive_errors", "int", "failed attempts in a row in the current phase; reset by a success"},
	{"attempt", "int", "number of the current attempt of the phase, from 1"},
	{"phase", "string", "name of the current phase"},
	{"step", "string", "name of the current step"},
	{"steps", "map of step results", "steps.<name>.exit_code, .timed_out, .tokens, .cost_usd, .elapsed, .output, .ran: the last result of a step of this phase"},
	{"files_changed", "int", "files changed in the work tree since the phase started (git)"},
	{"files_out_of_scope", "int", "files the last step changed outside the phase's writes globs (git); 0 while a step runs"},
	{"spec", "map", "the spec's frontmatter: spec.status, spec.priority, spec.tags, or any other key"},
	{"phases", "map of phase results", "in a phase's when: only: phases.<name>.status (pending, running, paused, completed, skipped, failed), .files_changed, .attempts of every phase of the plan"},
}

// envFields maps each expr name of Env to its field index.
var envFields = lazy.Value[map[string]int]{New: func() map[string]int {
	t := reflect.TypeOf(Env{})
	fields := make(map[string]int, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		fields[t.Field(i).Tag.Get("expr")] = i
	}
	return fields
}}

// Values returns the values of the named variables, for the record of a
// trigger that fired. Long text is cut to its last 200 characters.
func (e *Env) Values(names []string) map[string]any {
	v := reflect.ValueOf(e).Elem()
	out := make(map[string]any, len(names))
	for _, name := range names {
		i, ok := envFields.Get()[name]
		if !ok {
			continue
		}
		value := v.Field(i).Interface()
		switch x := value.(type) {
		case string:
			if r := []rune(x); len(r) > 200 {
				value = "…" + string(r[len(r)-200:])
			}
		case time.Duration:
			value = x.String()
		}
		out[name] = value
	}
	return out
}
