package spec

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pipeline-dev/pipeline/internal/lazy"
	"github.com/pipeline-dev/pipeline/triggers"
)

// Layer is where a value of the plan was set.
type Layer string

const (
	// LayerDefault is a built-in default of pipeline.
	LayerDefault Layer = "default"
	// LayerPipeline is phases.yaml.
	LayerPipeline Layer = "phases.yaml"
	// LayerSpec is the spec's frontmatter.
	LayerSpec Layer = "spec"
	// LayerFlag is a command-line flag of one run, such as pipeline run
	// --no-human-gates: it is written in no file.
	LayerFlag Layer = "flag"
)

// Origin is where a value of the plan came from.
type Origin struct {
	Layer Layer `json:"layer"`
	Position
}

func (o Origin) String() string {
	switch {
	case o.Layer == LayerDefault:
		return "built-in default"
	case o.Layer == LayerSpec:
		return o.Position.String() + " (spec frontmatter)"
	case o.Layer == LayerFlag:
		return "command-line flag"
	}
	return o.Position.String()
}

// MarshalJSON writes the origin as its layer and position.
func (o Origin) MarshalJSON() ([]byte, error) {
	if o.Layer == LayerDefault || o.Layer == LayerFlag {
		return json.Marshal(struct {
			Layer Layer `json:"layer"`
		}{o.Layer})
	}
	return json.Marshal(struct {
		Layer Layer `json:"layer"`
		Position
	}{o.Layer, o.Position})
}

var builtIn = Origin{Layer: LayerDefault}

// Setting is one value of the plan and where it came from.
type Setting[T any] struct {
	Value T      `json:"value"`
	From  Origin `json:"from"`
}

// Plan is a pipeline as it will run: built-in defaults, phases.yaml and the
// spec's frontmatter merged, every value marked with its origin.
type Plan struct {
	File       string          `json:"file"`
	Name       Setting[string] `json:"name"`
	Spec       string          `json:"spec,omitempty"`
	SpecValues map[string]any  `json:"spec_values,omitempty"`
	Phases     []PhasePlan     `json:"phases"`
	PhasesFrom Origin          `json:"phases_from"`
	// FilePhases names the phases phases.yaml itself lists, so a reader can
	// see what a spec's phases replaced.
	FilePhases []string `json:"file_phases"`
	// ResumeTemplate is phases.yaml's resume_context.template, "" for the
	// built-in one; ResumeBudget its budget in tokens.
	ResumeTemplate string `json:"resume_template,omitempty"`
	ResumeBudget   int    `json:"resume_budget"`
	// Watch are phases.yaml's watch globs as written, relative to its folder.
	Watch []string `json:"watch,omitempty"`
	// WatchDebounce is watch_debounce; nil when phases.yaml does not set it.
	WatchDebounce *Duration `json:"watch_debounce,omitempty"`
	// WatchFrom and WatchDebounceFrom say where watch and watch_debounce
	// were written: the built-in default when phases.yaml does not set
	// them (no watch, and filewatch.DefaultDebounce). A spec's frontmatter
	// cannot set them: they are the pipeline's, not one spec's.
	WatchFrom         Origin `json:"watch_from"`
	WatchDebounceFrom Origin `json:"watch_debounce_from"`
	// Checkpoint is checkpoint: (refs, commit or off), refs when
	// phases.yaml does not set it; a spec's frontmatter cannot set it.
	Checkpoint Setting[string] `json:"checkpoint"`
	// Backend is the backend: block, where the sessions run; local from
	// the built-in default when phases.yaml has none. A spec's
	// frontmatter cannot set it. The session commands' --backend and
	// PIPELINE_BACKEND go over it.
	Backend Setting[Backend] `json:"backend"`
	// Hooks are the on: commands, phases.yaml's with the spec's
	// pipeline.on over them, event by event.
	Hooks Hooks `json:"on"`
	// Notify is phases.yaml's notify: block, or the spec's in its place.
	Notify Notify `json:"notify"`
	// Telemetry is phases.yaml's telemetry: block (nil: none); a spec's
	// frontmatter cannot set it.
	Telemetry *Telemetry `json:"telemetry,omitempty"`
	// CompactPrompt is what a compaction asks the agent:
	// DefaultCompactPrompt, or phases.yaml's compact_prompt, or the
	// spec's pipeline.compact_prompt over it.
	CompactPrompt Setting[string] `json:"compact_prompt"`
	// SpecStatus: a session moves the spec's LeanSpec status as it
	// starts and completes (see SetStatus); phases.yaml's spec_status,
	// or the spec's pipeline.spec_status over it, turns it off.
	SpecStatus Setting[bool] `json:"spec_status"`
	// Digest names what this plan was made from, so that a session can
	// record which plan it ran and a replay can tell whether it still has
	// it: a hex SHA-256 of the built-in defaults, phases.yaml, and the
	// spec's path and frontmatter (see digest).
	Digest string `json:"digest"`
	// redigest is Digest as it would be with another frontmatter block
	// (see DigestWithSpec); nil without a spec.
	redigest func(block []byte) string
	// Warnings are what the plan runs with but likely not as meant: a
	// phase of a spec's agent_phases that phases.yaml does not have
	// (it gets the default steps, so no test step).
	Warnings []Problem `json:"warnings,omitempty"`
}

