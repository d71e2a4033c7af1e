package spec

import (
	"math"

	"github.com/pipeline-dev/pipeline/triggers"
)

// planDecoder reads what planEncoder wrote. A payload cut short or
// written by someone else leaves err set and never panics: every length
// is checked against what is left before anything is made of it.
type planDecoder struct {
	s       string
	off     int
	failed  bool
	symbols []string
	exprs   []*Expr
	agents  []Setting[Agent]
	// linesOf gives the lines of a file an expression is written in, for
	// the position of its run-time errors.
	linesOf func(file string) func() []string
	// The phases' lists and settings come from a few large arrays rather
	// than an allocation each: a thousand phases made 9,000 allocations.
	triggerPool pool[TriggerPlan]
	stepPool    pool[StepPlan]
	exprPool    pool[Setting[*Expr]]
	promptPool  pool[Setting[string]]
}

// pool hands out slices of one backing array. Each is capped at its
// length, so that an append to one copies it rather than write into the
// next.
type pool[T any] struct{ free []T }

func (p *pool[T]) take(n int) []T {
	if n == 0 {
		return []T{}
	}
	if n > len(p.free) {
		p.free = make([]T, max(n, 128))
	}
	s := p.free[:n:n]
	p.free = p.free[n:]
	return s
}

// one is a pointer to a new T of the pool.
func (p *pool[T]) one(v T) *T {
	s := p.take(1)
	s[0] = v
	return &s[0]
}

func (d *planDecoder) uint() uint64 {
	// Most numbers are below 128: one byte.
	if d.off < len(d.s) && d.s[d.off] < 0x80 {
		d.off++
		return uint64(d.s[d.off-1])
	}
	var v uint64
	for shift := 0; shift < 64; shift += 7 {
		if d.off >= len(d.s) {
			d.failed = true
			return 0
		}
		b := d.s[d.off]
		d.off++
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v
		}
	}
	d.failed = true
	return 0
}

func (d *planDecoder) int() int64 {
	u := d.uint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (d *planDecoder) small() int { return int(d.int()) }

func (d *planDecoder) bool() bool { return d.uint() == 1 }

func (d *planDecoder) str() string {
	n := d.uint()
	if d.failed || n > uint64(len(d.s)-d.off) {
		d.failed = true
		return ""
	}
	s := d.s[d.off : d.off+int(n)]
	d.off += int(n)
	return s
}

// length reads what planEncoder.length wrote: -1 for nil. A length past
// the bytes left (each element takes at least one) is a broken payload.
func (d *planDecoder) length() int {
	n := d.uint()
	if n == 0 || d.failed {
		return -1
	}
	if n-1 > uint64(len(d.s)-d.off) {
		d.failed = true
		return -1
	}
	return int(n - 1)
}

func (d *planDecoder) strings() []string {
	n := d.length()
	if n < 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.str()
	}
	return out
}

func (d *planDecoder) symbol() string {
	i := d.uint()
	if i >= uint64(len(d.symbols)) {
		d.failed = true
		return ""
	}
	return d.symbols[i]
}

func (d *planDecoder) symbolTable() {
	n := d.length()
	if n < 0 {
		n = 0
	}
	d.symbols = make([]string, n)
	for i := range d.symbols {
		d.symbols[i] = d.str()
	}
}

func (d *planDecoder) position() Position {
	return Position{File: d.symbol(), Line: d.small(), Column: d.small()}
}

func (d *planDecoder) origin() Origin {
	return Origin{Layer: Layer(d.symbol()), Position: d.position()}
}

func (d *planDecoder) settingString() Setting[string] { return Setting[string]{d.str(), d.origin()} }
func (d *planDecoder) settingBool() Setting[bool]     { return Setting[bool]{d.bool(), d.origin()} }
func (d *planDecoder) settingDuration() Setting[Duration] {
	return Setting[Duration]{Duration(d.int()), d.origin()}
}
func (d *planDecoder) settingExpr() Setting[*Expr] { return Setting[*Expr]{d.expr(), d.origin()} }

func (d *planDecoder) expr() *Expr {
	i := d.uint()
	if i == 0 {
		return nil
	}
	if i > uint64(len(d.exprs)) {
		d.failed = true
		return nil
	}
	return d.exprs[i-1]
}

// exprTable reads the expressions, each to be compiled at its first use.
func (d *planDecoder) exprTable() {
	n := d.length()
	if n < 0 {
		n = 0
	}
	d.exprs = make([]*Expr, n)
	exprs, programs := make([]Expr, n), make([]program, n)
	for i := range d.exprs {
		x := &exprs[i]
		*x = Expr{Source: d.str(), Kind: triggers.Kind(d.int()), At: d.position(), quote: rune(d.int())}
		programs[i].lines = d.linesOf(x.At.File)
		x.program = &programs[i]
		d.exprs[i] = x
	}
}

