package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
)

const replayHelp = `Start a new session that replays SESSION: the same phases.yaml, the spec as
it was when SESSION started, and, where SESSION stopped and a human
resumed it, the same notes at the same point. The replay runs unattended:
it resumes itself there, in this process, with what the human gave.

A point is the n-th stop of the session at a phase and step for one
reason: "the 1st stop at design/agent (checkpoint)". The reason is the
pause's (a trigger, checkpoint, needs-human, phase-complete for
auto_advance: false, out-of-scope …) or "failed". What the human gave
there: the notes of pause --notes and of notes on the paused session, the
working-set changes (memory pin, task add …), and the resume's --notes
and --phase. A pause by hand or Ctrl+C is no point (a replay cannot stop
where a human stopped it); its notes go with the next point.

A stop of the replay that the original did not have stays a stop (exit 3
for a pause); the original's interventions still to give are kept in the
replay, and pipeline resume gives each at its point.

--model replaces the model of every agent step; --agent replaces the kind
(claude, gemini, codex or command; the agent CLI must be there, as
doctor checks). --from starts at PHASE (the phases before it skipped),
as run --from. The replay runs in the project as it is now: it does not
restore the work tree to the original's start.

The replay records replay_of (the original, the model and agent given):
status shows it, sessions marks it. pipeline diff ORIGINAL REPLAY
compares them.

Exit status as for run: 0 completed, 1 failed, 2 usage, spec or
environment error (the phases are not the original's, an unknown kind),
3 paused.`

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
		Use:   "replay SESSION [--model M] [--agent KIND] [--from PHASE]",
		Short: "Run a session again: the same plan, spec and human notes at the same points; another model or agent if asked",
		Long:  replayHelp,
		Example: `  pipeline replay 20261125-093000123-a1b2c3 --model haiku
  pipeline replay 20261125-093000123-a1b2c3 --agent gemini --model gemini-2.5-flash
  pipeline replay 20261125-093000123-a1b2c3 --from implementation -o json`,
		Args: cobra.ExactArgs(1),
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
	fmt.Fprintf(cmd.ErrOrStderr(), "replaying session %s as session %s%s: %s\n", of.Session, r.Session.ID(), describeOverrides(of), describeCues(r.Cues))
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
		printChecks(cmd.ErrOrStderr(), plan.File, checks)
		return usagef("--agent %s: the agent CLI cannot run here (see above; pipeline doctor checks it)", kind)
	}
	return nil
}

// describeOverrides says what a replay runs differently.
func describeOverrides(of *engine.ReplayOf) string {
	var parts []string
	if of.Agent != "" {
		parts = append(parts, "agent "+of.Agent)
	}
	if of.Model != "" {
		parts = append(parts, "model "+of.Model)
	}
	if of.Spec != "" {
		parts = append(parts, "the spec as it started")
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
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