// PhasePlan is one phase as it will run.
type PhasePlan struct {
	Name        string          `json:"name"`
	From        Origin          `json:"from"`
	Prompt      Setting[string] `json:"prompt"`
	Steps       []StepPlan      `json:"steps"`
	PauseWhen   []TriggerPlan   `json:"pause_when"`
	RestartWhen []TriggerPlan   `json:"restart_when"`
	// CompactWhen is checked after each agent step; its Value is nil, from
	// the built-in default, when no layer sets it: no compaction.
	CompactWhen Setting[*Expr]    `json:"compact_when"`
	Retry       RetryPlan         `json:"retry"`
	Timeout     Setting[Duration] `json:"timeout"`
	IdleTimeout Setting[Duration] `json:"idle_timeout"`
	AutoAdvance Setting[bool]     `json:"auto_advance"`
	DoneWhen    *Setting[*Expr]   `json:"done_when,omitempty"`
	// Writes is the write scope: nil when the phase may change anything.
	Writes       *Setting[[]string] `json:"writes,omitempty"`
	OnOutOfScope Setting[string]    `json:"on_out_of_scope"`
	// When is the phase's when:, nil when no layer writes one: the
	// phase always runs.
	When *Setting[*Expr] `json:"when,omitempty"`
}

// RetryPlan is the retry policy of a phase.
type RetryPlan struct {
	When         Setting[*Expr] `json:"when"`
	Backoff      Setting[*Expr] `json:"backoff"`
	EscalateWhen Setting[*Expr] `json:"escalate_when"`
}

// TriggerPlan is one named trigger of a phase.
type TriggerPlan struct {
	Name string `json:"name"`
	Expr *Expr  `json:"expr"`
	From Origin `json:"from"`
}

// StepPlan is one step of a phase as it will run.
type StepPlan struct {
	Name        string            `json:"name"`
	From        Origin            `json:"from"`
	Agent       *Setting[Agent]   `json:"agent,omitempty"`
	Run         string            `json:"run,omitempty"`
	Prompt      *Setting[string]  `json:"prompt,omitempty"`
	Timeout     Setting[Duration] `json:"timeout"`
	IdleTimeout Setting[Duration] `json:"idle_timeout"`
}

// MarshalJSON writes an expression as its source text.
func (e *Expr) MarshalJSON() ([]byte, error) {
	return json.Marshal(e.Source)
}

// MarshalJSON writes a duration as text, "none" for no limit.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// builtInPolicy is what every phase starts from.
var builtInPolicy = lazy.Value[Policy]{New: func() Policy {
	compile := func(source string, kind triggers.Kind) *Expr {
		compiled, err := triggers.Compile(source, kind)
		if err != nil {
			panic(fmt.Sprintf("built-in expression %q: %v", source, err))
		}
		return &Expr{Source: source, Kind: kind, program: compiledProgram(compiled)}
	}
	yes := true
	return Policy{
		PauseWhen: Triggers{{Name: "checkpoint", Expr: compile("checkpoint", triggers.Condition)}},
		Retry: &Retry{
			When:         compile("exit_code != 0 || timed_out", triggers.Condition),
			Backoff:      compile(`duration("10s") * consecutive_errors`, triggers.Duration),
			EscalateWhen: compile("attempt > 3", triggers.Condition),
		},
		IdleTimeout: Duration(30 * 60 * 1e9),
		AutoAdvance: &yes,
	}
}}

const (
	// defaultPrompt is the prompt of a phase that has none, with its name.
	defaultPrompt = "Carry out the %q phase for the spec."
	// defaultResumeBudget is the resume context's budget in tokens.
	defaultResumeBudget = 3000
)

// policyLayer is one Policy and how to find where its values were written.
type policyLayer struct {
	policy *Policy
	origin func(key string) Origin
}

// Load reads phases.yaml at path and its spec, checks both and merges them
// into a Plan. specPath, when not empty, replaces the spec named in
// phases.yaml. Every problem of both files is reported together as *Error.
// Relative paths are from the working directory.
func Load(path, specPath string) (*Plan, error) {
	return LoadCached(path, specPath, "")
}

