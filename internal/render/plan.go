package render

import "github.com/pipeline-dev/pipeline/internal/filewatch"

import "encoding/json"

import "strings"

import "maps"

import "slices"

import "fmt"

import "text/tabwriter"

import "bytes"

import "github.com/pipeline-dev/pipeline/engine/spec"

import "io"

// Plan writes the plan as aligned rows of name, value and origin.
func Plan(w io.Writer, plan *spec.Plan) error {
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	row := func(indent, label, value string, from spec.Origin) {
		fmt.Fprintf(tw, "%s%s\t%s\t%s\n", indent, label, value, from)
	}
	row("", "pipeline", plan.Name.Value, plan.Name.From)
	fmt.Fprintf(tw, "file\t%s\n", plan.File)
	if plan.Spec != "" {
		fmt.Fprintf(tw, "spec\t%s\n", plan.Spec)
		for _, key := range slices.Sorted(maps.Keys(plan.SpecValues)) {
			if key == "agent_phases" || key == "pipeline" {
				continue
			}
			fmt.Fprintf(tw, "  spec.%s\t%s\n", key, short(plainText(plan.SpecValues[key])))
		}
	}
	phases := make([]string, len(plan.Phases))
	for i, p := range plan.Phases {
		phases[i] = p.Name
	}
	row("", "phases", strings.Join(phases, " → "), plan.PhasesFrom)
	if plan.PhasesFrom.Layer == spec.LayerSpec {
		fmt.Fprintf(tw, "  replacing\t%s (phases.yaml)\n", strings.Join(plan.FilePhases, " → "))
	}
	watchRows(row, plan)
	row("", "checkpoint", plan.Checkpoint.Value, plan.Checkpoint.From)
	row("", "backend", describeBackendBlock(plan.Backend.Value), plan.Backend.From)
	// Its own column, as file's: a prompt as wide as the table would push
	// the short values above it (none, 200ms, refs) far from their origins.
	fmt.Fprintf(tw, "compact_prompt\t%s  %s\n", short(plan.CompactPrompt.Value), plan.CompactPrompt.From)
	for i, p := range plan.Phases {
		fmt.Fprintln(tw)
		phaseRows(row, i, p)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// tabwriter pads every cell, the last ones too; trim what it left at
	// the ends of lines.
	for _, line := range strings.Split(strings.TrimSuffix(table.String(), "\n"), "\n") {
		if _, err := fmt.Fprintln(w, strings.TrimRight(line, " ")); err != nil {
			return err
		}
	}
	return nil
}

// phaseRows are the rows of the phase at index i: its prompt, steps,
// triggers and policies.
func phaseRows(row func(indent, label, value string, from spec.Origin), i int, p spec.PhasePlan) {
	row("", fmt.Sprintf("%d. %s", i+1, p.Name), "", p.From)
	row("   ", "prompt", short(p.Prompt.Value), p.Prompt.From)
	if p.When != nil {
		exprRow(row, "when", *p.When)
	}
	for _, s := range p.Steps {
		if s.Agent != nil {
			row("   ", "step "+s.Name, "agent: "+describeAgent(s.Agent.Value), s.Agent.From)
			if s.Prompt != nil && s.Prompt.From != p.Prompt.From {
				row("   ", "  prompt", short(s.Prompt.Value), s.Prompt.From)
			}
		} else {
			row("   ", "step "+s.Name, "run: "+short(s.Run), s.From)
		}
		if s.Timeout != p.Timeout {
			row("   ", "  timeout", s.Timeout.Value.String(), s.Timeout.From)
		}
		if s.IdleTimeout != p.IdleTimeout {
			row("   ", "  idle_timeout", s.IdleTimeout.Value.String(), s.IdleTimeout.From)
		}
	}
	triggerRows(row, "pause_when", p.PauseWhen)
	triggerRows(row, "restart_when", p.RestartWhen)
	exprRow(row, "compact_when", p.CompactWhen)
	exprRow(row, "retry.when", p.Retry.When)
	exprRow(row, "retry.backoff", p.Retry.Backoff)
	exprRow(row, "retry.escalate_when", p.Retry.EscalateWhen)
	row("   ", "timeout", p.Timeout.Value.String(), p.Timeout.From)
	row("   ", "idle_timeout", p.IdleTimeout.Value.String(), p.IdleTimeout.From)
	if p.DoneWhen != nil {
		exprRow(row, "done_when", *p.DoneWhen)
	}
	row("   ", "auto_advance", fmt.Sprint(p.AutoAdvance.Value), p.AutoAdvance.From)
	if p.Writes != nil {
		// Shown only when set: absent, a phase may change anything.
		writes := "[] (read-only)"
		if len(p.Writes.Value) > 0 {
			writes = short(strings.Join(p.Writes.Value, ", "))
		}
		row("   ", "writes", writes, p.Writes.From)
		row("   ", "on_out_of_scope", p.OnOutOfScope.Value, p.OnOutOfScope.From)
	}
}

// watchRows writes the globs whose change resumes the paused sessions, one
// a row, and the debounce.
func watchRows(row func(indent, label, value string, from spec.Origin), plan *spec.Plan) {
	if len(plan.Watch) == 0 {
		row("", "watch", "none", plan.WatchFrom)
	}
	for i, glob := range plan.Watch {
		if i == 0 {
			row("", "watch", short(glob), plan.WatchFrom)
		} else {
			row("", "", short(glob), spec.Origin{})
		}
	}
	debounce := spec.Duration(filewatch.DefaultDebounce)
	if plan.WatchDebounce != nil {
		debounce = *plan.WatchDebounce
	}
	row("", "watch_debounce", debounce.String(), plan.WatchDebounceFrom)
}

func triggerRows(row func(indent, label, value string, from spec.Origin), label string, list []spec.TriggerPlan) {
	if len(list) == 0 {
		row("   ", label, "none", spec.Origin{Layer: spec.LayerDefault})
		return
	}
	for i, t := range list {
		if i > 0 {
			label = ""
		}
		row("   ", label, t.Name+": "+short(t.Expr.Source), t.From)
	}
}

func exprRow(row func(indent, label, value string, from spec.Origin), label string, s spec.Setting[*spec.Expr]) {
	value := "none"
	if s.Value != nil {
		value = short(s.Value.Source)
	}
	row("   ", label, value, s.From)
}

func describeAgent(a spec.Agent) string {
	parts := []string{a.Kind}
	if a.Model != "" {
		parts = append(parts, "model="+a.Model)
	}
	if len(a.Command) > 0 {
		parts = append(parts, "command="+strings.Join(a.Command, " "))
	}
	if len(a.Args) > 0 {
		parts = append(parts, "args="+strings.Join(a.Args, " "))
	}
	if a.Feature != "" {
		parts = append(parts, "feature="+a.Feature)
	}
	if len(a.Env) > 0 {
		parts = append(parts, "env="+strings.Join(slices.Sorted(maps.Keys(a.Env)), ","))
	}
	return strings.Join(parts, " ")
}

// short keeps one line of at most 72 characters of text for the table.
func short(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > 72 {
		return string(r[:71]) + "…"
	}
	return text
}

// plainText writes a frontmatter value: text as it is, anything else as
// JSON.
func plainText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	out, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(out)
}

// describeBackendBlock is the backend: block in one cell: local, or
// temporal with what it sets.
func describeBackendBlock(b spec.Backend) string {
	if b.Kind != spec.BackendTemporal {
		return b.Kind
	}
	parts := []string{b.Kind}
	for _, kv := range [][2]string{{"address", b.Address}, {"namespace", b.Namespace}, {"task_queue", b.TaskQueue}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+" "+kv[1])
		}
	}
	if b.HeartbeatTimeout != nil {
		parts = append(parts, "heartbeat_timeout "+b.HeartbeatTimeout.String())
	}
	return strings.Join(parts, ", ")
}
