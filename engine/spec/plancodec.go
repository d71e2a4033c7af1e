package spec

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
)

// The plan cache's encoding of a Plan: varints and length-prefixed
// strings, written by hand rather than by reflection (encoding/gob took
// 27 ms and 68k allocations to decode a 1,000-phase plan). Strings are
// decoded as pieces of one string holding the whole payload, so they cost
// no allocation; expressions and agents are written once in tables and
// shared by the phases that use them, as the resolver shares them. A
// field added to Plan, PhasePlan or StepPlan must be added here:
// TestPlanCodecCoversEveryField fails until it is.

type planEncoder struct {
	buf []byte
	// symbols are the strings that repeat (files, layers), written once
	// in a table and then by their number.
	symbols     map[string]int
	symbolTable []byte
	exprs       map[*Expr]int
	agents      map[string]int
	// tables are written before the plan, which refers to their entries.
	exprTable, agentTable []byte
	nExprs, nAgents       int
	err                   error
}

func (e *planEncoder) uint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }
func (e *planEncoder) int(v int64)   { e.buf = binary.AppendVarint(e.buf, v) }
func (e *planEncoder) bool(b bool) {
	if b {
		e.uint(1)
	} else {
		e.uint(0)
	}
}
func (e *planEncoder) str(s string) { e.uint(uint64(len(s))); e.buf = append(e.buf, s...) }

// length writes a slice's or a map's length, one more than it is, so that
// 0 stands for nil and nil and empty come back as they went.
func (e *planEncoder) length(n int, isNil bool) {
	if isNil {
		e.uint(0)
		return
	}
	e.uint(uint64(n) + 1)
}

func (e *planEncoder) strings(list []string) {
	e.length(len(list), list == nil)
	for _, s := range list {
		e.str(s)
	}
}

// symbol writes a string that repeats by its number in the table.
func (e *planEncoder) symbol(s string) {
	i, ok := e.symbols[s]
	if !ok {
		table := &planEncoder{buf: e.symbolTable}
		table.str(s)
		e.symbolTable = table.buf
		i = len(e.symbols)
		e.symbols[s] = i
	}
	e.uint(uint64(i))
}

func (e *planEncoder) position(p Position) {
	e.symbol(p.File)
	e.int(int64(p.Line))
	e.int(int64(p.Column))
}
func (e *planEncoder) origin(o Origin) { e.symbol(string(o.Layer)); e.position(o.Position) }

func (e *planEncoder) settingString(s Setting[string])     { e.str(s.Value); e.origin(s.From) }
func (e *planEncoder) settingBool(s Setting[bool])         { e.bool(s.Value); e.origin(s.From) }
func (e *planEncoder) settingDuration(s Setting[Duration]) { e.int(int64(s.Value)); e.origin(s.From) }
func (e *planEncoder) settingExpr(s Setting[*Expr])        { e.expr(s.Value); e.origin(s.From) }

// expr writes an expression's entry in the table, 0 for none.
func (e *planEncoder) expr(x *Expr) {
	if x == nil {
		e.uint(0)
		return
	}
	i, ok := e.exprs[x]
	if !ok {
		table := &planEncoder{buf: e.exprTable, symbols: e.symbols, symbolTable: e.symbolTable}
		table.str(x.Source)
		table.int(int64(x.Kind))
		table.position(x.At)
		table.int(int64(x.quote))
		e.exprTable, e.symbolTable = table.buf, table.symbolTable
		e.nExprs++
		i = e.nExprs
		e.exprs[x] = i
	}
	e.uint(uint64(i))
}

// agent writes an agent's entry in the table: agents equal in every value
// share one.
func (e *planEncoder) agent(a Setting[Agent]) {
	one := &planEncoder{symbols: e.symbols, symbolTable: e.symbolTable}
	one.str(a.Value.Kind)
	one.str(a.Value.Model)
	one.strings(a.Value.Command)
	one.strings(a.Value.Args)
	one.stringMap(a.Value.Env)
	one.str(a.Value.Feature)
	one.origin(a.From)
	e.symbolTable = one.symbolTable
	i, ok := e.agents[string(one.buf)]
	if !ok {
		e.agentTable = append(e.agentTable, one.buf...)
		e.nAgents++
		i = e.nAgents
		e.agents[string(one.buf)] = i
	}
	e.uint(uint64(i))
}

