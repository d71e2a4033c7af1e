package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/internal/render"
)

// memoryFlags are what every memory command shares: the store, the
// session (or the project) and the output.
type memoryFlags struct {
	store   *storeFlags
	output  *outputFlag
	session string
	project bool
	bf      *backendFlags
}

func addMemoryFlags(cmd *cobra.Command, withSessionFlag bool) *memoryFlags {
	f := &memoryFlags{store: addStoreFlags(cmd, true), output: addOutputFlag(cmd)}
	if withSessionFlag {
		cmd.Flags().StringVar(&f.session, "session", "", "the session (default: the latest of the pipeline and spec)")
		cmd.RegisterFlagCompletionFunc("session", completeSessions)
	}
	cmd.Flags().BoolVar(&f.project, "project", false, "the project's memory (.pipeline/memory.json), which every session's resume context gets")
	f.bf = addBackendFlags(cmd)
	return f
}

// backend is where the session's working set is: here, or in its
// workflow on the fleet.
func (f *memoryFlags) backend(cmd *cobra.Command) (app.Backend, error) {
	be, _, err := f.bf.backend(cmd, f.store.file)
	return be, err
}

func memoryCommand() *cobra.Command {
	var flags *memoryFlags
	cmd := newCommand(&cobra.Command{
		Use:     "memory [SESSION]",
		Short:   "Show a session's working set, or the project's memory",
		Long:    helpText("memory"),
		Example: helpText("memory.example"),
		Args:    cobra.MaximumNArgs(1),
	}, func(cmd *cobra.Command, args []string) error {
		if err := flags.output.check(); err != nil {
			return err
		}
		if flags.project {
			if len(args) == 1 {
				return usagef("--project shows the project's memory; it takes no session")
			}
			return showProjectMemory(cmd, flags)
		}
		id := ""
		if len(args) == 1 {
			id = args[0]
		}
		return showWorkingSet(cmd, flags, id)
	})
	flags = addMemoryFlags(cmd, false)
	cmd.AddCommand(memoryPinCommand(), memoryUnpinCommand(), memoryTaskCommand())
	return cmd
}

func memoryPinCommand() *cobra.Command {
	var flags *memoryFlags
	cmd := newCommand(&cobra.Command{
		Use:   "pin TEXT",
		Short: "Pin a fact: the resume context always carries it",
		Long:  helpText("memory-pin"),
		Args:  cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string) error {
		text := strings.TrimSpace(args[0])
		if text == "" {
			return usagef("the fact to pin is empty")
		}
		return editMemory(cmd, flags, engine.MemoryNote{Kind: engine.NoteFact, Text: text})
	})
	flags = addMemoryFlags(cmd, true)
	return cmd
}

func memoryUnpinCommand() *cobra.Command {
	var flags *memoryFlags
	cmd := newCommand(&cobra.Command{
		Use:   "unpin N",
		Short: "Unpin a fact by its number (pipeline memory lists them)",
		Args:  cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string) error {
		id, err := itemNumber(args[0])
		if err != nil {
			return err
		}
		return editMemory(cmd, flags, engine.MemoryNote{Kind: engine.NoteUnpin, ID: id})
	})
	flags = addMemoryFlags(cmd, true)
	return cmd
}

func memoryTaskCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "task",
		Short: "Add an open task, or close one",
		Args:  cobra.NoArgs,
	}
	var addFlags, doneFlags *memoryFlags
	add := newCommand(&cobra.Command{
		Use:   "add TEXT",
		Short: "Add an open task to the working set",
		Args:  cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string) error {
		text := strings.TrimSpace(args[0])
		if text == "" {
			return usagef("the task is empty")
		}
		return editMemory(cmd, addFlags, engine.MemoryNote{Kind: engine.NoteTodo, Text: text})
	})
	done := newCommand(&cobra.Command{
		Use:   "done TEXT|N",
		Short: "Close an open task, by its number or its text (a close match will do)",
		Args:  cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string) error {
		note := engine.MemoryNote{Kind: engine.NoteDone, Text: strings.TrimSpace(args[0])}
		if id, err := strconv.Atoi(note.Text); err == nil {
			note = engine.MemoryNote{Kind: engine.NoteDone, ID: id}
		}
		if note.Text == "" && note.ID == 0 {
			return usagef("name the task to close: its number (pipeline memory lists them) or its text")
		}
		return editMemory(cmd, doneFlags, note)
	})
	addFlags = addMemoryFlags(add, true)
	doneFlags = addMemoryFlags(done, true)
	add.Flags().MarkHidden("project")
	done.Flags().MarkHidden("project")
	cmd.AddCommand(add, done)
	return cmd
}

// itemNumber reads the number of a working-set item.
func itemNumber(arg string) (int, error) {
	id, err := strconv.Atoi(strings.TrimPrefix(arg, "#"))
	if err != nil || id <= 0 {
		return 0, usagef("%q is not the number of a pinned fact: pipeline memory lists them with theirs", arg)
	}
	return id, nil
}

// showProjectMemory prints the project's pinned facts.
func showProjectMemory(cmd *cobra.Command, flags *memoryFlags) error {
	r, err := app.ProjectMemory(cmd.Context(), flags.store.pipeline(sayTo(cmd)))
	if err != nil {
		return err
	}
	return flags.output.print(cmd, r, func(w io.Writer) error { return render.ProjectMemory(w, r) })
}

// showWorkingSet prints a session's working set, and the project's facts
// its resume context gets too.
func showWorkingSet(cmd *cobra.Command, flags *memoryFlags, id string) error {
	be, err := flags.backend(cmd)
	if err != nil {
		return err
	}
	defer be.Close()
	r, err := be.WorkingSet(cmd.Context(), app.MemoryRequest{Pipeline: flags.store.pipeline(sayTo(cmd)), Session: id})
	if err != nil {
		return err
	}
	return flags.output.print(cmd, r, func(w io.Writer) error { return render.WorkingSet(w, r) })
}

// editMemory applies one human change, with --project to the project's
// memory (app.RememberProject), else to a session's working set, and
// says what it did.
func editMemory(cmd *cobra.Command, flags *memoryFlags, note engine.MemoryNote) error {
	if err := flags.output.check(); err != nil {
		return err
	}
	req := app.RememberRequest{MemoryRequest: app.MemoryRequest{Pipeline: flags.store.pipeline(sayTo(cmd)), Session: flags.session}, Note: note}
	if flags.project {
		r, err := app.RememberProject(cmd.Context(), req)
		if err != nil {
			return err
		}
		return flags.output.print(cmd, r, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "%s: #%d %s\n", r.Result, r.Item.ID, r.Item.Text)
			return err
		})
	}
	be, err := flags.backend(cmd)
	if err != nil {
		return err
	}
	defer be.Close()
	r, err := be.Remember(cmd.Context(), req)
	if err != nil {
		return err
	}
	return flags.output.print(cmd, r, func(w io.Writer) error {
		result := r.Result
		if r.Item != nil {
			result += fmt.Sprintf(": #%d %s", r.Item.ID, r.Item.Text)
		}
		if r.Queued {
			result += " (the session is running: it takes it before its next step)"
		}
		_, err := fmt.Fprintf(w, "session %s: %s\n", r.Session, result)
		return err
	})
}
