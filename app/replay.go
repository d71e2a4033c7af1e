package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/atomicfile"
)

// replaySpecsFolder is the store's folder of the specs replays read: the
// spec of an original as it started, when it has changed since.
const replaySpecsFolder = "replay-specs"

// ReplayRequest names the session to replay, by id, and what the replay
// runs differently.
type ReplayRequest struct {
	Pipeline
	Session string `json:"session"`
	// Model replaces the model of every agent step; Agent the kind
	// (claude, gemini, codex or command).
	Model string `json:"model,omitempty"`
	Agent string `json:"agent,omitempty"`
	// From starts the replay at this phase, the phases before it skipped
	// ("": where the original started).
	From string `json:"from,omitempty"`
	// Warn gets the warnings of the plan as it is loaded; nil: nobody.
	Warn func([]spec.Problem) `json:"-"`
	// Check refuses, before the replay's session is made, a plan whose
	// agents cannot run here (the command line checks the adapters and,
	// when Agent changes the kind, the agent CLI as doctor does); nil:
	// no check.
	Check func(*spec.Plan) error `json:"-"`
}

// ReplayStart is a replay ready to run: its session, made, open (held)
// and given the original's human interventions as its cues, and the
// event to start it with (First.ReplayOf names the original). The caller
// runs it (a driver's Run, which gives the cues at their points), then
// closes it and its store (Session.Store).
type ReplayStart struct {
	Session *session.Session
	First   engine.Started
	// Cues are the interventions the replay gives, and at which points.
	Cues session.Cues
}

// PrepareReplay makes a new session that replays req.Session: the same
// phases.yaml, the spec as it was when the original started, and the
// original's human interventions at the same points. It refuses a
// running original (its interventions are not all known yet), one that
// never started, and a pipeline whose phases are no longer the
// original's. What it finds on the way (a changed spec, a changed plan)
// it says through Say.
func PrepareReplay(ctx context.Context, req ReplayRequest) (*ReplayStart, error) {
	switch req.Agent {
	case "", "claude", "gemini", "codex", "command":
	default:
		return nil, Usagef("--agent must be claude, gemini, codex or command, not %q", req.Agent)
	}
	ref, err := req.FindSession(req.Session)
	if err != nil {
		return nil, err
	}
	defer ref.Close()
	if err := errFleetReadOnly(ref, "replay"); err != nil {
		ref.Store.Close()
		return nil, err
	}
	r, err := req.prepare(ctx, ref)
	if err != nil {
		ref.Store.Close()
		return nil, err
	}
	return r, nil
}

// prepare makes the replay of ref, in ref's store.
func (req ReplayRequest) prepare(ctx context.Context, ref *session.Ref) (*ReplayStart, error) {
	if ref.Running() {
		return nil, Usagef("session %s is running: replay it once it has stopped (its interventions are not all known yet)", ref.ID())
	}
	orig, _, err := ref.State()
	if err != nil {
		return nil, err
	}
	events, err := session.Events(ref.X)
	if err != nil {
		return nil, err
	}
	started, ok := firstStarted(events)
	if !ok {
		return nil, Usagef("session %s has not started: there is nothing to replay", ref.ID())
	}
	specFile, plan, err := req.replayPlan(ref, orig, started)
	if err != nil {
		return nil, err
	}
	first, only := started.From, started.Only
	if req.From != "" {
		first, only = req.From, false
	}
	if err := session.CheckPhase(plan, first); err != nil {
		return nil, err
	}
	cues := session.CuesOf(ref.Plan, events)
	cues.Of, cues.Model, cues.Agent = ref.ID(), req.Model, req.Agent
	st, file := ref.Store, ref.X.Meta.File
	sess, err := session.Open(ctx, st, session.Options{File: file, Plan: plan, Create: session.Always, Say: req.Say})
	if err != nil {
		return nil, err
	}
	if err := sess.WriteCues(cues); err != nil {
		sess.Close()
		return nil, StoreWriteFailed(err)
	}
	of := &engine.ReplayOf{Session: ref.ID(), Model: req.Model, Agent: req.Agent}
	if specFile != "" {
		of.Spec = st.Rel(specFile)
	}
	return &ReplayStart{Session: sess, Cues: cues,
		First: engine.Started{At: time.Now(), Plan: plan.Digest, From: first, Only: only, ReplayOf: of}}, nil
}