func (e *planEncoder) stringMap(m map[string]string) {
	e.length(len(m), m == nil)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		e.str(k)
		e.str(m[k])
	}
}

// value writes a frontmatter value: the types plainValue makes.
func (e *planEncoder) value(v any) {
	switch v := v.(type) {
	case nil:
		e.uint(0)
	case bool:
		e.uint(1)
		e.bool(v)
	case int:
		e.uint(2)
		e.int(int64(v))
	case int64:
		e.uint(3)
		e.int(v)
	case uint64:
		e.uint(4)
		e.uint(v)
	case float64:
		e.uint(5)
		e.uint(math.Float64bits(v))
	case string:
		e.uint(6)
		e.str(v)
	case []any:
		e.uint(7)
		e.length(len(v), v == nil)
		for _, item := range v {
			e.value(item)
		}
	case map[string]any:
		e.uint(8)
		e.valueMap(v)
	default:
		e.err = fmt.Errorf("spec: a frontmatter value of type %T is not cached", v)
	}
}

func (e *planEncoder) valueMap(m map[string]any) {
	e.length(len(m), m == nil)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		e.str(k)
		e.value(m[k])
	}
}

func (e *planEncoder) problems(list []Problem) {
	e.length(len(list), list == nil)
	for _, p := range list {
		e.position(p.Position)
		e.str(p.Message)
		e.str(p.Hint)
		e.str(p.Source)
		e.int(int64(p.caret))
	}
}

// encodePlan writes plan and the program references its warnings are
// checked from at each load. The payload is laid out so that the plan's
// head (what it says of the whole pipeline), its first headLen bytes,
// can be read without its phases: the symbols and the head, then the
// tables of expressions and agents and the phases, which use them.
func encodePlan(plan *Plan, refs []programRef) (payload []byte, headLen int, err error) {
	e := &planEncoder{symbols: map[string]int{}, exprs: map[*Expr]int{}, agents: map[string]int{}}
	e.head(plan)
	head := e.buf
	e.buf = nil
	e.length(len(plan.Phases), plan.Phases == nil)
	var prev *PhasePlan
	for i := range plan.Phases {
		e.phase(&plan.Phases[i], prev)
		prev = &plan.Phases[i]
	}
	e.problems(plan.Warnings)
	e.length(len(refs), refs == nil)
	for _, r := range refs {
		e.str(r.path)
		e.position(r.at)
		e.str(r.what)
		e.str(r.source)
		e.int(int64(r.caret))
	}
	if e.err != nil {
		return nil, 0, e.err
	}
	out := binary.AppendUvarint(nil, uint64(len(e.symbols))+1)
	out = append(out, e.symbolTable...)
	out = append(out, head...)
	headLen = len(out)
	out = binary.AppendUvarint(out, uint64(e.nExprs)+1)
	out = append(out, e.exprTable...)
	out = binary.AppendUvarint(out, uint64(e.nAgents)+1)
	out = append(out, e.agentTable...)
	return append(out, e.buf...), headLen, nil
}

