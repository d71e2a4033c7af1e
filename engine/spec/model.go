// Package spec is the model of phases.yaml and of a spec's frontmatter: the
// types, their decoding with source positions, validation, and the merge of
// built-in defaults, phases.yaml and frontmatter into a Plan whose every
// value records where it came from.
package spec

import (
	"github.com/pipeline-dev/pipeline/triggers"
)

// Pipeline is one phases.yaml document as written.
type Pipeline struct {
	Version  int     `yaml:"version" json:"version" jsonschema:"required,enum=1" jsonschema_description:"format version of this file; always 1"`
	Name     string  `yaml:"name" json:"name,omitempty" jsonschema_description:"name of the pipeline; defaults to the name of the folder holding phases.yaml"`
	Spec     string  `yaml:"spec" json:"spec,omitempty" jsonschema_description:"markdown spec this pipeline carries out, relative to phases.yaml; its frontmatter may override phases and policies"`
	Agent    *Agent  `yaml:"agent" json:"agent,omitempty" jsonschema_description:"default agent for agent steps"`
	Defaults *Policy `yaml:"defaults" json:"defaults,omitempty" jsonschema_description:"triggers and policies every phase inherits"`
	Phases   []Phase `yaml:"phases" json:"phases" jsonschema:"required,minItems=1" jsonschema_description:"the phases, run in order"`
	// ResumeContext shapes the text given to an agent after a resume.
	ResumeContext *ResumeContext `yaml:"resume_context" json:"resume_context,omitempty" jsonschema_description:"the resume context given to the agent after a resume, a recovery or a restart"`
	// Watch and WatchDebounce are read by pipeline watch, not by a run.
	Watch         []string  `yaml:"watch" json:"watch,omitempty" kind:"globs" jsonschema_description:"globs of files whose change resumes this pipeline's paused sessions; relative to the folder of phases.yaml and inside it (no absolute path, no ..); ** matches any number of folders"`
	WatchDebounce *Duration `yaml:"watch_debounce" json:"watch_debounce,omitempty" jsonschema_description:"how long a burst of changes to watched files must be quiet before it counts; default 200ms, 0s counts each change at once"`
	// Checkpoint says how a session in a git work tree keeps its
	// checkpoints: refs (the default), commit or off.
	Checkpoint string `yaml:"checkpoint" json:"checkpoint,omitempty" jsonschema:"enum=refs,enum=commit,enum=off" jsonschema_description:"refs (the default in a git work tree): a snapshot of the work tree under refs/pipeline/<session>/ when a phase completes and when the session pauses, HEAD, the branch, the index and the stash untouched | commit: a commit on the current branch per phase instead | off: none"`
	// Backend says where the pipeline's sessions run: here (local, the
	// default) or on a Temporal fleet. Flags and environment variables
	// of the session commands go over it.
	Backend *Backend `yaml:"backend" json:"backend,omitempty" jsonschema_description:"where sessions run: local (the default: this process) or temporal (workflows on a Temporal server, steps on pipeline worker processes); --backend and PIPELINE_BACKEND go over it"`
	// Notify tells people when a session stops, without a hook.
	Notify *Notify `yaml:"notify" json:"notify,omitempty" jsonschema_description:"notifications when a session pauses, needs a human, fails or completes: on the desktop, and to webhooks (Slack, Discord, ntfy, or the status as JSON); a failure to notify is a warning, never the session's outcome"`
	// Telemetry is what a project wants of OpenTelemetry always; the
	// OTEL_* variables go over it.
	Telemetry *Telemetry `yaml:"telemetry" json:"telemetry,omitempty" jsonschema_description:"OpenTelemetry traces and metrics of the sessions, exported with OTLP over HTTP (protobuf) when an endpoint is set here or in OTEL_EXPORTER_OTLP_ENDPOINT; the OTEL_* variables go over what is written here, and OTEL_SDK_DISABLED=true turns it off"`
	// On are the hooks: commands run when a session stops.
	On *Hooks `yaml:"on" json:"on,omitempty" jsonschema_description:"hooks: shell lines run when a session pauses, fails, completes or needs a human; PIPELINE_SESSION, PIPELINE_PHASE, PIPELINE_STATUS, PIPELINE_REASON and PIPELINE_NOTE are set and the status JSON is on standard input"`
	// CompactPrompt replaces DefaultCompactPrompt; "" when not written
	// (written empty, it is a load error).
	// SpecStatus, false, keeps the sessions from writing the spec's
	// LeanSpec status (see Plan.SpecStatus).
	SpecStatus    *bool  `yaml:"spec_status" json:"spec_status,omitempty" jsonschema_description:"whether a session moves its spec's LeanSpec status: planned to in-progress when it starts, to complete when it completes (with updated_at, transitions, completed_at and completed); default true"`
	CompactPrompt string `yaml:"compact_prompt" json:"compact_prompt,omitempty" jsonschema:"pattern=\\S" jsonschema_description:"the prompt that asks the agent, in its native session, for its working set when compact_when fires; it should ask for one JSON object with the keys summary, pinned_facts, decisions, open_tasks and files_touched. Default: pipeline's built-in compaction prompt"`
}