// load reads the spec of doc and merges both into a Plan, whose warnings
// lack those of the programs named by a path: those are refs, looked at
// by checkPrograms. specSum is the digest of the spec's frontmatter as
// read, zero without a spec.
func load(doc *Document, specPath, base string) (plan *Plan, refs []programRef, specSum [sha256.Size]byte, err error) {
	var specOrigin Position
	if specPath == "" && doc.Pipeline.Spec != "" {
		specPath = filepath.Join(filepath.Dir(doc.Path), filepath.FromSlash(doc.Pipeline.Spec))
		specOrigin = doc.dec.positions["spec"]
	}
	var fm *Frontmatter
	if specPath != "" {
		var specErr error
		fm, specErr = LoadSpec(specPath)
		switch {
		case errors.Is(specErr, fs.ErrNotExist) && specOrigin.Line > 0:
			doc.dec.reportAt(specOrigin, fmt.Sprintf("spec file %s does not exist", doc.Pipeline.Spec),
				"fix the path (it is relative to phases.yaml), or remove spec:")
		case fm == nil && specErr != nil && !isSpecError(specErr):
			return nil, nil, specSum, specErr
		}
	}
	if plan, err = Resolve(doc, fm, base); err != nil {
		return nil, nil, specSum, err
	}
	if fm != nil {
		specSum = frontmatterSum(fm.block)
	}
	return plan, programRefs(doc, fm), specSum, nil
}

func isSpecError(err error) bool {
	var specErr *Error
	return errors.As(err, &specErr)
}

// Resolve merges built-in defaults, the phases.yaml document and the spec's
// frontmatter (nil when there is no spec) into a Plan. base is the absolute
// folder the document's and the spec's paths are from when they are
// relative (Load passes the working directory). Resolve makes no system
// call: a Temporal workflow runs it, and must decide the same way on any
// worker and at every replay.
func Resolve(doc *Document, fm *Frontmatter, base string) (*Plan, error) {
	r := &resolver{doc: doc, fm: fm, base: base}
	plan := r.plan()
	plan.Digest = digest(doc, fm, base)
	if fm != nil {
		plan.redigest = func(block []byte) string {
			edited := *fm
			edited.block = block
			return digest(doc, &edited, base)
		}
	}
	all := problems{list: slices.Clone(doc.dec.problems.list), omitted: doc.dec.problems.omitted}
	if fm != nil {
		all.list = append(all.list, fm.dec.problems.list...)
		all.omitted += fm.dec.problems.omitted
	}
	if err := all.err(); err != nil {
		return nil, err
	}
	return plan, nil
}

type resolver struct {
	doc *Document
	fm  *Frontmatter
	// base is the absolute folder relative paths are from.
	base string
	// values counts what the plan holds so far, against maxPlanValues.
	values int
}

// overBudget counts n more values of the plan, made for the phase of
// source; past maxPlanValues it reports the phase, once, and is true.
func (r *resolver) overBudget(source phaseSource, n int) bool {
	if r.values > maxPlanValues {
		return true
	}
	if r.values += n; r.values <= maxPlanValues {
		return false
	}
	r.reportAt(source.from, fmt.Sprintf("phase %q takes the plan past %d values (triggers and steps; each phase has its own copy of those it inherits)", source.name, maxPlanValues),
		"use fewer phases, or fewer triggers, steps and agent settings in defaults")
	return true
}