// head writes every field of plan but its phases and warnings.
func (e *planEncoder) head(plan *Plan) {
	e.str(plan.File)
	e.settingString(plan.Name)
	e.str(plan.Spec)
	e.valueMap(plan.SpecValues)
	e.origin(plan.PhasesFrom)
	e.strings(plan.FilePhases)
	e.str(plan.ResumeTemplate)
	e.int(int64(plan.ResumeBudget))
	e.strings(plan.Watch)
	e.bool(plan.WatchDebounce != nil)
	if plan.WatchDebounce != nil {
		e.int(int64(*plan.WatchDebounce))
	}
	e.origin(plan.WatchFrom)
	e.origin(plan.WatchDebounceFrom)
	e.settingString(plan.Checkpoint)
	e.backend(plan.Backend)
	for _, c := range []Commands{plan.Hooks.Paused, plan.Hooks.Failed, plan.Hooks.Completed, plan.Hooks.NeedsHuman} {
		e.strings(c)
	}
	e.bool(plan.Notify.Desktop)
	e.length(len(plan.Notify.Webhook), plan.Notify.Webhook == nil)
	for _, w := range plan.Notify.Webhook {
		e.str(w.URL)
		e.str(w.Format)
		e.strings(w.On)
	}
	e.telemetry(plan.Telemetry)
	e.settingString(plan.CompactPrompt)
	e.settingBool(plan.SpecStatus)
	e.str(plan.Digest)
}

func (e *planEncoder) telemetry(t *Telemetry) {
	e.bool(t != nil)
	if t != nil {
		e.str(t.Endpoint)
		e.str(t.Protocol)
		e.str(t.ServiceName)
		e.stringMap(t.ResourceAttributes)
	}
}

func (e *planEncoder) backend(b Setting[Backend]) {
	e.str(b.Value.Kind)
	e.str(b.Value.Address)
	e.str(b.Value.Namespace)
	e.str(b.Value.TaskQueue)
	e.bool(b.Value.HeartbeatTimeout != nil)
	if b.Value.HeartbeatTimeout != nil {
		e.int(int64(*b.Value.HeartbeatTimeout))
	}
	e.origin(b.From)
}

// What a phase has as the phase before it has it: the phases of a plan
// mostly share their defaults, and such a field is written as one bit
// of a mask and read as a copy of the previous phase's (a list shared
// with it: a plan is never changed once made), not written again.
const (
	samePrompt = 1 << iota
	samePauseWhen
	sameRestartWhen
	sameCompactWhen
	sameRetry
	sameTimeout
	sameIdleTimeout
	sameAutoAdvance
	sameOnOutOfScope
)

// sameAsBefore is the mask of p's fields equal to prev's (nil: the first
// phase).
func sameAsBefore(p, prev *PhasePlan) uint64 {
	if prev == nil {
		return 0
	}
	var mask uint64
	for _, f := range [...]struct {
		bit  uint64
		same bool
	}{
		{samePrompt, p.Prompt == prev.Prompt},
		{samePauseWhen, sameTriggers(p.PauseWhen, prev.PauseWhen)},
		{sameRestartWhen, sameTriggers(p.RestartWhen, prev.RestartWhen)},
		{sameCompactWhen, p.CompactWhen == prev.CompactWhen},
		{sameRetry, p.Retry == prev.Retry},
		{sameTimeout, p.Timeout == prev.Timeout},
		{sameIdleTimeout, p.IdleTimeout == prev.IdleTimeout},
		{sameAutoAdvance, p.AutoAdvance == prev.AutoAdvance},
		{sameOnOutOfScope, p.OnOutOfScope == prev.OnOutOfScope},
	} {
		if f.same {
			mask |= f.bit
		}
	}
	return mask
}

func (e *planEncoder) phase(p, prev *PhasePlan) {
	mask := sameAsBefore(p, prev)
	e.uint(mask)
	e.str(p.Name)
	e.origin(p.From)
	if mask&samePrompt == 0 {
		e.settingString(p.Prompt)
	}
	e.length(len(p.Steps), p.Steps == nil)
	for i, s := range p.Steps {
		e.step(s, p.Prompt, stepAt(prev, i))
	}
	if mask&samePauseWhen == 0 {
		e.triggers(p.PauseWhen, prevList(prev, func(p *PhasePlan) []TriggerPlan { return p.PauseWhen }))
	}
	if mask&sameRestartWhen == 0 {
		e.triggers(p.RestartWhen, prevList(prev, func(p *PhasePlan) []TriggerPlan { return p.RestartWhen }))
	}
	if mask&sameCompactWhen == 0 {
		e.settingExpr(p.CompactWhen)
	}
	if mask&sameRetry == 0 {
		e.settingExpr(p.Retry.When)
		e.settingExpr(p.Retry.Backoff)
		e.settingExpr(p.Retry.EscalateWhen)
	}
	e.settings(mask, p)
}