// DefaultCompactPrompt is the compaction prompt when neither phases.yaml
// nor the spec sets compact_prompt: it asks for the working set, in the
// shape the engine merges.
const DefaultCompactPrompt = `Pipeline is compacting this conversation: the next turn starts a fresh session that will know only what you write now. Answer with one JSON object and nothing else, of this shape:
{"summary": "where the work stands, in a few sentences",
 "pinned_facts": ["facts the next session must know: paths, commands, constraints"],
 "decisions": ["decisions made and why"],
 "open_tasks": ["what is left to do, one task each"],
 "files_touched": ["paths of files you changed"]}
Keep it short: at most a few thousand tokens. Do not call tools.`

// The values of checkpoint:.
const (
	CheckpointRefs   = "refs"
	CheckpointCommit = "commit"
	CheckpointOff    = "off"
)

// CheckpointModes are the values checkpoint: takes.
var CheckpointModes = []string{CheckpointRefs, CheckpointCommit, CheckpointOff}

// Backend is the backend: block.
type Backend struct {
	Kind             string    `yaml:"kind" json:"kind,omitempty" jsonschema:"enum=local,enum=temporal" jsonschema_description:"local | temporal"`
	Address          string    `yaml:"address" json:"address,omitempty" jsonschema:"pattern=^\\S+:[0-9]+$" jsonschema_description:"the Temporal frontend, HOST:PORT; default 127.0.0.1:7233 (PIPELINE_TEMPORAL and --temporal go over it)"`
	Namespace        string    `yaml:"namespace" json:"namespace,omitempty" jsonschema_description:"the Temporal namespace; default default"`
	TaskQueue        string    `yaml:"task_queue" json:"task_queue,omitempty" jsonschema_description:"the task queue the workers poll (pipeline worker --task-queue); default pipeline"`
	HeartbeatTimeout *Duration `yaml:"heartbeat_timeout" json:"heartbeat_timeout,omitempty" jsonschema_description:"how long a worker running a step may be silent before it is taken for lost and the step runs again elsewhere; a pause reaches a running step within about this long; default 30s"`
}

// The values of backend.kind.
const (
	BackendLocal    = "local"
	BackendTemporal = "temporal"
)

// BackendKinds are the values backend.kind takes.
var BackendKinds = []string{BackendLocal, BackendTemporal}

// Hooks is the on: block: for each way a run stops, the commands to run.
// A hook tells somebody; it never changes the session's outcome.
type Hooks struct {
	Paused     Commands `yaml:"paused" json:"paused,omitempty" jsonschema_description:"run when the session pauses, for any reason (needs-human too)"`
	Failed     Commands `yaml:"failed" json:"failed,omitempty" jsonschema_description:"run when the session fails"`
	Completed  Commands `yaml:"completed" json:"completed,omitempty" jsonschema_description:"run when the session completes"`
	NeedsHuman Commands `yaml:"needs-human" json:"needs-human,omitempty" jsonschema_description:"run when the session pauses for a human (retry.escalate_when), after the paused hooks"`
}