func (r *resolver) plan() *Plan {
	p := &r.doc.Pipeline
	plan := &Plan{File: r.doc.Path}
	plan.Name = Setting[string]{p.Name, r.doc.origin("name")}
	if p.Name == "" {
		plan.Name = Setting[string]{filepath.Base(filepath.Dir(absolute(r.base, r.doc.Path))), builtIn}
	}
	plan.ResumeBudget = defaultResumeBudget
	if rc := p.ResumeContext; rc != nil {
		plan.ResumeTemplate = rc.Template
		if rc.Budget > 0 {
			plan.ResumeBudget = rc.Budget
		}
	}
	plan.Watch, plan.WatchFrom = slices.Clone(p.Watch), builtIn
	if p.Watch != nil {
		plan.WatchFrom = r.doc.origin("watch")
	}
	plan.WatchDebounceFrom = builtIn
	if p.WatchDebounce != nil {
		plan.WatchDebounce = ptr(*p.WatchDebounce)
		plan.WatchDebounceFrom = r.doc.origin("watch_debounce")
	}
	plan.Checkpoint = Setting[string]{Value: CheckpointRefs, From: builtIn}
	if p.Checkpoint != "" {
		plan.Checkpoint = Setting[string]{Value: p.Checkpoint, From: r.doc.origin("checkpoint")}
	}
	plan.Backend = Setting[Backend]{Value: Backend{Kind: BackendLocal}, From: builtIn}
	if p.Backend != nil {
		plan.Backend = Setting[Backend]{Value: *p.Backend, From: r.doc.origin("backend")}
		if plan.Backend.Value.Kind == "" {
			plan.Backend.Value.Kind = BackendLocal
		}
	}
	if r.fm != nil {
		plan.Spec = r.fm.Path
		plan.SpecValues = r.fm.Values
	}
	if p.On != nil {
		plan.Hooks = *p.On
	}
	if p.Notify != nil {
		plan.Notify = *p.Notify
	}
	plan.Telemetry = p.Telemetry
	if r.fm != nil && r.fm.Pipeline != nil && r.fm.Pipeline.Notify != nil {
		plan.Notify = *r.fm.Pipeline.Notify
	}
	plan.CompactPrompt = Setting[string]{DefaultCompactPrompt, builtIn}
	if p.CompactPrompt != "" {
		plan.CompactPrompt = Setting[string]{p.CompactPrompt, r.doc.origin("compact_prompt")}
	}
	if r.fm != nil && r.fm.Pipeline != nil && r.fm.Pipeline.CompactPrompt != "" {
		plan.CompactPrompt = Setting[string]{r.fm.Pipeline.CompactPrompt, r.fm.origin("pipeline.compact_prompt")}
	}
	plan.SpecStatus = Setting[bool]{true, builtIn}
	if p.SpecStatus != nil {
		plan.SpecStatus = Setting[bool]{*p.SpecStatus, r.doc.origin("spec_status")}
	}
	if r.fm != nil && r.fm.Pipeline != nil && r.fm.Pipeline.SpecStatus != nil {
		plan.SpecStatus = Setting[bool]{*r.fm.Pipeline.SpecStatus, r.fm.origin("pipeline.spec_status")}
	}
	if r.fm != nil && r.fm.Pipeline != nil && r.fm.Pipeline.On != nil {
		over := r.fm.Pipeline.On
		for _, pair := range []struct{ to, from *Commands }{{&plan.Hooks.Paused, &over.Paused}, {&plan.Hooks.Failed, &over.Failed},
			{&plan.Hooks.Completed, &over.Completed}, {&plan.Hooks.NeedsHuman, &over.NeedsHuman}} {
			if *pair.from != nil {
				*pair.to = *pair.from
			}
		}
	}
	defaults := []policyLayer{{policy: ptr(builtInPolicy.Get()), origin: func(string) Origin { return builtIn }}}
	if p.Defaults != nil {
		defaults = append(defaults, policyLayer{p.Defaults, r.docOrigin("defaults.")})
	}
	if r.fm != nil && r.fm.Pipeline != nil && r.fm.Pipeline.Defaults != nil {
		defaults = append(defaults, policyLayer{r.fm.Pipeline.Defaults, r.fmOrigin("pipeline.defaults.")})
	}
	defaultAgent := Setting[Agent]{From: builtIn}
	if p.Agent != nil {
		defaultAgent = Setting[Agent]{*p.Agent, r.doc.origin("agent")}
	}
	if r.fm != nil && r.fm.Pipeline != nil && r.fm.Pipeline.Agent != nil {
		defaultAgent = overlayAgent(defaultAgent, *r.fm.Pipeline.Agent, r.fm.origin("pipeline.agent"))
	}
	sources := r.phaseSources()
	if r.fm != nil && r.fm.AgentPhases != nil {
		plan.Warnings = r.unknownAgentPhases(sources)
	} else if r.fm != nil && r.fm.Pipeline != nil && r.fm.Pipeline.Phases != nil {
		plan.Warnings = r.droppedPhases(sources)
	}
	for _, source := range sources {
		phase := r.phase(source, defaults, defaultAgent)
		if r.overBudget(source, 1+len(phase.PauseWhen)+len(phase.RestartWhen)) {
			break
		}
		plan.Phases = append(plan.Phases, phase)
	}
	r.checkPhaseRefs(plan.Phases)
	for _, phase := range p.Phases {
		plan.FilePhases = append(plan.FilePhases, phase.Name)
	}
	plan.PhasesFrom = r.doc.origin("phases")
	if r.fm != nil && r.fm.AgentPhases != nil {
		plan.PhasesFrom = r.fm.origin("agent_phases")
	} else if r.fm != nil && r.fm.Pipeline != nil && r.fm.Pipeline.Phases != nil {
		plan.PhasesFrom = r.fm.origin("pipeline.phases")
	}
	return plan
}

