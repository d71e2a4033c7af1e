package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"pipeline/engine"
	"pipeline/engine/spec"
	"pipeline/steps"
)

func runCommand() *cobra.Command {
	var (
		specPath string
		stateDir string
		grace    time.Duration
	)
	cmd := newCommand(&cobra.Command{
		Use:   "run [FILE]",
		Short: "Run the phases of a pipeline",
		Long: `Run the phases of FILE (default ./phases.yaml) in order: each phase's
steps, with its pause_when triggers evaluated live and its retry, restart
and done_when policies applied after every step.

On a terminal a live view shows the phase, the step, the time and tokens
against their limits, and the last lines of output; otherwise (or with
CI=true) every line is printed with a timestamp. Ctrl+C (or SIGTERM) stops
the running step gracefully and pauses; a second Ctrl+C kills it at once.

Exit status: 0 completed, 1 failed, 2 usage or spec error, 3 paused.`,
		Example: `  pipeline run
  pipeline run examples/quickstart/phases.yaml
  CI=true pipeline run phases.yaml --spec specs/045-dashboard/README.md`,
		Args: cobra.MaximumNArgs(1),
	}, func(cmd *cobra.Command, args []string) error {
		file := "phases.yaml"
		if len(args) == 1 {
			file = args[0]
		}
		plan, err := spec.Load(file, specPath)
		if err != nil {
			return err
		}
		if err := checkAdapters(plan); err != nil {
			return err
		}
		dir := filepath.Dir(file)
		if stateDir == "" {
			stateDir = os.Getenv("PIPELINE_STATE_DIR")
		}
		if stateDir == "" {
			stateDir = filepath.Join(dir, ".pipeline")
		}
		clock := engine.RealClock{}
		id := engine.NewSessionID(clock.Now())
		recorder, err := engine.NewFileRecorder(filepath.Join(stateDir, "sessions", id))
		if err != nil {
			return err
		}
		view := newView(cmd)
		interrupts := make(chan struct{}, 2)
		signals := make(chan os.Signal, 2)
		signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(signals)
		go func() {
			for range signals {
				interrupts <- struct{}{}
			}
		}()
		view.Say("session %s: %s, %d phases", id, plan.Name.Value, len(plan.Phases))
		runner := &engine.Runner{Plan: plan, Dir: dir, View: view, Clock: clock, Recorder: recorder,
			Grace: grace, Interrupts: interrupts}
		state := runner.Run(engine.State{}, engine.Started{At: clock.Now()})
		if err := recorder.Close(); err != nil {
			return fmt.Errorf("recording the session: %w", err)
		}
		if err := view.Close(); err != nil {
			return err
		}
		switch state.Status {
		case engine.StatusCompleted:
			return nil
		case engine.StatusPaused:
			fmt.Fprintf(cmd.ErrOrStderr(), "session %s is paused; its record is in %s\n", id, recorder.Dir)
			return &exitStatus{code: exitPaused, printed: true}
		default:
			return &exitStatus{code: exitFailed, printed: true}
		}
	})
	cmd.Flags().StringVar(&specPath, "spec", "", "spec file whose frontmatter overrides phases.yaml (default: the spec phases.yaml names)")
	cmd.Flags().StringVar(&stateDir, "state-dir", "", "where sessions are kept (default: .pipeline beside phases.yaml, or $PIPELINE_STATE_DIR)")
	cmd.Flags().DurationVar(&grace, "grace", 5*time.Second, "time a stopped step gets to exit after SIGINT before it is killed")
	return cmd
}

// checkAdapters refuses, before anything runs, a plan with an agent kind
// whose adapter is not available.
func checkAdapters(plan *spec.Plan) error {
	var problems []spec.Problem
	for _, phase := range plan.Phases {
		for _, step := range phase.Steps {
			if step.Agent == nil {
				continue
			}
			if _, err := steps.AdapterFor(step.Agent.Value.Kind); err != nil {
				problems = append(problems, spec.Problem{Position: step.Agent.From.Position,
					Message: fmt.Sprintf("phase %q, step %q: %v", phase.Name, step.Name, err)})
			}
		}
	}
	if problems != nil {
		return &spec.Error{Problems: problems}
	}
	return nil
}

// newView picks the live view on a terminal and plain lines elsewhere or
// when CI=true.
func newView(cmd *cobra.Command) engine.View {
	out := cmd.OutOrStdout()
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) && os.Getenv("CI") != "true" {
		width, _, err := term.GetSize(int(f.Fd()))
		if err != nil {
			width = 80
		}
		return engine.NewLiveView(f, width)
	}
	return engine.NewPlainView(out, time.Now)
}
