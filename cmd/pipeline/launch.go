package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/redact"
	"github.com/pipeline-dev/pipeline/steps"
)

// storeFlags are the flags every session command shares.
type storeFlags struct {
	file     string
	spec     string
	stateDir string
}

func addStoreFlags(cmd *cobra.Command, withSpec bool) *storeFlags {
	f := &storeFlags{}
	cmd.Flags().StringVar(&f.file, "file", "phases.yaml", "the pipeline's phases.yaml")
	if withSpec {
		cmd.Flags().StringVar(&f.spec, "spec", "", "spec file whose frontmatter overrides phases.yaml (default: the spec phases.yaml names)")
	}
	cmd.Flags().StringVar(&f.stateDir, "state-dir", "", "where sessions are kept (default: .pipeline beside phases.yaml, or $PIPELINE_STATE_DIR)")
	return f
}

// storeDir is where the sessions of the pipeline at file are kept.
func storeDir(file, flag string) string {
	if flag != "" {
		return flag
	}
	if env := os.Getenv("PIPELINE_STATE_DIR"); env != "" {
		return env
	}
	return filepath.Join(filepath.Dir(file), ".pipeline")
}

func (f *storeFlags) open() (*store.Store, error) {
	return store.Open(storeDir(f.file, f.stateDir))
}

// existing opens the store for a command that only reads or amends
// sessions: one that finds no store says so rather than make one.
func (f *storeFlags) existing() (*store.Store, error) {
	dir := storeDir(f.file, f.stateDir)
	if _, err := os.Stat(filepath.Join(dir, "sessions")); err != nil {
		return nil, usagef("no sessions in %s yet: pipeline run starts one (or pass --state-dir, or --file for another pipeline)", dir)
	}
	return store.Open(dir)
}

// planKey names the (pipeline, spec) pair of a plan.
func planKey(file string, plan *spec.Plan) string {
	absFile, _ := filepath.Abs(file)
	absSpec := ""
	if plan.Spec != "" {
		absSpec, _ = filepath.Abs(plan.Spec)
	}
	return store.Key(absFile, absSpec)
}

// latest returns the newest session of key, or nil.
func latest(st *store.Store, key string, statuses ...engine.Status) (*store.Summary, error) {
	list, err := st.List()
	if err != nil {
		return nil, err
	}
	for i := range list {
		if list[i].Key != key {
			continue
		}
		if len(statuses) == 0 {
			return &list[i], nil
		}
		for _, s := range statuses {
			if list[i].Status == string(s) {
				return &list[i], nil
			}
		}
	}
	return nil, nil
}

// launch runs a session: a new one (x == nil) or an existing one, from
// first, holding the lock of its pipeline and spec.
type launch struct {
	cmd   *cobra.Command
	file  string
	plan  *spec.Plan
	st    *store.Store
	grace time.Duration
	// json: the run is shown on standard error and the session's status
	// printed as JSON on standard output at the end.
	json bool
}