// unknownAgentPhases warns of each phase of agent_phases that phases.yaml
// does not have, with the name it may have meant.
func (r *resolver) unknownAgentPhases(sources []phaseSource) []Problem {
	var names []string
	for _, phase := range r.doc.Pipeline.Phases {
		names = append(names, phase.Name)
	}
	var warnings []Problem
	for _, s := range sources {
		if s.base != nil {
			continue
		}
		hint := fmt.Sprintf("phases.yaml has %s; a phase not there runs one agent step with the default policies", strings.Join(names, ", "))
		if near := triggers.Closest(s.name, names); near != "" {
			hint = fmt.Sprintf("did you mean %q? (%s)", near, hint)
		}
		warnings = append(warnings, Problem{Position: s.from.Position,
			Message: fmt.Sprintf("phase %q of agent_phases is not in phases.yaml: it runs with no step of phases.yaml's (no test step)", s.name),
			Hint:    hint})
	}
	return warnings
}

// droppedPhases warns of a spec's pipeline.phases that names only phases
// phases.yaml has, and fewer of them: written to amend a phase or two, it
// replaces the whole list, and the phases it leaves out do not run for
// this spec. A list with a phase of its own is a new list, meant as one.
func (r *resolver) droppedPhases(sources []phaseSource) []Problem {
	written := map[string]bool{}
	var names []string
	for _, s := range sources {
		if s.base == nil {
			return nil
		}
		written[s.name] = true
		names = append(names, s.name)
	}
	var dropped, amend []string
	for _, phase := range r.doc.Pipeline.Phases {
		if written[phase.Name] {
			amend = append(amend, fmt.Sprintf("{name: %s, ...}", phase.Name))
			continue
		}
		dropped = append(dropped, phase.Name)
		amend = append(amend, fmt.Sprintf("{name: %s}", phase.Name))
	}
	if len(dropped) == 0 {
		return nil
	}
	at := r.fm.dec.positions["pipeline.phases#key"]
	if at.Line == 0 {
		at = r.fm.origin("pipeline.phases").Position
	}
	return []Problem{{Position: at,
		Message: fmt.Sprintf("pipeline.phases names only %s of phases.yaml's %d, so it replaces the list: %s %s not run for this spec",
			Count(len(names), "phase"), len(r.doc.Pipeline.Phases), strings.Join(dropped, ", "), map[bool]string{true: "is", false: "are"}[len(dropped) == 1]),
		Hint: fmt.Sprintf("to change the values of %s and keep every phase, list them all in phases.yaml's order; a phase given by its name alone runs as phases.yaml has it: phases: [%s]. To run only %s on purpose, keep the list as it is",
			strings.Join(names, ", "), strings.Join(amend, ", "), strings.Join(names, ", "))}}
}

// Count writes n and a noun, singular for one: "1 phase", "4 phases".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func ptr[T any](v T) *T { return &v }

func (r *resolver) docOrigin(prefix string) func(string) Origin {
	return func(key string) Origin { return r.doc.origin(prefix + key) }
}

func (r *resolver) fmOrigin(prefix string) func(string) Origin {
	return func(key string) Origin { return r.fm.origin(prefix + key) }
}

// phaseSource is one phase of the plan and the written phases it is made
// of: phases.yaml's (base) and the frontmatter's (over), either may be nil.
type phaseSource struct {
	name       string
	from       Origin
	base       *Phase
	baseOrigin func(string) Origin
	over       *Phase
	overOrigin func(string) Origin
	// prompt from agent_phases, when set.
	prompt *Setting[string]
}

func (r *resolver) phaseSources() []phaseSource {
	docPhases := r.doc.Pipeline.Phases
	find := func(name string) (*Phase, func(string) Origin) {
		for i := range docPhases {
			if docPhases[i].Name == name {
				return &docPhases[i], r.docOrigin(fmt.Sprintf("phases[%d].", i))
			}
		}
		return nil, nil
	}
	var out []phaseSource
	switch {
	case r.fm != nil && r.fm.AgentPhases != nil:
		for _, ap := range r.fm.AgentPhases {
			s := phaseSource{name: ap.Name, from: r.fm.origin(fmt.Sprintf("agent_phases[%d]", ap.index))}
			s.base, s.baseOrigin = find(ap.Name)
			if ap.Prompt != "" {
				s.prompt = &Setting[string]{ap.Prompt, r.fm.origin(fmt.Sprintf("agent_phases[%d].prompt", ap.index))}
			}
			out = append(out, s)
		}
	case r.fm != nil && r.fm.Pipeline != nil && r.fm.Pipeline.Phases != nil:
		for i := range r.fm.Pipeline.Phases {
			over := &r.fm.Pipeline.Phases[i]
			prefix := fmt.Sprintf("pipeline.phases[%d]", i)
			s := phaseSource{name: over.Name, from: r.fm.origin(prefix), over: over, overOrigin: r.fmOrigin(prefix + ".")}
			s.base, s.baseOrigin = find(over.Name)
			out = append(out, s)
		}
	default:
		for i := range docPhases {
			prefix := fmt.Sprintf("phases[%d]", i)
			out = append(out, phaseSource{name: docPhases[i].Name, from: r.doc.origin(prefix),
				base: &docPhases[i], baseOrigin: r.docOrigin(prefix + ".")})
		}
	}
	return out
}

