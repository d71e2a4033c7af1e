package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
)

func forkCommand() *cobra.Command {
	var (
		flags    *storeFlags
		output   *outputFlag
		at       string
		worktree string
		grace    time.Duration
		cf       *ciFlags
	)
	cmd := newCommand(&cobra.Command{
		Use:   "fork [SESSION] --at PHASE [--worktree DIR]",
		Short: "Start a new session from the checkpoint before a phase, in a git worktree of its own",
		Long: `Make a git worktree at DIR (by default a folder beside the project, named
<project>-fork-<phase>-<n>) from the checkpoint taken before PHASE in
SESSION, or in the latest session of the pipeline and spec, and run a new
session there from PHASE on, as run --from would. The new session records
its parent; status shows it. The fork has its own files, its own .pipeline
folder and its own lock: forks run at once, beside the parent and beside
each other. The worktree's HEAD is the checkpoint's commit, detached;
remove it with git worktree remove DIR.

The agent's native session is forked where the CLI can: the first turn
in the fork resumes the parent's conversation as PHASE started as a new
session (Claude: --resume ID --fork-session; Codex: codex exec fork ID);
Gemini CLI starts a fresh one.`,
		Example: `  pipeline fork --at implementation
  pipeline fork 20261125-093000123-a1b2c3 --at design --worktree ../try-another-design`,
		Args: cobra.MaximumNArgs(1),
	}, func(cmd *cobra.Command, args []string) error {
		if err := output.check(); err != nil {
			return err
		}
		if at == "" {
			return usagef("fork needs --at PHASE")
		}
		id := ""
		if len(args) == 1 {
			id = args[0]
		}
		ref, err := findSession(flags, id)
		if err != nil {
			return err
		}
		parent, _, err := ref.State()
		ref.Close()
		if err != nil {
			return err
		}
		file := ref.Store.Abs(ref.X.Meta.File)
		i := slices.IndexFunc(parent.Phases, func(p engine.PhaseRecord) bool { return p.Name == at })
		if i < 0 {
			return usagef("%q is not a phase of session %s (%s)", at, ref.ID(), session.PhaseNames(ref.Plan))
		}
		git := session.GitFor(filepath.Dir(file))
		if git == nil {
			return usagef("%s is not in a git work tree (or git ignores it): session %s has no checkpoints to fork from", filepath.Dir(file), ref.ID())
		}
		checkpoint := session.CheckpointBefore(parent, i)
		if checkpoint == "" {
			return usagef("session %s has no checkpoint before phase %s (made with checkpoint: off?)", ref.ID(), at)
		}
		root := git.Root()
		rel, err := filepath.Rel(root, file)
		if err != nil {
			return err
		}
		if worktree == "" {
			worktree = freeFolder(filepath.Join(filepath.Dir(root), filepath.Base(root)+"-fork-"+session.CheckpointName(i, at)[3:]))
		}
		if abs, err := filepath.Abs(worktree); err == nil {
			worktree = abs
		}
		if err := git.AddWorktree(worktree, checkpoint); err != nil {
			return usagef("%v", err)
		}
		forkFile := filepath.Join(worktree, rel)
		fmt.Fprintf(cmd.ErrOrStderr(), "forking session %s at phase %s into %s (checkpoint %s)\n", ref.ID(), at, worktree, checkpoint[:min(12, len(checkpoint))])
		specFile := ""
		if flags.spec != "" {
			if abs, err := filepath.Abs(flags.spec); err == nil {
				if r, err := filepath.Rel(root, abs); err == nil {
					specFile = filepath.Join(worktree, r)
				}
			}
		}
		plan, err := spec.Load(forkFile, specFile)
		if err != nil {
			return err
		}
		if err := checkAdapters(plan); err != nil {
			return err
		}
		forkFlags := &storeFlags{file: forkFile, spec: specFile}
		st, err := forkFlags.open()
		if err != nil {
			return err
		}
		sess, err := session.Open(cmd.Context(), st, session.Options{File: forkFile, Plan: plan, Create: session.Always, Say: sayTo(cmd)})
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "fork: session %s in %s\n", sess.ID(), worktree)
		first := engine.Started{At: time.Now(), Plan: plan.Digest, From: at,
			Parent: &engine.Parent{Session: ref.ID(), Dir: filepath.Dir(file), Phase: at, Checkpoint: checkpoint,
				Native: parent.Phases[i].NativeAtStart, WorkingSet: forkedWorkingSet(parent, i)}}
		l := cf.launch(&launch{cmd: cmd, grace: grace, json: output.json()})
		return l.run(sess, first)
	})
	flags = addStoreFlags(cmd, true)
	output = addOutputFlag(cmd)
	cmd.Flags().StringVar(&at, "at", "", "the phase the fork starts at, from the checkpoint taken before it (required)")
	cmd.Flags().StringVar(&worktree, "worktree", "", "the folder of the fork's git worktree (default: beside the project, <project>-fork-<phase>-<n>)")
	cmd.Flags().DurationVar(&grace, "grace", 5*time.Second, "time a stopped step gets to exit after SIGINT before it is killed")
	cf = addCIFlags(cmd)
	return cmd
}

// freeFolder is base-1, or the first of base-2, base-3 … that does not
// exist.
func freeFolder(base string) string {
	for n := 1; ; n++ {
		dir := fmt.Sprintf("%s-%d", base, n)
		if _, err := os.Lstat(dir); os.IsNotExist(err) {
			return dir
		}
	}
}

// forkedWorkingSet is what the fork at phase at knows: the parent's
// working set as of the phases before it, and what humans pinned.
func forkedWorkingSet(parent engine.State, at int) *engine.WorkingSet {
	before := map[string]bool{}
	for _, p := range parent.Phases[:at] {
		before[p.Name] = true
	}
	w := parent.WorkingSet.Only(func(phase, source string) bool { return before[phase] || source == engine.SourceHuman })
	if w.Empty() {
		return nil
	}
	return &w
}
