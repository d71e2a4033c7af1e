package main

import (
	"context"
	"fmt"
	"github.com/pipeline-dev/pipeline/internal/render"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/internal/termsafe"
)

// resumeOptions are resume's flags.
type resumeOptions struct {
	flags  *storeFlags
	output *outputFlag
	grace  time.Duration
	phase  string
	notes  string
	cf     *ciFlags
	file   string
	dryRun bool
	bf     *backendFlags
}

func resumeCommand() *cobra.Command {
	o := &resumeOptions{}
	cmd := newCommand(&cobra.Command{
		Use:     "resume [SESSION]",
		Short:   "Continue a paused or failed session",
		Long:    helpText("resume"),
		Example: helpText("resume.example"),
		Args:    cobra.MaximumNArgs(1),
	}, o.run)
	o.flags = addStoreFlags(cmd, true)
	o.output = addOutputFlag(cmd)
	cmd.Flags().DurationVar(&o.grace, "grace", 5*time.Second, "time a stopped step gets to exit after SIGINT before it is killed")
	cmd.Flags().StringVar(&o.phase, "phase", "", "jump to this phase instead of continuing where the session paused")
	cmd.Flags().StringVar(&o.notes, "notes", "", "notes for the agent, shown in its resume context")
	o.cf = addCIFlags(cmd)
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "print the resume context that would be sent, and send, start and write nothing")
	cmd.Flags().StringVar(&o.file, "session-file", "", "import the session exported to this file (pipeline export) into the store first, then resume it")
	o.bf = addBackendFlags(cmd)
	return cmd
}

func (o *resumeOptions) run(cmd *cobra.Command, args []string) error {
	id := ""
	if len(args) == 1 {
		id = args[0]
	}
	if o.dryRun || !o.endsWithRun(cmd) {
		// main caught the signals ahead (runsAndEndsHere): a dry run and
		// the prompt at a pause take them as they always have.
		local.LetSignalsAheadGo()
	}
	if o.grace < 0 {
		return usagef("--grace %s is negative: give the time a stopped step gets before it is killed, 0 to kill it at once", o.grace)
	}
	if err := o.output.check(); err != nil {
		return err
	}
	fl, err := o.bf.resolve(o.flags.file, nil)
	if err != nil {
		return err
	}
	if fl != nil {
		// Followed on a fleet: Ctrl+C ends the following, as before.
		local.LetSignalsAheadGo()
	}
	be, err := fl.chosen(cmd, "dry-run", "session-file", "junit", "no-human-gates", "state-dir")
	if err != nil {
		return err
	}
	defer be.Close()
	// --dry-run and --session-file are the local store's: refused above
	// on a fleet.
	if o.dryRun {
		if o.file != "" {
			return usagef("--dry-run writes nothing, and --session-file imports into the store: import it first (pipeline import), then resume --dry-run")
		}
		return resumeDryRun(cmd, o.flags, o.output, id, o.notes, o.phase)
	}
	if o.file != "" {
		var err error
		if id, err = importSessionFile(cmd, o.flags, o.file, id); err != nil {
			return err
		}
	}
	return be.Resume(cmd.Context(), app.ResumeRequest{Pipeline: o.flags.pipeline(sayTo(cmd)), Session: id,
		Notes: o.notes, Phase: o.phase, NoHumanGates: o.cf.noHumanGates}, &resumeView{o: o, cmd: cmd})
}

// endsWithRun: this process resumes the session here and ends with its
// run (no prompt at a pause), so the signals main caught ahead are its
// run's.
func (o *resumeOptions) endsWithRun(cmd *cobra.Command) bool {
	p := o.flags.pipeline(func(string, ...any) {})
	return o.cf.launch(&launch{cmd: cmd, json: o.output.json(), pipeline: &p}).endsWithRun()
}

// resumeView is what resume shows of the session its backend resumed.
type resumeView struct {
	o   *resumeOptions
	cmd *cobra.Command
}

// Drive runs the session here with the view, the CI reports and the
// pause prompt.
func (v *resumeView) Drive(_ context.Context, opened *app.Opened) error {
	sess := opened.Session
	fmt.Fprintf(v.cmd.ErrOrStderr(), "resuming session %s\n", sess.ID())
	p := v.o.flags.pipeline(sayTo(v.cmd))
	l := v.o.cf.launch(&launch{cmd: v.cmd, grace: v.o.grace, json: v.o.output.json(), pipeline: &p})
	return l.run(sess, opened.Events...)
}

// Follow follows the session resumed on the fleet.
func (v *resumeView) Follow(ctx context.Context, s app.Started) error {
	fmt.Fprintf(v.cmd.ErrOrStderr(), "resuming session %s\n", s.ID)
	return followFleet(ctx, v.cmd, s, followOptions{json: v.o.output.json(), failOnPause: v.o.cf.failOnPause})
}

// resumeDryRun prints what resume would send: the step, and the resume
// context before the first agent prompt. It reads the session as status
// does: no lock, nothing written.
func resumeDryRun(cmd *cobra.Command, flags *storeFlags, output *outputFlag, id, notes, phase string) error {
	p, err := app.PreviewResume(cmd.Context(), app.ResumeRequest{Pipeline: flags.pipeline(sayTo(cmd)), Session: id, Notes: notes, Phase: phase})
	if err != nil {
		return err
	}
	if p.Warning != "" {
		printError(cmd.ErrOrStderr(), "pipeline: "+p.Warning+"\n")
	}
	if output.json() {
		return render.JSON(cmd.OutOrStdout(), p)
	}
	w := cmd.ErrOrStderr()
	fmt.Fprintf(w, "dry run: session %s would resume phase %s, step %s (attempt %d); nothing was sent or written\n",
		p.Session, p.Phase, p.Step, p.Attempt)
	switch {
	case p.AgentStep == "":
		fmt.Fprintln(w, "no agent step is left to run: no resume context would be sent")
		return nil
	case p.AgentPhase != p.Phase || p.AgentStep != p.Step:
		fmt.Fprintf(w, "the resume context would go before the prompt of the first agent step, %s/%s (as the session stands now):\n", p.AgentPhase, p.AgentStep)
	default:
		fmt.Fprintln(w, "the resume context that would go before its prompt:")
	}
	_, err = fmt.Fprintln(termsafe.Output(cmd.OutOrStdout()), p.ResumeContext)
	return err
}
