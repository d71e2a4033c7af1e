package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/clock"
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

// launch runs an open session with the local driver from events, then
// prints how it ended.
type launch struct {
	cmd   *cobra.Command
	grace time.Duration
	// json: the run is shown on standard error and the session's status
	// printed as JSON on standard output at the end.
	json bool
}

func (l *launch) run(sess *session.Session, events ...engine.Event) error {
	viewOut := l.cmd.OutOrStdout()
	if l.json {
		viewOut = l.cmd.ErrOrStderr()
	}
	view := newView(viewOut)
	driver := &local.Driver{View: view, Clock: clock.Real{}, Grace: l.grace, Signals: true}
	state, runErr := driver.Run(context.Background(), sess, events...)
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
	if runErr != nil {
		return runErr
	}
	if closeErr != nil {
		return closeErr
	}
	if l.json {
		if err := writeJSON(l.cmd.OutOrStdout(), statusOf(sess.X.Meta, sess.Plan, state)); err != nil {
			return err
		}
	}
	switch state.Status {
	case engine.StatusCompleted:
		return nil
	case engine.StatusPaused:
		fmt.Fprintf(l.cmd.ErrOrStderr(), "session %s is paused; continue it with: pipeline resume %s\n", sess.ID(), sess.ID())
		return &exitStatus{code: exitPaused, printed: true}
	default:
		return &exitStatus{code: exitFailed, printed: true}
	}
}

// sayTo prints the session service's remarks on standard error.
func sayTo(cmd *cobra.Command) func(string, ...any) {
	return func(format string, args ...any) {
		fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", args...)
	}
}
