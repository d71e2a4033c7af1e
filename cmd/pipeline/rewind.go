package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
)

func rewindCommand() *cobra.Command {
	var (
		flags  *storeFlags
		output *outputFlag
		to     string
		force  bool
	)
	cmd := newCommand(&cobra.Command{
		Use:   "rewind [SESSION] --to PHASE",
		Short: "Restore the work tree to the checkpoint before a phase and run it again",
		Long: `Restore the work tree to the checkpoint taken before PHASE (when the phase
before it completed, or when the session started), and set SESSION, or the
latest paused, failed or completed session of the pipeline and spec, back
to the start of PHASE as a new attempt; pipeline resume then runs it. The
history is kept: the rewind is recorded as an intervention, nothing is
deleted. HEAD, the branch, the index and the stash are left alone: the
restored files show as changes in git status.

The rewind refuses when the work tree holds changes that no checkpoint of
the session holds; --force first keeps them under
refs/pipeline/<session>/rescued-<n>. The agent's native session goes
back too where the CLI can: Claude (--fork-session) and Codex (codex exec
fork) resume the conversation as PHASE started as a new session; Gemini
CLI starts a fresh one. The next agent step gets the resume context.`,
		Example: `  pipeline rewind --to implementation
  pipeline rewind 20261125-093000123-a1b2c3 --to design --force`,
		Args: cobra.MaximumNArgs(1),
	}, func(cmd *cobra.Command, args []string) error {
		if err := output.check(); err != nil {
			return err
		}
		if to == "" {
			return usagef("rewind needs --to PHASE")
		}
		st, err := flags.existing()
		if err != nil {
			return err
		}
		id := ""
		if len(args) == 1 {
			id = args[0]
		}
		o, err := flags.options(id, engine.StatusPaused, engine.StatusFailed, engine.StatusCompleted)
		if err != nil {
			return err
		}
		o.Say = sayTo(cmd)
		sess, err := session.Open(cmd.Context(), st, o)
		if err != nil {
			return err
		}
		r, err := sess.Rewind(time.Now(), to, force)
		if closeErr := sess.Close(); err == nil && closeErr != nil {
			err = storeWriteFailed(closeErr)
		}
		if err != nil {
			return err
		}
		if output.json() {
			return writeJSON(cmd.OutOrStdout(), struct {
				Session string `json:"session"`
				session.Rewinding
			}{sess.ID(), r})
		}
		out := cmd.OutOrStdout()
		if r.Rescued != "" {
			fmt.Fprintf(out, "the work tree's changes that no checkpoint held are kept under %s\n", r.Rescued)
		}
		fmt.Fprintf(out, "session %s rewound to the start of phase %s (attempt %d): the work tree is as checkpoint %s left it\n",
			sess.ID(), r.Phase, r.Attempt, r.Checkpoint[:min(12, len(r.Checkpoint))])
		fmt.Fprintf(out, "pipeline resume runs phase %s again\n", r.Phase)
		return nil
	})
	flags = addStoreFlags(cmd, false)
	output = addOutputFlag(cmd)
	cmd.Flags().StringVar(&to, "to", "", "the phase to run again (required)")
	cmd.Flags().BoolVar(&force, "force", false, "rewind even when the work tree holds changes in no checkpoint, keeping them under refs/pipeline/<session>/rescued-<n> first")
	return cmd
}
