package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/pipeline-dev/pipeline/internal/render"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/cireport"
	"github.com/pipeline-dev/pipeline/internal/termview"
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

// pipeline is the pipeline the flags name, as the product API takes it.
func (f *storeFlags) pipeline(say func(string, ...any)) app.Pipeline {
	return app.Pipeline{File: f.file, Spec: f.spec, StateDir: f.stateDir, Say: say}
}

// storeWriteFailed: see app.StoreWriteFailed.
var storeWriteFailed = app.StoreWriteFailed

// launch runs an open session with the local driver from events, then
// prints how it ended.
type launch struct {
	cmd   *cobra.Command
	grace time.Duration
	// json: the run is shown on standard error and the session's status
	// printed as JSON on standard output at the end.
	json bool
	// watchNext: a pause is followed by a watch (run --watch), whose
	// events are the output; the status is not printed at the pause, and
	// nothing is left for a CI job.
	watchNext bool
	// ci is how the run shows itself in a CI job; junit, where the JUnit
	// report goes; failOnPause makes a pause exit 1 rather than 3.
	ci          cireport.Settings
	junit       string
	failOnPause bool
	// quiet shows only how the run ended; verbose adds the triggers that
	// fired.
	quiet, verbose bool
	// pipeline, when set, lets a pause on a terminal be answered where it
	// happens (see asks), unless noPrompt; a resume from there keeps
	// noHumanGates.
	pipeline               *app.Pipeline
	noPrompt, noHumanGates bool
}

// endsWithRun: the process ends with this run unless it watches or asks
// after it; then the signals need not be given back.
func (l *launch) endsWithRun() bool { return !l.watchNext && !l.asks() }

func (l *launch) run(sess *session.Session, events ...engine.Event) error {
	viewOut := l.cmd.OutOrStdout()
	if l.json {
		viewOut = l.cmd.ErrOrStderr()
	}
	view := local.Discard
	if !l.quiet {
		view = termview.WithRedactor(newView(viewOut, l.ci), sess.Redactor())
	}
	state, runErr := app.Drive(context.Background(), sess, events,
		app.DriveOptions{View: view, Grace: l.grace, Signals: true, KeepSignals: l.endsWithRun(), Verbose: l.verbose})
	// The run has stopped listening for signals: a closed output or
	// terminal must not kill the process now (exit 141 or 129) before the
	// session is closed and the exit status says it paused.
	signal.Ignore(syscall.SIGPIPE, syscall.SIGHUP)
	closeErr := sess.Close()
	// An output that is gone (a closed pipe, a terminal that hung up) is
	// why the run paused, not a failure of it.
	if err := view.Close(); err != nil && !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.EIO) {
		return err
	}
	if l.quiet {
		printError(viewOut, termview.ScreenText{Redactor: sess.Redactor()}.Line(render.Outcome(sess.Plan, state))+"\n")
	}
	if !l.watchNext {
		l.report(sess, state, viewOut)
	}
	if storeErr := sess.StoreFailed(); storeErr != nil && state.Status == engine.StatusPaused {
		return l.storeFailed(sess, state, storeErr)
	}
	if runErr != nil {
		return runErr
	}
	if closeErr != nil {
		return storeWriteFailed(closeErr)
	}
	if l.json && !(l.watchNext && state.Status == engine.StatusPaused) {
		if err := render.JSON(l.cmd.OutOrStdout(), app.SessionReport(sess, state)); err != nil {
			return err
		}
	}
	switch state.Status {
	case engine.StatusCompleted:
		return nil
	case engine.StatusPaused:
		if l.asks() {
			if resume, notes, _ := l.answer(sess.ID(), state); resume {
				return l.resumeHere(sess.ID(), notes)
			}
		}
		if !l.watchNext {
			fmt.Fprintf(l.cmd.ErrOrStderr(), "session %s is paused; continue it with: %s\n", sess.ID(), resumeLine(l.cmd, sess.ID()))
		}
		return l.paused()
	default:
		return &exitStatus{code: exitFailed, printed: true}
	}
}

// storeFailed ends a run that paused because its store could not be
// written: the view said why and that the run paused; this says what to
// do. The files are as a kill -9 would have left them: resume continues.
func (l *launch) storeFailed(sess *session.Session, state engine.State, storeErr error) error {
	if errors.Is(storeErr, store.ErrRemoved) {
		fmt.Fprintf(l.cmd.ErrOrStderr(), "session %s was deleted while it ran: there is nothing left to resume\n", sess.ID())
	} else {
		fmt.Fprintf(l.cmd.ErrOrStderr(), "session %s could not be recorded (%s); make room in %s or fix it, then continue it with: %s\n",
			sess.ID(), state.Pause.Note, sess.Store.Root, resumeLine(l.cmd, sess.ID()))
	}
	if l.json {
		if err := render.JSON(l.cmd.OutOrStdout(), app.SessionReport(sess, state)); err != nil {
			return err
		}
	}
	return l.paused()
}

// resumeLine is the command that resumes session id, as it can be pasted
// where cmd was typed: with the --file and --state-dir cmd was given
// (a FILE argument is --file), when they are not the defaults.
func resumeLine(cmd *cobra.Command, id string) string {
	line := "pipeline resume"
	if f := cmd.Flags().Lookup("file"); f != nil && f.Value.String() != f.DefValue {
		line += " --file " + shellQuote(f.Value.String())
	}
	if f := cmd.Flags().Lookup("state-dir"); f != nil && f.Value.String() != "" {
		line += " --state-dir " + shellQuote(f.Value.String())
	}
	return line + " " + id
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string { return app.ShellQuote(s) }

// paused is the exit of a run that paused: 3, or 1 with --fail-on-pause
// (the session stays paused and resumable all the same).
func (l *launch) paused() error {
	if l.failOnPause {
		fmt.Fprintln(l.cmd.ErrOrStderr(), "exit 1: --fail-on-pause")
		return &exitStatus{code: exitFailed, printed: true}
	}
	return &exitStatus{code: exitPaused, printed: true}
}

// report leaves what a CI job reads of a run that ended (cireport.Leave).
// Outside CI mode, without --junit and without the files of a GitHub job,
// nothing is left: the report is not made (0.15 ms of a run).
func (l *launch) report(sess *session.Session, s engine.State, out io.Writer) {
	if !l.ci.Enabled && l.junit == "" && os.Getenv("GITHUB_STEP_SUMMARY") == "" && os.Getenv("GITHUB_OUTPUT") == "" {
		return
	}
	cireport.Leave(out, l.cmd.ErrOrStderr(), l.ci, cireport.Run{Plan: sess.Plan, State: s, Report: app.SessionReport(sess, s),
		Transcripts: filepath.Join(sess.X.Dir, "transcripts"), Text: termview.ScreenText{Redactor: sess.Redactor()},
		ResumeLine: resumeLine(l.cmd, sess.ID()), FailOnPause: l.failOnPause, JUnit: l.junit, Warn: printError})
}

// sayTo prints the session service's remarks on standard error.
func sayTo(cmd *cobra.Command) func(string, ...any) {
	return func(format string, args ...any) {
		printError(cmd.ErrOrStderr(), fmt.Sprintf(format, args...)+"\n")
	}
}
