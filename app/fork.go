package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
)

// ForkRequest names the session to fork (by id, or the latest of the
// pipeline and spec), the phase the fork starts at, and where its git
// worktree goes.
type ForkRequest struct {
	Pipeline
	Session string `json:"session,omitempty"`
	At      string `json:"at"`
	// Worktree is the fork's folder; "": beside the project,
	// <project>-fork-<phase>-<n>.
	Worktree string `json:"worktree,omitempty"`
	// Check refuses, before the fork's session is made, a plan whose
	// agents cannot run here (the command line checks the adapters);
	// nil: no check.
	Check func(*spec.Plan) error `json:"-"`
}

// ForkStart is a fork ready to run: its git worktree, made at the
// checkpoint, and its session there, made and open (held), with the
// event to start it with (First.Parent names the session it forks). The
// caller runs it (a driver's Run), then closes it and its store
// (Session.Store).
type ForkStart struct {
	Session  *session.Session
	First    engine.Started
	Worktree string
}

// forkParent reads the state and phases.yaml of the session a fork is
// made from, and closes it: a fleet session's copy holds no state to fork.
func forkParent(ref *session.Ref) (engine.State, string, error) {
	defer ref.Store.Close()
	defer ref.Close()
	if err := errFleetReadOnly(ref, "fork"); err != nil {
		return engine.State{}, "", err
	}
	parent, _, err := ref.State()
	return parent, ref.Store.Abs(ref.X.Meta.File), err
}

// PrepareFork makes a git worktree from the checkpoint taken before
// req.At in the session, and a new session there that starts at req.At
// with what the parent knew before it. It says what it forks, and
// where, through Say.
func PrepareFork(ctx context.Context, req ForkRequest) (*ForkStart, error) {
	if req.At == "" {
		return nil, Usagef("fork needs --at PHASE")
	}
	ref, err := req.FindSession(req.Session)
	if err != nil {
		return nil, err
	}
	parent, file, err := forkParent(ref)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(parent.Phases, func(p engine.PhaseRecord) bool { return p.Name == req.At })
	if i < 0 {
		return nil, Usagef("%q is not a phase of session %s (%s)%s", req.At, ref.ID(), session.PhaseNames(ref.Plan), session.PhaseHint(ref.Plan, req.At))
	}
	git := session.GitFor(filepath.Dir(file))
	if git == nil {
		return nil, Usagef("%s is not in a git work tree (or git ignores it): session %s has no checkpoints to fork from", filepath.Dir(file), ref.ID())
	}
	checkpoint, err := forkCheckpoint(git, ref.ID(), parent, i)
	if err != nil {
		return nil, err
	}
	if checkpoint == "" {
		return nil, Usagef("session %s has no checkpoint before phase %s (made with checkpoint: off?)", ref.ID(), req.At)
	}
	root := git.Root()
	rel, err := filepath.Rel(root, file)
	if err != nil {
		return nil, err
	}
	worktree := req.Worktree
	if worktree == "" {
		worktree = freeFolder(filepath.Join(filepath.Dir(root), filepath.Base(root)+"-fork-"+session.CheckpointName(i, req.At)[3:]))
	}
	if abs, err := filepath.Abs(worktree); err == nil {
		worktree = abs
	}
	if err := git.AddWorktree(worktree, checkpoint); err != nil {
		return nil, Usagef("%v", err)
	}
	req.say("forking session %s at phase %s into %s (checkpoint %s)", ref.ID(), req.At, worktree, shortDigest(checkpoint))
	fork := Pipeline{File: filepath.Join(worktree, rel), Say: req.Say}
	if req.Spec != "" {
		if abs, err := filepath.Abs(req.Spec); err == nil {
			if r, err := filepath.Rel(root, abs); err == nil {
				fork.Spec = filepath.Join(worktree, r)
			}
		}
	}
	sess, plan, err := fork.openNew(ctx, req.Check)
	if err != nil {
		return nil, err
	}
	first := engine.Started{At: time.Now(), Plan: plan.Digest, From: req.At,
		Parent: &engine.Parent{Session: ref.ID(), Dir: filepath.Dir(file), Phase: req.At, Checkpoint: checkpoint,
			Native: parent.Phases[i].NativeAtStart, WorkingSet: forkedWorkingSet(parent, i)}}
	return &ForkStart{Session: sess, First: first, Worktree: worktree}, nil
}

// openNew loads the plan of p, checks it, and makes a new session of it
// in its store, held.
func (p Pipeline) openNew(ctx context.Context, check func(*spec.Plan) error) (*session.Session, *spec.Plan, error) {
	plan, err := spec.Load(p.File, p.Spec)
	if err != nil {
		return nil, nil, err
	}
	if check != nil {
		if err := check(plan); err != nil {
			return nil, nil, err
		}
	}
	st, err := p.Open()
	if err != nil {
		return nil, nil, err
	}
	sess, err := session.Open(ctx, st, session.Options{File: p.File, Plan: plan, Create: session.Always, Say: p.Say})
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return sess, plan, nil
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

// forkCheckpoint is the checkpoint a fork at phase i starts from: the one
// taken after the phase before it. A phase that was rewound (or has not
// run again since) has none in the state, but its ref may be kept: then
// that, or else a refusal, never an earlier phase's checkpoint, whose
// tree lacks that phase's work. Skipped phases changed nothing: the
// checkpoint before them does.
func forkCheckpoint(git *session.Git, id string, parent engine.State, i int) (string, error) {
	if i == 0 || parent.Phases[i-1].Checkpoint != "" || parent.Phases[i-1].Status == engine.StatusSkipped {
		return session.CheckpointBefore(parent, i), nil
	}
	before := parent.Phases[i-1].Name
	kept := session.CheckpointRef(id, session.CheckpointName(i-1, before))
	if c := git.Refs(kept)[kept]; c != "" {
		return c, nil
	}
	return "", Usagef("session %s has no checkpoint after phase %s (it is %s: rewound, or not run since) to fork phase %s from; fork at %s, or run %s first",
		id, before, parent.Phases[i-1].Status, parent.Phases[i].Name, before, before)
}
