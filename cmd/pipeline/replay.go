package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// replaySpecsFolder is the store's folder of the specs replays read: the
// spec of an original as it started, when it has changed since.
const replaySpecsFolder = "replay-specs"

func replayCommand() *cobra.Command {
	var (
		flags  *storeFlags
		output *outputFlag
		grace  time.Duration
		model  string
		agent  string
		from   string
		cf     *ciFlags
	)
	cmd := newCommand(&cobra.Command{
		Use:   "replay SESSION [--model M] [--agent KIND] [--from PHASE]",
		Short: "Run a session again: the same plan, spec and human notes at the same points; another model or agent if asked",
		Long: `Start a new session that replays SESSION: the same phases.yaml, the spec as
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
3 paused.`,
		Example: `  pipeline replay 20261125-093000123-a1b2c3 --model haiku
  pipeline replay 20261125-093000123-a1b2c3 --agent gemini --model gemini-2.5-flash
  pipeline replay 20261125-093000123-a1b2c3 --from implementation -o json`,
		Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string) error {
		if err := output.check(); err != nil {
			return err
		}
		if grace < 0 {
			return usagef("--grace %s is negative: give the time a stopped step gets before it is killed, 0 to kill it at once", grace)
		}
		switch agent {
		case "", "claude", "gemini", "codex", "command":
		default:
			return usagef("--agent must be claude, gemini, codex or command, not %q", agent)
		}
		say := sayTo(cmd)
		ref, err := findSession(flags, args[0])
		if err != nil {
			return err
		}
		defer ref.Close()
		if ref.Running() {
			return usagef("session %s is running: replay it once it has stopped (its interventions are not all known yet)", ref.ID())
		}
		orig, _, err := ref.State()
		if err != nil {
			return err
		}
		events, err := session.Events(ref.X)
		if err != nil {
			return err
		}
		started, ok := firstStarted(events)
		if !ok {
			return usagef("session %s has not started: there is nothing to replay", ref.ID())
		}
		st := ref.Store
		file := ref.X.Meta.File
		specFile, specNote, err := replaySpec(st, ref)
		if err != nil {
			return err
		}
		if specNote != "" {
			say("%s", specNote)
		}
		plan, err := spec.Load(file, specFile)
		if err != nil {
			return err
		}
		printWarnings(cmd.ErrOrStderr(), plan.Warnings)
		// The plan the original started with, if the files are the same.
		switch started.Plan {
		case "", ref.Plan.Digest:
		case ref.Plan.WithoutHumanGates().Digest:
			say("session %s ran with --no-human-gates: so does the replay", ref.ID())
			plan = plan.WithoutHumanGates()
		default:
			say("phases.yaml or the spec's frontmatter changed since session %s started (its plan was %s, now %s): the replay runs them as they are now",
				ref.ID(), shortDigest(started.Plan), shortDigest(ref.Plan.Digest))
		}
		if err := samePhases(plan, orig, ref.ID()); err != nil {
			return err
		}
		plan = session.ReplayPlan(plan, agent, model)
		if err := checkReplayAgent(cmd, plan, agent); err != nil {
			return err
		}
		first, only := started.From, started.Only
		if from != "" {
			first, only = from, false
		}
		if err := session.CheckPhase(plan, first); err != nil {
			return err
		}
		cues := session.CuesOf(ref.Plan, events)
		cues.Of, cues.Model, cues.Agent = ref.ID(), model, agent
		sess, err := session.Open(cmd.Context(), st, session.Options{File: file, Plan: plan, Create: session.Always, Say: say})
		if err != nil {
			return err
		}
		if err := sess.WriteCues(cues); err != nil {
			sess.Close()
			return storeWriteFailed(err)
		}
		of := &engine.ReplayOf{Session: ref.ID(), Model: model, Agent: agent}
		if specFile != "" {
			of.Spec = st.Rel(specFile)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "replaying session %s as session %s%s: %s\n", ref.ID(), sess.ID(), describeOverrides(of), describeCues(cues))
		l := cf.launch(&launch{cmd: cmd, grace: grace, json: output.json()})
		return l.run(sess, engine.Started{At: time.Now(), Plan: plan.Digest, From: first, Only: only, ReplayOf: of})
	})
	flags = addStoreFlags(cmd, false)
	output = addOutputFlag(cmd)
	cmd.Flags().StringVar(&model, "model", "", "the model of every agent step of the replay")
	cmd.Flags().StringVar(&agent, "agent", "", "the agent kind of every agent step of the replay: claude, gemini, codex or command")
	cmd.Flags().StringVar(&from, "from", "", "start the replay at this phase; the phases before it are skipped")
	cmd.Flags().DurationVar(&grace, "grace", 5*time.Second, "time a stopped step gets to exit after SIGINT before it is killed")
	cf = addCIFlags(cmd)
	return cmd
}