func (l *launch) run(x *store.Session, events ...engine.Event) error {
	key := planKey(l.file, l.plan)
	now := time.Now()
	lock, err := l.st.Lock(key, store.Holder{PID: os.Getpid(), Started: now})
	if err != nil {
		return usageOf(err)
	}
	defer lock.Release()
	state := engine.State{}
	if x == nil {
		defer func() { x.Close() }()
		absFile, _ := filepath.Abs(l.file)
		absSpec := ""
		if l.plan.Spec != "" {
			absSpec, _ = filepath.Abs(l.plan.Spec)
		}
		x, err = l.st.Create(store.Meta{ID: engine.NewSessionID(now), Pipeline: l.plan.Name.Value, File: absFile,
			Spec: absSpec, Key: key, Created: now})
		if err != nil {
			return err
		}
	} else if state, err = engine.LoadState(l.plan, x); err != nil {
		return usageOf(err)
	}
	if state.Status == "" {
		// Created, then cut short before its first event: start it.
		events = []engine.Event{engine.Started{At: now}}
	}
	if err := lock.SetHolder(store.Holder{PID: os.Getpid(), Session: x.Meta.ID, Started: now}); err != nil {
		return err
	}
	// A pause request left by an earlier pipeline pause is stale now.
	if err := x.RemoveFile(pauseRequestFile); err != nil {
		return err
	}
	// A runner killed while a step ran leaves the step's process group
	// behind (its leader dies with the runner, its children may not).
	if content, _ := x.ReadFile(stepProcessFile); content != nil {
		if pgid, err := strconv.Atoi(strings.TrimSpace(string(content))); err == nil && steps.KillOrphans(pgid) {
			fmt.Fprintf(l.cmd.ErrOrStderr(), "stopped what the last runner's step left running (process group %d)\n", pgid)
		}
		if err := x.RemoveFile(stepProcessFile); err != nil {
			return err
		}
	}
	viewOut := l.cmd.OutOrStdout()
	if l.json {
		viewOut = l.cmd.ErrOrStderr()
	}
	view := newView(viewOut)
	redactor := newRedactor(l.plan)
	recorder := engine.NewSessionRecorder(x, l.plan, redactor.String)
	interrupts := make(chan engine.Interrupt, 2)
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	go func() {
		for range signals {
			in := engine.Interrupt{}
			if request, _ := x.ReadFile(pauseRequestFile); request != nil {
				in = engine.Interrupt{Reason: engine.ReasonHuman, Notes: string(request)}
			}
			interrupts <- in
		}
	}()
	runner := &engine.Runner{Plan: l.plan, Dir: filepath.Dir(l.file), View: view, Clock: engine.RealClock{},
		Recorder: recorder, Grace: l.grace, Interrupts: interrupts, Git: engine.GitFor(filepath.Dir(l.file)),
		NewRedactStream: func() engine.RedactStream { return redactor.NewStream() },
		StepProcess: func(pgid int) {
			// No sync: this matters only after a kill -9, which the kernel's
			// copy survives.
			if pgid == 0 {
				x.RemoveFile(stepProcessFile)
				return
			}
			os.WriteFile(filepath.Join(x.Dir, stepProcessFile), []byte(strconv.Itoa(pgid)), 0o600)
		},
		ResumeContext: engine.ResumeContextFor(l.plan, x, redactor.String)}
	// Events before the last (notes given with resume) are decided and
	// recorded first; the last one starts the run.
	for _, ev := range events[:len(events)-1] {
		state, _ = engine.Decide(l.plan, state, ev)
		if err := recorder.Record(ev, state); err != nil {
			return err
		}
	}
	state = runner.Run(state, events[len(events)-1])
	if state.Status == engine.StatusPaused {
		if err := saveSpecAtPause(x, l.plan, redactor.String); err != nil {
			view.Say("pipeline: keeping the spec for the next resume: %v", err)
		}
	}
	if err := recorder.Close(); err != nil {
		return fmt.Errorf("recording the session: %w", err)
	}
	if err := view.Close(); err != nil {
		return err
	}
	if l.json {
		f := &found{st: l.st, x: x, plan: l.plan, key: key}
		if err := writeJSON(l.cmd.OutOrStdout(), buildStatus(f, state, false)); err != nil {
			return err
		}
	}
	switch state.Status {
	case engine.StatusCompleted:
		return nil
	case engine.StatusPaused:
		fmt.Fprintf(l.cmd.ErrOrStderr(), "session %s is paused; continue it with: pipeline resume %s\n", x.Meta.ID, x.Meta.ID)
		return &exitStatus{code: exitPaused, printed: true}
	default:
		return &exitStatus{code: exitFailed, printed: true}
	}
}

// pauseRequestFile holds the notes of pipeline pause for the runner.
const pauseRequestFile = "pause-request.txt"

// stepProcessFile holds the process group of the step running.
const stepProcessFile = "step-process"

func saveSpecAtPause(x *store.Session, plan *spec.Plan, redact func(string) string) error {
	if plan.Spec == "" {
		return nil
	}
	content, err := os.ReadFile(plan.Spec)
	if err != nil {
		return err
	}
	content = []byte(redact(string(content)))
	return x.WriteFile(engine.SpecAtPauseFile, content)
}

// newRedactor hides the secrets of this process's environment and of the
// plan's agent environments, and common key patterns.
func newRedactor(plan *spec.Plan) *redact.Redactor {
	return redact.New(append(os.Environ(), agentEnv(plan)...))
}

// agentEnv lists the environment the plan gives its agents, so that their
// secrets are redacted too.
func agentEnv(plan *spec.Plan) []string {
	var env []string
	for _, phase := range plan.Phases {
		for _, step := range phase.Steps {
			if step.Agent != nil {
				for k, v := range step.Agent.Value.Env {
					env = append(env, k+"="+v)
				}
			}
		}
	}
	return env
}

// usageOf marks an error that means "not now, not like this" (a lock
// held, phases changed, a session in another format) as a usage error:
// exit 2, nothing ran.
func usageOf(err error) error {
	return &usageError{err.Error()}
}

func phaseNames(plan *spec.Plan) string {
	names := make([]string, len(plan.Phases))
	for i, p := range plan.Phases {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}
