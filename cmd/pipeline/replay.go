package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/render"
)

// replayOptions are the flags of replay.
type replayOptions struct {
	flags  *storeFlags
	output *outputFlag
	grace  time.Duration
	model  string
	agent  string
	from   string
	cf     *ciFlags
}

func replayCommand() *cobra.Command {
	o := &replayOptions{}
	cmd := newCommand(&cobra.Command{
		Use:     "replay SESSION [--model M] [--agent KIND] [--from PHASE]",
		Short:   "Run a session again: the same plan, spec and human notes at the same points; another model or agent if asked",
		Long:    helpText("replay"),
		Example: helpText("replay.example"),
		Args:    cobra.ExactArgs(1),
	}, o.run)
	o.flags = addStoreFlags(cmd, false)
	o.output = addOutputFlag(cmd)
	cmd.Flags().StringVar(&o.model, "model", "", "the model of every agent step of the replay")
	cmd.Flags().StringVar(&o.agent, "agent", "", "the agent kind of every agent step of the replay: claude, gemini, codex or command")
	cmd.Flags().StringVar(&o.from, "from", "", "start the replay at this phase; the phases before it are skipped")
	cmd.Flags().DurationVar(&o.grace, "grace", 5*time.Second, "time a stopped step gets to exit after SIGINT before it is killed")
	o.cf = addCIFlags(cmd)
	return cmd
}

// run prepares the replay (app.PrepareReplay) and runs it here.
func (o *replayOptions) run(cmd *cobra.Command, args []string) error {
	if err := o.output.check(); err != nil {
		return err
	}
	if o.grace < 0 {
		return usagef("--grace %s is negative: give the time a stopped step gets before it is killed, 0 to kill it at once", o.grace)
	}
	r, err := app.PrepareReplay(cmd.Context(), app.ReplayRequest{Pipeline: o.flags.pipeline(sayTo(cmd)), Session: args[0],
		Model: o.model, Agent: o.agent, From: o.from,
		Warn:  func(w []spec.Problem) { printWarnings(cmd.ErrOrStderr(), w) },
		Check: func(plan *spec.Plan) error { return checkReplayAgent(cmd, plan, o.agent) }})
	if err != nil {
		return err
	}
	defer r.Session.Store.Close()
	of := r.First.ReplayOf
	fmt.Fprintf(cmd.ErrOrStderr(), "replaying session %s as session %s%s: %s\n", of.Session, r.Session.ID(), render.Overrides(of), describeCues(r.Cues))
	l := o.cf.launch(&launch{cmd: cmd, grace: o.grace, json: o.output.json()})
	return l.run(r.Session, r.First)
}

// checkReplayAgent refuses, before anything runs, a replay whose agent
// cannot run: an adapter that is not there, and, when --agent changed
// the kind, a CLI doctor finds missing, too old or broken.
func checkReplayAgent(cmd *cobra.Command, plan *spec.Plan, kind string) error {
	if err := checkAdapters(plan); err != nil {
		return err
	}
	if kind == "" {
		return nil
	}
	checks := doctorChecks(cmd.Context(), plan)
	if !checksOK(checks) {
		render.Checks(cmd.ErrOrStderr(), plan.File, checks)
		return usagef("--agent %s: the agent CLI cannot run here (see above; pipeline doctor checks it)", kind)
	}
	return nil
}

// describeCues says what the replay will give at which points.
func describeCues(c session.Cues) string {
	if len(c.Cues) == 0 {
		return "the original has no human intervention to replay"
	}
	var points []string
	for _, cue := range c.Cues {
		points = append(points, cue.Point.String())
	}
	text := fmt.Sprintf("%d human intervention(s) to give, at %s", len(c.Cues), strings.Join(points, "; "))
	if len(c.Unplaced.Notes) > 0 || len(c.Unplaced.Memory) > 0 {
		text += fmt.Sprintf(" (and %d note(s) given after the original's last point, which no point carries)", len(c.Unplaced.Notes)+len(c.Unplaced.Memory))
	}
	return text
}