// settings writes the rest of a phase, but what is as before.
func (e *planEncoder) settings(mask uint64, p *PhasePlan) {
	if mask&sameTimeout == 0 {
		e.settingDuration(p.Timeout)
	}
	if mask&sameIdleTimeout == 0 {
		e.settingDuration(p.IdleTimeout)
	}
	if mask&sameAutoAdvance == 0 {
		e.settingBool(p.AutoAdvance)
	}
	for _, s := range []*Setting[*Expr]{p.DoneWhen, p.When} {
		e.bool(s != nil)
		if s != nil {
			e.settingExpr(*s)
		}
	}
	e.bool(p.Writes != nil)
	if p.Writes != nil {
		e.strings(p.Writes.Value)
		e.origin(p.Writes.From)
	}
	if mask&sameOnOutOfScope == 0 {
		e.settingString(p.OnOutOfScope)
	}
}

// stepAt is the step at place i of the previous phase, nil when there is
// none.
func stepAt(prev *PhasePlan, i int) *StepPlan {
	if prev == nil || i >= len(prev.Steps) {
		return nil
	}
	return &prev.Steps[i]
}

// sameTriggers reports whether two lists are equal, nil or not alike.
func sameTriggers(a, b []TriggerPlan) bool {
	return slices.Equal(a, b) && (a == nil) == (b == nil)
}

// prevList is a list of the previous phase, nil for the first phase.
func prevList(prev *PhasePlan, list func(*PhasePlan) []TriggerPlan) []TriggerPlan {
	if prev == nil {
		return nil
	}
	return list(prev)
}

// triggers writes a list of triggers, each one the previous phase's list
// has (most come from the defaults) by its number there, counted from 1,
// and any other as 0 and itself.
func (e *planEncoder) triggers(list, before []TriggerPlan) {
	e.length(len(list), list == nil)
	for _, t := range list {
		if i := slices.Index(before, t); i >= 0 {
			e.uint(uint64(i) + 1)
			continue
		}
		e.uint(0)
		e.str(t.Name)
		e.expr(t.Expr)
		e.origin(t.From)
	}
}

// Step prompts: none, the phase's (most agent steps), or the step's own.
const (
	noPrompt = iota
	phasePrompt
	ownPrompt
)

// What a step has as the step at its place in the previous phase has
// it (see samePrompt).
const (
	sameStepRun = 1 << iota
	sameStepTimeout
	sameStepIdleTimeout
)

// step writes a step; prev is the step at its place in the previous
// phase, nil when there is none.
func (e *planEncoder) step(s StepPlan, prompt Setting[string], prev *StepPlan) {
	var mask uint64
	if prev != nil {
		for _, f := range [...]struct {
			bit  uint64
			same bool
		}{{sameStepRun, s.Run == prev.Run}, {sameStepTimeout, s.Timeout == prev.Timeout}, {sameStepIdleTimeout, s.IdleTimeout == prev.IdleTimeout}} {
			if f.same {
				mask |= f.bit
			}
		}
	}
	e.uint(mask)
	e.str(s.Name)
	e.origin(s.From)
	e.bool(s.Agent != nil)
	if s.Agent != nil {
		e.agent(*s.Agent)
	}
	if mask&sameStepRun == 0 {
		e.str(s.Run)
	}
	switch {
	case s.Prompt == nil:
		e.uint(noPrompt)
	case *s.Prompt == prompt:
		e.uint(phasePrompt)
	default:
		e.uint(ownPrompt)
		e.settingString(*s.Prompt)
	}
	if mask&sameStepTimeout == 0 {
		e.settingDuration(s.Timeout)
	}
	if mask&sameStepIdleTimeout == 0 {
		e.settingDuration(s.IdleTimeout)
	}
}