// written returns the written phases of a source, phases.yaml's first.
func (s phaseSource) written() (phases []*Phase, origins []func(string) Origin) {
	if s.base != nil {
		phases, origins = append(phases, s.base), append(origins, s.baseOrigin)
	}
	if s.over != nil {
		phases, origins = append(phases, s.over), append(origins, s.overOrigin)
	}
	return phases, origins
}

func (r *resolver) phase(s phaseSource, defaults []policyLayer, defaultAgent Setting[Agent]) PhasePlan {
	plan := PhasePlan{Name: s.name, From: s.from}
	layers := append([]policyLayer(nil), defaults...)
	written, origins := s.written()
	agent := defaultAgent
	plan.Prompt = Setting[string]{fmt.Sprintf(defaultPrompt, s.name), builtIn}
	var steps []Step
	stepsOrigin := func(string) Origin { return builtIn }
	for i, w := range written {
		layers = append(layers, policyLayer{&w.Policy, origins[i]})
		if w.Prompt != "" {
			plan.Prompt = Setting[string]{w.Prompt, origins[i]("prompt")}
		}
		if w.Agent != nil {
			agent = overlayAgent(agent, *w.Agent, origins[i]("agent"))
		}
		if w.Steps != nil {
			steps, stepsOrigin = w.Steps, origins[i]
		}
		if w.DoneWhen != nil {
			plan.DoneWhen = &Setting[*Expr]{w.DoneWhen, origins[i]("done_when")}
		}
		if w.When != nil {
			plan.When = &Setting[*Expr]{w.When, origins[i]("when")}
		}
	}
	if s.prompt != nil {
		plan.Prompt = *s.prompt
	}
	r.policies(&plan, layers)
	if steps == nil {
		steps = []Step{{Agent: &Agent{}}}
	}
	for i, step := range steps {
		sp := r.step(s, step, i, stepsOrigin, plan, agent)
		values := 1
		if sp.Agent != nil {
			values += len(sp.Agent.Value.Env) + len(sp.Agent.Value.Args) + len(sp.Agent.Value.Command)
		}
		if r.overBudget(s, values) {
			break
		}
		plan.Steps = append(plan.Steps, sp)
	}
	if plan.DoneWhen != nil {
		r.checkStepRefs(plan)
	}
	return plan
}

func (r *resolver) policies(plan *PhasePlan, layers []policyLayer) {
	for _, l := range layers {
		plan.PauseWhen = mergeTriggers(plan.PauseWhen, l.policy.PauseWhen, l.origin, "pause_when.")
		plan.RestartWhen = mergeTriggers(plan.RestartWhen, l.policy.RestartWhen, l.origin, "restart_when.")
		setExpr(&plan.CompactWhen, l.policy.CompactWhen, l.origin("compact_when"))
		if rt := l.policy.Retry; rt != nil {
			setExpr(&plan.Retry.When, rt.When, l.origin("retry.when"))
			setExpr(&plan.Retry.Backoff, rt.Backoff, l.origin("retry.backoff"))
			setExpr(&plan.Retry.EscalateWhen, rt.EscalateWhen, l.origin("retry.escalate_when"))
		}
		if l.policy.Timeout != 0 {
			plan.Timeout = Setting[Duration]{l.policy.Timeout, l.origin("timeout")}
		}
		if l.policy.IdleTimeout != 0 {
			plan.IdleTimeout = Setting[Duration]{l.policy.IdleTimeout, l.origin("idle_timeout")}
		}
		if l.policy.AutoAdvance != nil {
			plan.AutoAdvance = Setting[bool]{*l.policy.AutoAdvance, l.origin("auto_advance")}
		}
		if l.policy.Writes != nil {
			plan.Writes = &Setting[[]string]{slices.Clone(l.policy.Writes), l.origin("writes")}
		}
		if l.policy.OnOutOfScope != "" {
			plan.OnOutOfScope = Setting[string]{l.policy.OnOutOfScope, l.origin("on_out_of_scope")}
		}
	}
	if plan.Timeout.From.Layer == "" {
		plan.Timeout.From = builtIn
	}
	if plan.CompactWhen.From.Layer == "" {
		plan.CompactWhen.From = builtIn
	}
	if plan.OnOutOfScope.Value == "" {
		// Not in builtInPolicy, which the plan's digest covers: plans
		// without a scope keep the digest they had before writes: was.
		plan.OnOutOfScope = Setting[string]{OutOfScopePause, builtIn}
	}
}