// replayPlan loads the plan the replay of ref runs, and the spec file it
// reads ("": the session's own, as it is), and checks it: the original's
// phases, agents that can run here.
func (req ReplayRequest) replayPlan(ref *session.Ref, orig engine.State, started engine.Started) (string, *spec.Plan, error) {
	specFile, specNote, err := replaySpec(ref.Store, ref)
	if err != nil {
		return "", nil, err
	}
	if specNote != "" {
		req.say("%s", specNote)
	}
	plan, err := spec.Load(ref.X.Meta.File, specFile)
	if err != nil {
		return "", nil, err
	}
	if req.Warn != nil {
		req.Warn(plan.Warnings)
	}
	// The plan the original started with, if the files are the same.
	switch started.Plan {
	case "", ref.Plan.Digest:
	case ref.Plan.WithoutHumanGates().Digest:
		req.say("session %s ran with --no-human-gates: so does the replay", ref.ID())
		plan = plan.WithoutHumanGates()
	default:
		req.say("phases.yaml or the spec's frontmatter changed since session %s started (its plan was %s, now %s): the replay runs them as they are now",
			ref.ID(), shortDigest(started.Plan), shortDigest(ref.Plan.Digest))
	}
	if err := samePhases(plan, orig, ref.ID()); err != nil {
		return "", nil, err
	}
	plan = session.ReplayPlan(plan, req.Agent, req.Model)
	if err := checkCommandAgents(plan, req.Agent); err != nil {
		return "", nil, err
	}
	if req.Check != nil {
		if err := req.Check(plan); err != nil {
			return "", nil, err
		}
	}
	return specFile, plan, nil
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
			ref.ID(), RelativeToHere(current)), nil
	}
	now, readErr := os.ReadFile(current)
	if readErr == nil && session.ContentHash(now) == strings.TrimSpace(string(hash)) {
		return "", "", nil
	}
	dir, err := st.Folder(replaySpecsFolder)
	if err != nil {
		return "", "", StoreWriteFailed(err)
	}
	path := filepath.Join(dir, ref.ID()+"-"+filepath.Base(current))
	if old, err := os.ReadFile(path); err != nil || !bytes.Equal(old, kept) {
		if err := atomicfile.Write(path, 0o600, func(w io.Writer) error {
			_, err := w.Write(kept)
			return err
		}); err != nil {
			return "", "", StoreWriteFailed(err)
		}
	}
	why := "changed"
	if errors.Is(readErr, fs.ErrNotExist) {
		why = "is gone"
	}
	return path, fmt.Sprintf("the spec %s %s since session %s started: the replay reads it as it was then, from %s",
		RelativeToHere(current), why, ref.ID(), RelativeToHere(path)), nil
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
		return Usagef("the phases are not those session %s ran (%s; now %s): a replay runs the same phases",
			id, strings.Join(was, ", "), strings.Join(now, ", "))
	}
	return nil
}

// checkCommandAgents refuses a replay whose --agent command has no
// program to run: only phases.yaml can give it.
func checkCommandAgents(plan *spec.Plan, kind string) error {
	if kind != "command" {
		return nil
	}
	for _, p := range plan.Phases {
		for _, s := range p.Steps {
			if s.Agent != nil && s.Agent.Value.Kind == "command" && len(s.Agent.Value.Command) == 0 {
				return Usagef("--agent command needs the program to run, which only phases.yaml can give (agent: {kind: command, command: [...]}): phase %q, step %q has none", p.Name, s.Name)
			}
		}
	}
	return nil
}

func shortDigest(d string) string { return d[:min(12, len(d))] }
