package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
)

// forkOptions are the flags of fork.
type forkOptions struct {
	flags    *storeFlags
	output   *outputFlag
	at       string
	worktree string
	grace    time.Duration
	cf       *ciFlags
}

func forkCommand() *cobra.Command {
	o := &forkOptions{}
	cmd := newCommand(&cobra.Command{
		Use:     "fork [SESSION] --at PHASE [--worktree DIR]",
		Short:   "Start a new session from the checkpoint before a phase, in a git worktree of its own",
		Long:    helpText("fork"),
		Example: helpText("fork.example"),
		Args:    cobra.MaximumNArgs(1),
	}, o.run)
	o.flags = addStoreFlags(cmd, true)
	o.output = addOutputFlag(cmd)
	cmd.Flags().StringVar(&o.at, "at", "", "the phase the fork starts at, from the checkpoint taken before it (required)")
	cmd.Flags().StringVar(&o.worktree, "worktree", "", "the folder of the fork's git worktree (default: beside the project, <project>-fork-<phase>-<n>)")
	cmd.Flags().DurationVar(&o.grace, "grace", 5*time.Second, "time a stopped step gets to exit after SIGINT before it is killed")
	o.cf = addCIFlags(cmd)
	return cmd
}

// run prepares the fork (app.PrepareFork) and runs it here.
func (o *forkOptions) run(cmd *cobra.Command, args []string) error {
	if err := o.output.check(); err != nil {
		return err
	}
	req := app.ForkRequest{Pipeline: o.flags.pipeline(sayTo(cmd)), At: o.at, Worktree: o.worktree, Check: checkAdapters}
	if len(args) == 1 {
		req.Session = args[0]
	}
	r, err := app.PrepareFork(cmd.Context(), req)
	if err != nil {
		return err
	}
	defer r.Session.Store.Close()
	fmt.Fprintf(cmd.ErrOrStderr(), "fork: session %s in %s\n", r.Session.ID(), r.Worktree)
	l := o.cf.launch(&launch{cmd: cmd, grace: o.grace, json: o.output.json()})
	return l.run(r.Session, r.First)
}
