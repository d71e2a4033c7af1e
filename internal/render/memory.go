package render

import "strings"

import "text/tabwriter"

import "fmt"

import "github.com/pipeline-dev/pipeline/engine"

import "github.com/pipeline-dev/pipeline/app"

import "io"

// ProjectMemory writes the project's pinned facts (pipeline memory
// --project).
func ProjectMemory(w io.Writer, r *app.ProjectMemoryResponse) error {
	if len(r.PinnedFacts) == 0 {
		_, err := fmt.Fprintln(w, "no project facts pinned (pipeline memory pin --project TEXT pins one)")
		return err
	}
	fmt.Fprintf(w, "Project facts (%s), in every session's resume context:\n", r.Project)
	writeItems(w, r.PinnedFacts, false)
	return nil
}

// WorkingSet writes a session's working set, and the project's facts its
// resume context gets too (pipeline memory).
func WorkingSet(w io.Writer, r *app.WorkingSetResponse) error {
	fmt.Fprintf(w, "session %s (%s)\n", r.Session, r.Status)
	empty := len(r.Summary)+len(r.PinnedFacts)+len(r.Decisions)+len(r.OpenTasks)+len(r.DoneTasks)+len(r.FilesTouched) == 0
	if empty && len(r.ProjectFacts) == 0 {
		fmt.Fprintln(w, "\nThe working set is empty: the agent printed no [DECISION], [FACT], [TODO], [DONE] or [SUMMARY] line yet,\nno phase changed a file git sees, and nothing was pinned (pipeline memory pin TEXT).")
	}
	section := func(title string, items []engine.MemoryItem, closed bool) {
		if len(items) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s\n", title)
		writeItems(w, items, closed)
	}
	section("Summary", r.Summary, false)
	section("Pinned facts", r.PinnedFacts, false)
	section("Project facts (pipeline memory --project)", r.ProjectFacts, false)
	section("Decisions", r.Decisions, false)
	section("Open tasks", r.OpenTasks, false)
	section("Done tasks", r.DoneTasks, true)
	if len(r.FilesTouched) > 0 {
		fmt.Fprintf(w, "\nFiles touched (%d)\n", len(r.FilesTouched))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, f := range r.FilesTouched {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", f.Path, f.Phase, f.At.Local().Format("2006-01-02 15:04"))
		}
		tw.Flush()
	}
	if r.ProjectError != "" {
		fmt.Fprintf(w, "\nproject memory: %s\n", r.ProjectError)
	}
	return nil
}

// writeItems lists working-set items: number, text, then where and when
// they came from.
func writeItems(w io.Writer, items []engine.MemoryItem, closed bool) {
	for _, m := range items {
		from := m.Source
		if m.Phase != "" {
			from += ", " + m.Phase
		}
		from += ", " + m.At.Local().Format("2006-01-02 15:04")
		if closed && m.Closed != nil && m.ClosedBy != "" && m.ClosedBy != m.Text {
			from += fmt.Sprintf("; closed by %q", m.ClosedBy)
		}
		fmt.Fprintf(w, "  #%-3d %s  (%s)\n", m.ID, strings.ReplaceAll(m.Text, "\n", " "), from)
	}
}
