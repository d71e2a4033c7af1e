package engine

import (
	"fmt"
	"maps"
	"slices"

	"github.com/pipeline-dev/pipeline/triggers"
)

// ReasonWhen is the firing that records a phase skipped because its when:
// was false (see SkippedBy).
const ReasonWhen = "when"

// when decides whether phase i runs: its when: (none: it runs). False
// skips the phase, recording the expression and the values it read, and
// owes the next agent step a resume context that says so. ok is false
// when the expression failed and the session paused at the phase.
func (d *decider) when(i int) (run, ok bool) {
	when := d.plan.Phases[i].When
	if when == nil || when.Value == nil || when.Value.Program() == nil {
		return true, true
	}
	s := d.s
	s.Phase, s.Step, s.Attempt = i, 0, 1
	env := d.whenEnv()
	run, ok = d.condition(*when, env)
	if !ok || run {
		return run, ok
	}
	f := Firing{Reason: ReasonWhen, Expression: when.Value.Source, At: d.now,
		Values: whenValues(env, when.Value.Program())}
	f.Note = fmt.Sprintf("phase %q skipped: when (%s) is false", d.plan.Phases[i].Name, when.Value.Source)
	rec := d.record()
	rec.Status, rec.Ended = StatusSkipped, d.now
	rec.Fired = keepLast(append(rec.Fired, f))
	s.ResumeContext = true
	return false, true
}

// whenEnv is what a when: reads as its phase is reached: the spec's
// frontmatter, every phase's results so far, and the files the session
// changed (each phase's, counted once).
func (d *decider) whenEnv() *triggers.Env {
	phases := make(map[string]triggers.PhaseVars, len(d.plan.Phases))
	seen := map[string]bool{}
	for i, p := range d.plan.Phases {
		var rec PhaseRecord
		if i < len(d.s.Phases) {
			rec = d.s.Phases[i]
		}
		status := string(rec.Status)
		if status == "" {
			status = "pending"
		}
		phases[p.Name] = triggers.PhaseVars{Status: status, FilesChanged: len(rec.Files), Attempts: rec.Attempts}
		for _, f := range rec.Files {
			seen[f] = true
		}
	}
	return &triggers.Env{Spec: d.plan.SpecValues, Phases: phases, FilesChanged: len(seen)}
}

// whenValues are the values a when: read: of phases and spec only the
// names it reads (all of them when it reads one by a computed name).
func whenValues(env *triggers.Env, e *triggers.Expression) map[string]any {
	values := env.Values(e.Reads)
	if _, read := values["phases"]; read {
		phases := make(map[string]map[string]any, len(env.Phases))
		for name, p := range env.Phases {
			// As a stored state reads it back: plain maps.
			phases[name] = map[string]any{"status": p.Status, "files_changed": p.FilesChanged, "attempts": p.Attempts}
		}
		values["phases"] = named(phases, e.PhaseRefs)
	}
	if _, read := values["spec"]; read {
		values["spec"] = named(env.Spec, e.SpecRefs)
	}
	return values
}

// named keeps the entries of m that refs name; all of m without refs.
func named[V any](m map[string]V, refs []triggers.StepRef) map[string]any {
	out := make(map[string]any, len(m))
	for name, v := range m {
		if len(refs) == 0 || slices.ContainsFunc(refs, func(r triggers.StepRef) bool { return r.Name == name }) {
			out[name] = v
		}
	}
	return out
}

// SkippedBy is the when: that skipped a phase, with the values it read;
// nil when the phase was not skipped by its when:.
func SkippedBy(rec PhaseRecord) *Firing {
	if rec.Status != StatusSkipped {
		return nil
	}
	for i := len(rec.Fired) - 1; i >= 0; i-- {
		if rec.Fired[i].Reason == ReasonWhen {
			f := rec.Fired[i]
			return &f
		}
	}
	return nil
}

// FlatValues writes the values an expression read as name=value, a map's
// entries as name.key=value, sorted: spec.priority=high.
func FlatValues(values map[string]any) []string {
	return flatValues("", values)
}

func flatValues(prefix string, values map[string]any) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(values)) {
		if inner, isMap := values[name].(map[string]any); isMap {
			out = append(out, flatValues(prefix+name+".", inner)...)
			continue
		}
		out = append(out, fmt.Sprintf("%s%s=%v", prefix, name, values[name]))
	}
	return out
}