func setExpr(dst *Setting[*Expr], e *Expr, from Origin) {
	if e != nil {
		*dst = Setting[*Expr]{e, from}
	}
}

// mergeTriggers lays over on top of base: a trigger with a known name
// replaces it in place, a new one is added, one written as null removes it.
func mergeTriggers(base []TriggerPlan, over Triggers, origin func(string) Origin, prefix string) []TriggerPlan {
	out := slices.Clone(base)
	if out == nil {
		out = []TriggerPlan{}
	}
	if len(over) == 0 {
		return out
	}
	index := make(map[string]int, len(out))
	for i, t := range out {
		index[t.Name] = i
	}
	removed := false
	for _, t := range over {
		i, known := index[t.Name]
		switch {
		case t.Expr == nil && known:
			out[i].Expr, removed = nil, true
			delete(index, t.Name)
		case t.Expr == nil:
		case known:
			out[i] = TriggerPlan{t.Name, t.Expr, origin(prefix + t.Name)}
		default:
			index[t.Name] = len(out)
			out = append(out, TriggerPlan{t.Name, t.Expr, origin(prefix + t.Name)})
		}
	}
	if removed {
		out = slices.DeleteFunc(out, func(t TriggerPlan) bool { return t.Expr == nil })
	}
	return out
}

// overlayAgent lays an agent written over an inherited one. A different
// kind starts from scratch, so a gemini phase never inherits claude's model
// or arguments; the feature tag is kept either way.
func overlayAgent(base Setting[Agent], over Agent, from Origin) Setting[Agent] {
	if isZeroAgent(over) {
		return base
	}
	merged := base.Value
	if over.Kind != "" && over.Kind != merged.Kind {
		merged = Agent{Kind: over.Kind, Feature: merged.Feature}
	}
	if over.Model != "" {
		merged.Model = over.Model
	}
	if over.Command != nil {
		merged.Command = over.Command
	}
	if over.Args != nil {
		merged.Args = over.Args
	}
	if over.Feature != "" {
		merged.Feature = over.Feature
	}
	if over.Env != nil {
		env := map[string]string{}
		for k, v := range merged.Env {
			env[k] = v
		}
		for k, v := range over.Env {
			env[k] = v
		}
		merged.Env = env
	}
	return Setting[Agent]{merged, from}
}

func isZeroAgent(a Agent) bool {
	return a.Kind == "" && a.Model == "" && a.Command == nil && a.Args == nil && a.Env == nil && a.Feature == ""
}

func (r *resolver) step(s phaseSource, step Step, i int, origin func(string) Origin, phase PhasePlan, agent Setting[Agent]) StepPlan {
	prefix := fmt.Sprintf("steps[%d]", i)
	plan := StepPlan{Name: step.Name, From: origin(prefix), Run: step.Run,
		Timeout: phase.Timeout, IdleTimeout: phase.IdleTimeout}
	if plan.Name == "" {
		plan.Name = defaultStepName(step)
	}
	if step.Timeout != 0 {
		plan.Timeout = Setting[Duration]{step.Timeout, origin(prefix + ".timeout")}
	}
	if step.IdleTimeout != 0 {
		plan.IdleTimeout = Setting[Duration]{step.IdleTimeout, origin(prefix + ".idle_timeout")}
	}
	if step.Agent == nil {
		return plan
	}
	resolved := overlayAgent(agent, *step.Agent, origin(prefix+".agent"))
	plan.Agent = &resolved
	plan.Prompt = &phase.Prompt
	if step.Prompt != "" {
		plan.Prompt = &Setting[string]{step.Prompt, origin(prefix + ".prompt")}
	}
	at := plan.From
	if at.Layer == LayerDefault {
		at = s.from
	}
	if r.decoderOf(resolved.From).reportedAt(resolved.From.Position) || r.decoderOf(resolved.From).brokenAgents[resolved.From.Position] {
		// The agent this step uses is already reported as broken; one
		// mistake, one problem.
		return plan
	}
	switch {
	case resolved.Value.Kind == "":
		r.reportAt(at, fmt.Sprintf("phase %q, step %q is an agent step but no agent kind is set", s.name, plan.Name),
			"set agent: {kind: claude} (or gemini, codex, command) at the top of phases.yaml, in the phase, or in the step")
	case resolved.Value.Kind == KindCommand && len(resolved.Value.Command) == 0:
		r.reportAt(at, fmt.Sprintf("phase %q, step %q uses kind: command but no command is set", s.name, plan.Name),
			`add command: [./bin/my-agent, "{prompt}"] to the agent`)
	}
	return plan
}