// Hook events, as the keys of on: name them.
const (
	HookPaused     = "paused"
	HookFailed     = "failed"
	HookCompleted  = "completed"
	HookNeedsHuman = "needs-human"
)

// For returns the commands of one hook event.
func (h *Hooks) For(event string) Commands {
	if h == nil {
		return nil
	}
	switch event {
	case HookPaused:
		return h.Paused
	case HookFailed:
		return h.Failed
	case HookCompleted:
		return h.Completed
	case HookNeedsHuman:
		return h.NeedsHuman
	}
	return nil
}

// Telemetry is the telemetry: block.
type Telemetry struct {
	Endpoint           string            `yaml:"endpoint" json:"endpoint,omitempty" jsonschema:"pattern=^https?://" jsonschema_description:"the collector's OTLP/HTTP base URL, such as http://127.0.0.1:4318 (/v1/traces and /v1/metrics are appended); OTEL_EXPORTER_OTLP_ENDPOINT goes over it"`
	Protocol           string            `yaml:"protocol" json:"protocol,omitempty" jsonschema:"enum=http/protobuf" jsonschema_description:"the OTLP protocol: http/protobuf, the only one spoken; OTEL_EXPORTER_OTLP_PROTOCOL goes over it"`
	ServiceName        string            `yaml:"service_name" json:"service_name,omitempty" jsonschema_description:"service.name of the exported telemetry; default pipeline; OTEL_SERVICE_NAME goes over it"`
	ResourceAttributes map[string]string `yaml:"resource_attributes" json:"resource_attributes,omitempty" jsonschema_description:"more attributes of the resource, such as deployment.environment.name: ci; OTEL_RESOURCE_ATTRIBUTES goes over them, key by key"`
}

// Notify is the notify: block.
type Notify struct {
	Desktop bool      `yaml:"desktop" json:"desktop,omitempty" jsonschema_description:"a desktop notification (notify-send on Linux, osascript on macOS) when the session pauses, fails or completes"`
	Webhook []Webhook `yaml:"webhook" json:"webhook,omitempty" jsonschema_description:"webhooks posted to when the session stops, each in its service's format"`
}

// Webhook is one entry of notify.webhook.
type Webhook struct {
	URL    string   `yaml:"url" json:"url" jsonschema:"required,pattern=^(https?://|\\$\\{)" jsonschema_description:"the webhook's URL, http(s); ${NAME} is replaced by the environment variable NAME when it is posted to (keep secrets out of phases.yaml)"`
	Format string   `yaml:"format" json:"format,omitempty" jsonschema:"enum=slack,enum=discord,enum=ntfy,enum=json" jsonschema_description:"slack ({\"text\"}) | discord ({\"content\"}) | ntfy (the text, with a Title header) | json (the status object, as pipeline status -o json prints it); default json"`
	On     []string `yaml:"on" json:"on,omitempty" jsonschema:"uniqueItems=true" jsonschema_description:"the events posted: paused, needs-human, failed, completed; default all of them"`
}

// The values of notify.webhook[].format.
const (
	FormatSlack   = "slack"
	FormatDiscord = "discord"
	FormatNtfy    = "ntfy"
	FormatJSON    = "json"
)

// WebhookFormats are the values notify.webhook[].format takes.
var WebhookFormats = []string{FormatSlack, FormatDiscord, FormatNtfy, FormatJSON}

// HookEventNames are the ways a session stops that hooks and notifications
// are for.
var HookEventNames = []string{HookPaused, HookNeedsHuman, HookFailed, HookCompleted}

// Wants tells whether the webhook is posted to on event.
func (w Webhook) Wants(event string) bool {
	return len(w.On) == 0 || contains(w.On, event)
}