func (d *planDecoder) agentTable() {
	n := d.length()
	if n < 0 {
		n = 0
	}
	d.agents = make([]Setting[Agent], n)
	for i := range d.agents {
		a := Agent{Kind: d.str(), Model: d.str(), Command: d.strings(), Args: d.strings()}
		a.Env = d.stringMap()
		a.Feature = d.str()
		d.agents[i] = Setting[Agent]{a, d.origin()}
	}
}

func (d *planDecoder) stringMap() map[string]string {
	n := d.length()
	if n < 0 {
		return nil
	}
	m := make(map[string]string, n)
	for range n {
		k := d.str()
		m[k] = d.str()
	}
	return m
}

// maxValueDepth bounds the nesting of frontmatter values a payload may
// claim, as plainValue bounds what it decodes.
const maxValueDepth = 70

func (d *planDecoder) value(depth int) any {
	if depth > maxValueDepth {
		d.failed = true
		return nil
	}
	switch d.uint() {
	case 0:
		return nil
	case 1:
		return d.bool()
	case 2:
		return int(d.int())
	case 3:
		return d.int()
	case 4:
		return d.uint()
	case 5:
		return math.Float64frombits(d.uint())
	case 6:
		return d.str()
	case 7:
		n := d.length()
		if n < 0 {
			return []any(nil)
		}
		out := make([]any, n)
		for i := range out {
			out[i] = d.value(depth + 1)
		}
		return out
	case 8:
		return d.valueMap(depth + 1)
	}
	d.failed = true
	return nil
}

func (d *planDecoder) valueMap(depth int) map[string]any {
	n := d.length()
	if n < 0 {
		return nil
	}
	m := make(map[string]any, n)
	for range n {
		k := d.str()
		m[k] = d.value(depth)
		if d.failed {
			return nil
		}
	}
	return m
}

func (d *planDecoder) problems() []Problem {
	n := d.length()
	if n < 0 {
		return nil
	}
	out := make([]Problem, n)
	for i := range out {
		out[i] = Problem{Position: d.position(), Message: d.str(), Hint: d.str(), Source: d.str(), caret: d.small()}
	}
	return out
}

// decodePlan reads a payload of encodePlan. It fails, never panics, on
// bytes encodePlan did not write.
func decodePlan(payload string, linesOf func(file string) func() []string) (*Plan, []programRef, bool) {
	d := &planDecoder{s: payload, linesOf: linesOf}
	d.symbolTable()
	plan := &Plan{}
	d.head(plan)
	d.exprTable()
	d.agentTable()
	if n := d.length(); n >= 0 {
		plan.Phases = make([]PhasePlan, n)
		var prev *PhasePlan
		for i := range plan.Phases {
			d.phase(&plan.Phases[i], prev)
			if d.failed {
				return nil, nil, false
			}
			prev = &plan.Phases[i]
		}
	}
	plan.Warnings = d.problems()
	var refs []programRef
	if n := d.length(); n >= 0 {
		refs = make([]programRef, n)
		for i := range refs {
			refs[i] = programRef{path: d.str(), at: d.position(), what: d.str(), source: d.str(), caret: d.small()}
		}
	}
	if d.failed || d.off != len(d.s) {
		return nil, nil, false
	}
	return plan, refs, true
}

// decodeHead reads the head of a payload of encodePlan, its first bytes
// (headLen of them), and not its phases: a plan without phases, warnings
// or programs. It fails, never panics, on bytes encodePlan did not write.
func decodeHead(head string) (*Plan, bool) {
	d := &planDecoder{s: head}
	d.symbolTable()
	plan := &Plan{}
	d.head(plan)
	if d.failed || d.off != len(d.s) {
		return nil, false
	}
	return plan, true
}

// head reads what planEncoder.head wrote.
func (d *planDecoder) head(plan *Plan) {
	plan.File, plan.Name, plan.Spec, plan.SpecValues = d.str(), d.settingString(), d.str(), d.valueMap(0)
	plan.PhasesFrom = d.origin()
	plan.FilePhases = d.strings()
	plan.ResumeTemplate, plan.ResumeBudget = d.str(), d.small()
	plan.Watch = d.strings()
	if d.bool() {
		plan.WatchDebounce = ptr(Duration(d.int()))
	}
	plan.WatchFrom, plan.WatchDebounceFrom = d.origin(), d.origin()
	plan.Checkpoint = d.settingString()
	plan.Backend = d.backend()
	plan.Hooks = Hooks{Paused: d.strings(), Failed: d.strings(), Completed: d.strings(), NeedsHuman: d.strings()}
	plan.Notify.Desktop = d.bool()
	if n := d.length(); n >= 0 {
		plan.Notify.Webhook = make([]Webhook, n)
		for i := range plan.Notify.Webhook {
			plan.Notify.Webhook[i] = Webhook{URL: d.str(), Format: d.str(), On: d.strings()}
		}
	}
	if d.bool() {
		plan.Telemetry = &Telemetry{Endpoint: d.str(), Protocol: d.str(), ServiceName: d.str(), ResourceAttributes: d.stringMap()}
	}
	plan.CompactPrompt, plan.SpecStatus = d.settingString(), d.settingBool()
	plan.Digest = d.str()
}