// checkStepRefs reports a steps.<name> in done_when that names no step of
// the phase.
func (r *resolver) checkStepRefs(plan PhasePlan) {
	e := plan.DoneWhen.Value
	if e.Program() == nil {
		return
	}
	var names []string
	for _, s := range plan.Steps {
		names = append(names, s.Name)
	}
	var missing []triggers.StepRef
	var offsets []int
	for _, ref := range e.Program().StepRefs {
		if !slices.Contains(names, ref.Name) {
			missing, offsets = append(missing, ref), append(offsets, ref.Offset)
		}
	}
	if len(missing) == 0 {
		return
	}
	refs := make([]string, len(names))
	for i, name := range names {
		refs[i] = stepReference(name)
	}
	steps := "the steps of this phase are " + strings.Join(refs, ", ")
	if len(refs) == 1 {
		steps = "the phase has one step, " + refs[0]
	}
	dec := r.decoderOf(plan.DoneWhen.From)
	for i, pos := range dec.exprPositions(*e, offsets) {
		if dec.problems.full() {
			dec.problems.omitted += len(missing) - i
			return
		}
		ref, hint := missing[i], steps
		if near := triggers.Closest(ref.Name, names); near != "" {
			hint = fmt.Sprintf("did you mean %s?", stepReference(near))
		}
		dec.reportAt(pos, fmt.Sprintf("phase %q: done_when reads %s, but the phase has no step %q", plan.Name, stepReference(ref.Name), ref.Name), hint)
	}
}

// checkPhaseRefs reports each phases.<name> in a phase's when: that names
// no earlier phase.
func (r *resolver) checkPhaseRefs(phases []PhasePlan) {
	for i := range phases {
		r.checkWhenRefs(phases, i)
	}
}

// checkWhenRefs reports a phases.<name> in the when: of phases[i] that
// names no earlier phase: a later phase, or the phase itself, has not run
// when the when: is decided, and a name of no phase is a mistake.
func (r *resolver) checkWhenRefs(phases []PhasePlan, i int) {
	when := phases[i].When
	if when == nil || when.Value.Program() == nil {
		return
	}
	var earlier, all []string
	for j, p := range phases {
		all = append(all, p.Name)
		if j < i {
			earlier = append(earlier, p.Name)
		}
	}
	dec := r.decoderOf(when.From)
	for _, ref := range when.Value.Program().PhaseRefs {
		if slices.Contains(earlier, ref.Name) || dec.problems.full() {
			continue
		}
		pos := dec.exprPositions(*when.Value, []int{ref.Offset})[0]
		message := fmt.Sprintf("phase %q: when reads %s, but no phase is named %q", phases[i].Name, triggers.Reference("phases", ref.Name), ref.Name)
		hint := "earlier phases: " + strings.Join(earlier, ", ")
		if len(earlier) == 0 {
			hint = "this is the first phase: its when: can read spec and files_changed, no phase has run before it"
		}
		if slices.Contains(all, ref.Name) {
			message = fmt.Sprintf("phase %q: when reads %s, but %q is not an earlier phase: it has not run when the when: is decided", phases[i].Name, triggers.Reference("phases", ref.Name), ref.Name)
		} else if near := triggers.Closest(ref.Name, earlier); near != "" {
			hint = fmt.Sprintf("did you mean %s?", triggers.Reference("phases", near))
		}
		dec.reportAt(pos, message, hint)
	}
}

// stepReference is how an expression reads a step: steps.test, or
// steps["unit-tests"] when the name is not an identifier.
func stepReference(name string) string { return triggers.Reference("steps", name) }

func (r *resolver) decoderOf(o Origin) *decoder {
	if o.Layer == LayerSpec && r.fm != nil {
		return r.fm.dec
	}
	return r.doc.dec
}

func (r *resolver) reportAt(o Origin, message, hint string) {
	r.decoderOf(o).reportAt(o.Position, message, hint)
}

// DigestWithSpec is the plan's digest had its spec the content given: the
// plan a session runs once it has written its spec's status. "" when the
// plan has no spec.
func (p *Plan) DigestWithSpec(content []byte) string {
	if p.redigest == nil {
		return ""
	}
	return p.redigest(FrontmatterBlock(content))
}