// Commands is one shell line, or a list of them, run in order.
type Commands []string

// ResumeContext configures the resume context.
type ResumeContext struct {
	Template string `yaml:"template" json:"template,omitempty" kind:"template" jsonschema_description:"a Go text/template rendered with the session: .Phase, .Step, .Attempt, .Reason, .Note, .Done, .Skipped, .FilesChanged, .NextSteps, .HumanNotes, .SpecPath, .SpecDiff, .SpecFrontmatter (see README)"`
	Budget   int    `yaml:"budget" json:"budget,omitempty" jsonschema_description:"the most tokens it may take; default 3000"`
}

// Agent says which program does an agent step and how.
type Agent struct {
	Kind    string            `yaml:"kind" json:"kind,omitempty" jsonschema:"enum=claude,enum=gemini,enum=codex,enum=command" jsonschema_description:"claude | gemini | codex | command"`
	Model   string            `yaml:"model" json:"model,omitempty" jsonschema_description:"model name passed to the agent CLI"`
	Command []string          `yaml:"command" json:"command,omitempty" jsonschema_description:"for kind command: the program and its arguments; an argument containing {prompt} receives the prompt, otherwise the prompt goes to standard input"`
	Args    []string          `yaml:"args" json:"args,omitempty" jsonschema_description:"extra arguments for the agent CLI"`
	Env     map[string]string `yaml:"env" json:"env,omitempty" jsonschema_description:"environment variables set for the agent"`
	Feature string            `yaml:"feature" json:"feature,omitempty" jsonschema_description:"tag under which the agent's native session is reused and recovered"`
}

// Agent kinds.
const (
	KindClaude  = "claude"
	KindGemini  = "gemini"
	KindCodex   = "codex"
	KindCommand = "command"
)

// AgentKinds lists the valid values of agent.kind.
var AgentKinds = []string{KindClaude, KindGemini, KindCodex, KindCommand}

// Policy holds the triggers and policies that defaults set and a phase may
// override.
type Policy struct {
	PauseWhen   Triggers `yaml:"pause_when" json:"pause_when,omitempty" jsonschema_description:"named conditions; when one is true the step is stopped and the session pauses with that name as reason"`
	RestartWhen Triggers `yaml:"restart_when" json:"restart_when,omitempty" jsonschema_description:"named conditions; when one is true after a step, the agent's native session is dropped and the next attempt starts fresh with the resume context"`
	// CompactWhen is nil when this layer does not set it; omitempty keeps
	// the built-in defaults, and so every plan's digest, as they were.
	CompactWhen *Expr    `yaml:"compact_when" json:"compact_when,omitempty" jsonschema_description:"condition, after each agent step, to compact: the agent is asked for its working set (see compact_prompt) and its next step starts a fresh native session seeded with it; such as context_tokens > 150000, and false turns an inherited one off"`
	Retry       *Retry   `yaml:"retry" json:"retry,omitempty" jsonschema_description:"when and how a failed step is tried again"`
	Timeout     Duration `yaml:"timeout" json:"timeout,omitempty" jsonschema_description:"longest a step may run before it ends as timed out"`
	IdleTimeout Duration `yaml:"idle_timeout" json:"idle_timeout,omitempty" jsonschema_description:"longest a step may go without output before it ends as timed out"`
	AutoAdvance *bool    `yaml:"auto_advance" json:"auto_advance,omitempty" jsonschema_description:"go on to the next phase by itself (true) or pause at the phase boundary until resumed (false)"`
	// Writes is the write scope: nil lets a step change anything, an
	// empty list nothing (a read-only phase).
	Writes       []string `yaml:"writes" json:"writes,omitempty" kind:"globs" jsonschema_description:"globs of the files a step of the phase may change, relative to the folder of phases.yaml (** matches any number of folders); [] makes the phase read-only; absent, it may change anything. Checked with git after every step"`
	OnOutOfScope string   `yaml:"on_out_of_scope" json:"on_out_of_scope,omitempty" oneof:"pause,revert" jsonschema:"enum=pause,enum=revert" jsonschema_description:"what a change outside writes does: pause (the default) pauses the session with reason out-of-scope; revert puts the files back as they were before the step and goes on"`
}