// firstStarted is the event a session started with.
func firstStarted(events []engine.Event) (engine.Started, bool) {
	for _, ev := range events {
		if s, ok := ev.(engine.Started); ok {
			return s, true
		}
	}
	return engine.Started{}, false
}

// replaySpec is the spec file a replay of ref reads ("": the session's
// own spec, as it is) and what to say of it. A spec that changed since
// the session started is replayed as it was then: its copy, kept at the
// start, is written to the store's replay-specs folder, where it stays
// for the replay's resumes (clean does not remove it).
func replaySpec(st *store.Store, ref *session.Ref) (string, string, error) {
	current := ref.X.Meta.Spec
	if current == "" {
		return "", "", nil
	}
	hash, err := ref.X.ReadFile(session.SpecAtStartHashFile)
	if err != nil {
		return "", "", err
	}
	kept, err := ref.X.ReadFile(session.SpecAtStartFile)
	if err != nil {
		return "", "", err
	}
	if hash == nil || kept == nil {
		return "", fmt.Sprintf("session %s kept no copy of its spec as it started (it began before pipeline kept one): the replay reads %s as it is now",
			ref.ID(), relativeToHere(current)), nil
	}
	now, readErr := os.ReadFile(current)
	if readErr == nil && session.ContentHash(now) == strings.TrimSpace(string(hash)) {
		return "", "", nil
	}
	dir, err := st.Folder(replaySpecsFolder)
	if err != nil {
		return "", "", storeWriteFailed(err)
	}
	path := filepath.Join(dir, ref.ID()+"-"+filepath.Base(current))
	if old, err := os.ReadFile(path); err != nil || !bytes.Equal(old, kept) {
		if err := writeFileAtomic(path, 0o600, func(w io.Writer) error {
			_, err := w.Write(kept)
			return err
		}); err != nil {
			return "", "", storeWriteFailed(err)
		}
	}
	why := "changed"
	if errors.Is(readErr, fs.ErrNotExist) {
		why = "is gone"
	}
	return path, fmt.Sprintf("the spec %s %s since session %s started: the replay reads it as it was then, from %s",
		relativeToHere(current), why, ref.ID(), relativeToHere(path)), nil
}

// samePhases refuses a plan whose phases are not those the original
// session ran, in its order: a replay of other phases compares nothing.
func samePhases(plan *spec.Plan, orig engine.State, id string) error {
	var was, now []string
	for _, p := range orig.Phases {
		was = append(was, p.Name)
	}
	for _, p := range plan.Phases {
		now = append(now, p.Name)
	}
	if !slices.Equal(was, now) {
		return usagef("the phases are not those session %s ran (%s; now %s): a replay runs the same phases",
			id, strings.Join(was, ", "), strings.Join(now, ", "))
	}
	return nil
}

// checkReplayAgent refuses, before anything runs, a replay whose agent
// cannot run: an adapter that is not there, a command agent without its
// program, and, when --agent changed the kind, a CLI doctor finds
// missing, too old or broken.
func checkReplayAgent(cmd *cobra.Command, plan *spec.Plan, kind string) error {
	if err := checkAdapters(plan); err != nil {
		return err
	}
	if kind == "" {
		return nil
	}
	for _, p := range plan.Phases {
		for _, s := range p.Steps {
			if s.Agent != nil && s.Agent.Value.Kind == "command" && len(s.Agent.Value.Command) == 0 {
				return usagef("--agent command needs the program to run, which only phases.yaml can give (agent: {kind: command, command: [...]}): phase %q, step %q has none", p.Name, s.Name)
			}
		}
	}
	checks := doctorChecks(cmd.Context(), plan)
	if !checksOK(checks) {
		printChecks(cmd.ErrOrStderr(), plan.File, checks)
		return usagef("--agent %s: the agent CLI cannot run here (see above; pipeline doctor checks it)", kind)
	}
	return nil
}

func shortDigest(d string) string { return d[:min(12, len(d))] }

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
