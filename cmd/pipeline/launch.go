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

// open opens (making) the store; one that cannot be used (not a folder,
// not writable, not private) is a usage error with the way out.
func (f *storeFlags) open() (*store.Store, error) {
	st, err := store.Open(storeDir(f.file, f.stateDir))
	if err != nil {
		return nil, storeUnusable(err)
	}
	return st, nil
}

// existing opens the store for a command that only reads or amends
// sessions: one that finds no store says so rather than make one.
func (f *storeFlags) existing() (*store.Store, error) {
	dir := storeDir(f.file, f.stateDir)
	st, err := store.OpenExisting(dir)
	if errors.Is(err, store.ErrNoStore) {
		return nil, usagef("no sessions in %s yet: pipeline run starts one (or pass --state-dir, or --file for another pipeline)", dir)
	}
	if err != nil {
		return nil, storeUnusable(err)
	}
	return st, nil
}

// storeUnusable is a store the environment keeps from being used: the
// user's to fix, exit 2.
func storeUnusable(err error) error {
	if environmentError(err) {
		return err // exit 2, with main's hint
	}
	return usagef("%v\n(pass --state-dir DIR, or set PIPELINE_STATE_DIR, to keep sessions elsewhere)", err)
}

// storeWriteFailed turns an error writing the store (a full disk, an I/O
// error, a folder made read-only) into a usage error, exit 2: the
// environment failed, not the session.
func storeWriteFailed(err error) error {
	var (
		errno   syscall.Errno
		refused *session.RefusedError
		usage   *usageError
	)
	if err == nil || errors.As(err, &refused) || errors.As(err, &usage) {
		return err
	}
	if errors.As(err, &errno) || errors.Is(err, store.ErrRemoved) || errors.Is(err, store.ErrSymlink) {
		return storeUnusable(err)
	}
	return err
}

// launch runs an open session with the local driver from events, then
// prints how it ended.
type launch struct {
	cmd   *cobra.Command
	grace time.Duration
	// json: the run is shown on standard error and the session's status
	// printed as JSON on standard output at the end.
	json bool
	// watchNext: a pause is followed by a watch (run --watch), whose
	// events are the output; the status is not printed at the pause.
	watchNext bool
}

func (l *launch) run(sess *session.Session, events ...engine.Event) error {
	viewOut := l.cmd.OutOrStdout()
	if l.json {
		viewOut = l.cmd.ErrOrStderr()
	}
	view := withRedactor(newView(viewOut), sess.Redactor())
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
	if storeErr := sess.StoreFailed(); storeErr != nil && state.Status == engine.StatusPaused {
		// The view said why and that the run paused; say what to do. The
		// files are as a kill -9 would have left them: resume continues.
		if errors.Is(storeErr, store.ErrRemoved) {
			fmt.Fprintf(l.cmd.ErrOrStderr(), "session %s was deleted while it ran: there is nothing left to resume\n", sess.ID())
		} else {
			fmt.Fprintf(l.cmd.ErrOrStderr(), "session %s could not be recorded (%s); make room in %s or fix it, then continue it with: pipeline resume %s\n",
				sess.ID(), state.Pause.Note, sess.Store.Root, sess.ID())
		}
		if l.json {
			if err := writeJSON(l.cmd.OutOrStdout(), statusOf(sess.X.Meta, sess.Plan, state)); err != nil {
				return err
			}
		}
		return &exitStatus{code: exitPaused, printed: true}
	}
	if runErr != nil {
		return runErr
	}
	if closeErr != nil {
		return storeWriteFailed(closeErr)
	}
	if l.json && !(l.watchNext && state.Status == engine.StatusPaused) {
		if err := writeJSON(l.cmd.OutOrStdout(), statusOf(sess.X.Meta, sess.Plan, state)); err != nil {
			return err
		}
	}
	switch state.Status {
	case engine.StatusCompleted:
		return nil
	case engine.StatusPaused:
		if !l.watchNext {
			fmt.Fprintf(l.cmd.ErrOrStderr(), "session %s is paused; continue it with: pipeline resume %s\n", sess.ID(), sess.ID())
		}
		return &exitStatus{code: exitPaused, printed: true}
	default:
		return &exitStatus{code: exitFailed, printed: true}
	}
}

// sayTo prints the session service's remarks on standard error.
func sayTo(cmd *cobra.Command) func(string, ...any) {
	return func(format string, args ...any) {
		printError(cmd.ErrOrStderr(), fmt.Sprintf(format, args...)+"\n")
	}
}