// What on_out_of_scope may say.
const (
	OutOfScopePause  = "pause"
	OutOfScopeRevert = "revert"
)

// Retry is the retry policy.
type Retry struct {
	When         *Expr `yaml:"when" json:"when,omitempty" jsonschema_description:"condition, after a step, to retry it"`
	Backoff      *Expr `yaml:"backoff" json:"backoff,omitempty" kind:"duration" jsonschema_description:"duration to wait before a retry: a literal such as 10s or an expression such as duration(\"10s\") * consecutive_errors"`
	EscalateWhen *Expr `yaml:"escalate_when" json:"escalate_when,omitempty" jsonschema_description:"condition to stop retrying and pause for a human (reason needs-human)"`
}

// Phase is one phase as written.
type Phase struct {
	Name     string `yaml:"name" json:"name" jsonschema:"required" jsonschema_description:"unique name of the phase"`
	Prompt   string `yaml:"prompt" json:"prompt,omitempty" jsonschema_description:"what the agent is asked to do in this phase"`
	Agent    *Agent `yaml:"agent" json:"agent,omitempty" jsonschema_description:"agent for this phase's agent steps, over the default agent"`
	Steps    []Step `yaml:"steps" json:"steps,omitempty" jsonschema_description:"what the phase runs; without steps, one agent step with the phase prompt"`
	Policy   `yaml:",inline"`
	DoneWhen *Expr `yaml:"done_when" json:"done_when,omitempty" jsonschema_description:"condition, after the steps, for the phase to be done; when false the steps run again as a new attempt"`
	// When decides, as the phase is reached, whether it runs at all.
	When *Expr `yaml:"when" json:"when,omitempty" kind:"when" jsonschema_description:"condition, as the phase is reached, for it to run; when false the phase is skipped, with the expression and the values it read recorded. It reads spec (the spec's frontmatter), phases.<name>.status, .files_changed and .attempts of earlier phases, and files_changed (files the session changed so far), such as spec.priority != \"low\""`
}

// Step is one step of a phase: an agent step or a run step.
type Step struct {
	Name        string   `yaml:"name" json:"name,omitempty" jsonschema_description:"name of the step, for steps.<name> in expressions; defaults to agent or run"`
	Agent       *Agent   `yaml:"agent" json:"agent,omitempty" jsonschema_description:"an agent step; {} uses the phase's agent"`
	Run         string   `yaml:"run" json:"run,omitempty" kind:"shell" jsonschema_description:"a shell command, such as the test suite"`
	Prompt      string   `yaml:"prompt" json:"prompt,omitempty" jsonschema_description:"for an agent step: the prompt, instead of the phase prompt"`
	Timeout     Duration `yaml:"timeout" json:"timeout,omitempty" jsonschema_description:"longest this step may run, over the phase's timeout"`
	IdleTimeout Duration `yaml:"idle_timeout" json:"idle_timeout,omitempty" jsonschema_description:"longest this step may go without output, over the phase's idle_timeout"`
}

// Trigger is one named condition of pause_when or restart_when.
type Trigger struct {
	Name string
	// Expr is nil when the trigger is written as null, which removes an
	// inherited trigger of the same name.
	Expr *Expr
}

// Triggers keeps the order in which the triggers were written: the first
// that fires gives the reason.
type Triggers []Trigger

// Expr is an expression as written, where it was written, and its compiled
// form (see Program).
type Expr struct {
	Source string
	Kind   triggers.Kind
	At     Position
	// quote is the YAML quote around the expression, if any: its escapes
	// shift columns.
	quote rune
	// program is the compiled form: compiled as the file is decoded, or,
	// for a plan read from the plan cache, at its first use.
	program *program
}