func (d *planDecoder) backend() Setting[Backend] {
	b := Backend{Kind: d.str(), Address: d.str(), Namespace: d.str(), TaskQueue: d.str()}
	if d.bool() {
		b.HeartbeatTimeout = ptr(Duration(d.int()))
	}
	return Setting[Backend]{b, d.origin()}
}

// phase reads a phase; what it has as prev has it is copied from prev.
func (d *planDecoder) phase(p, prev *PhasePlan) {
	mask := d.uint()
	if mask != 0 && prev == nil || mask >= sameOnOutOfScope<<1 {
		d.failed = true
		return
	}
	if prev == nil {
		prev = &PhasePlan{}
	}
	p.Name, p.From = d.str(), d.origin()
	p.Prompt = prev.Prompt
	if mask&samePrompt == 0 {
		p.Prompt = d.settingString()
	}
	if n := d.length(); n >= 0 {
		p.Steps = d.stepPool.take(n)
		var prompt *Setting[string]
		for i := range p.Steps {
			d.step(&p.Steps[i], p.Prompt, &prompt, stepAt(prev, i))
		}
	}
	p.PauseWhen, p.RestartWhen = prev.PauseWhen, prev.RestartWhen
	if mask&samePauseWhen == 0 {
		p.PauseWhen = d.triggers(prev.PauseWhen)
	}
	if mask&sameRestartWhen == 0 {
		p.RestartWhen = d.triggers(prev.RestartWhen)
	}
	p.CompactWhen, p.Retry = prev.CompactWhen, prev.Retry
	if mask&sameCompactWhen == 0 {
		p.CompactWhen = d.settingExpr()
	}
	if mask&sameRetry == 0 {
		p.Retry = RetryPlan{When: d.settingExpr(), Backoff: d.settingExpr(), EscalateWhen: d.settingExpr()}
	}
	d.settings(mask, p, prev)
}

// settings reads the rest of a phase.
func (d *planDecoder) settings(mask uint64, p, prev *PhasePlan) {
	p.Timeout, p.IdleTimeout, p.AutoAdvance = prev.Timeout, prev.IdleTimeout, prev.AutoAdvance
	if mask&sameTimeout == 0 {
		p.Timeout = d.settingDuration()
	}
	if mask&sameIdleTimeout == 0 {
		p.IdleTimeout = d.settingDuration()
	}
	if mask&sameAutoAdvance == 0 {
		p.AutoAdvance = d.settingBool()
	}
	if d.bool() {
		p.DoneWhen = d.exprPool.one(d.settingExpr())
	}
	if d.bool() {
		p.When = d.exprPool.one(d.settingExpr())
	}
	if d.bool() {
		p.Writes = &Setting[[]string]{d.strings(), d.origin()}
	}
	p.OnOutOfScope = prev.OnOutOfScope
	if mask&sameOnOutOfScope == 0 {
		p.OnOutOfScope = d.settingString()
	}
}

// triggers reads a list of triggers, some of them the previous phase's
// (before).
func (d *planDecoder) triggers(before []TriggerPlan) []TriggerPlan {
	n := d.length()
	if n < 0 {
		return nil
	}
	out := d.triggerPool.take(n)
	for i := range out {
		if k := d.uint(); k > 0 {
			if k > uint64(len(before)) {
				d.failed = true
				return nil
			}
			out[i] = before[k-1]
			continue
		}
		out[i] = TriggerPlan{Name: d.str(), Expr: d.expr(), From: d.origin()}
	}
	return out
}

// step reads a step; the steps with the phase's prompt share one copy of
// it, made at the first (*shared).
func (d *planDecoder) step(s *StepPlan, prompt Setting[string], shared **Setting[string], prev *StepPlan) {
	mask := d.uint()
	if mask != 0 && prev == nil || mask >= sameStepIdleTimeout<<1 {
		d.failed = true
		return
	}
	s.Name, s.From = d.str(), d.origin()
	if d.bool() {
		i := d.uint()
		if i == 0 || i > uint64(len(d.agents)) {
			d.failed = true
			return
		}
		// Shared by the steps of that agent: a plan is never changed.
		s.Agent = &d.agents[i-1]
	}
	if mask&sameStepRun != 0 {
		s.Run = prev.Run
	} else {
		s.Run = d.str()
	}
	switch d.uint() {
	case noPrompt:
	case phasePrompt:
		if *shared == nil {
			*shared = d.promptPool.one(prompt)
		}
		s.Prompt = *shared
	case ownPrompt:
		s.Prompt = d.promptPool.one(d.settingString())
	default:
		d.failed = true
	}
	d.stepLimits(mask, s, prev)
}

// stepLimits reads a step's timeouts, or copies prev's.
func (d *planDecoder) stepLimits(mask uint64, s, prev *StepPlan) {
	if mask&sameStepTimeout != 0 {
		s.Timeout = prev.Timeout
	} else {
		s.Timeout = d.settingDuration()
	}
	if mask&sameStepIdleTimeout != 0 {
		s.IdleTimeout = prev.IdleTimeout
	} else {
		s.IdleTimeout = d.settingDuration()
	}
}
