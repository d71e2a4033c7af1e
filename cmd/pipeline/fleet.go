//go:build temporal

package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/pipeline-dev/pipeline/internal/render"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	fleetapp "github.com/pipeline-dev/pipeline/app/fleet"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/internal/fleetview"
)

// The session commands on a Temporal fleet (--backend temporal): they
// call the fleet's backend (app/fleet) and show what it says; run and
// resume follow the session it set going until it stops (followFleet). See README, "Beyond one
// machine: Temporal".

// withTemporal: this build has the Temporal backend.
const withTemporal = true

// A pipeline without the Temporal backend that handed its command line
// to this one marked the environment (handedOffEnv); the steps and
// hooks this process runs must not inherit the mark, or a pipeline
// command among them would take itself for a hand-off gone round.
func init() { os.Unsetenv(handedOffEnv) }

// handOffCompanion: this build has every command, and hands none over.
func handOffCompanion([]string) (done bool, _ error) { return false, nil }

// dial connects to the fleet's server.
func (fl *fleet) dial(cmd *cobra.Command) (*fleetapp.Backend, error) {
	asClient()
	return fleetapp.Dial(cmd.Context(), fl.target, fl.heartbeat)
}

// clientGC is the GOGC of a fleet client (unless GOGC is set). Its live
// heap is a few MB and its garbage comes in bursts (the history's pages,
// the server's answers): at the default 100 the collector ran every 4 MB
// or so and took a fifth of the CPU of run --backend temporal, a hundred
// of which run at once in the fleet's figures. It costs a few MB more.
const clientGC = 400

// clientProcs is the GOMAXPROCS of a fleet client (unless GOMAXPROCS is
// set). It waits on the server, a few goroutines at a time (gRPC's
// reader and writer, the history's long polls): with a P a core, each
// answer woke a second thread that spun for work and slept again. Fifty
// clients at once on 2 cores used 10% less CPU each with one P.
const clientProcs = 1

// asClient sets this process's runtime for a fleet client.
func asClient() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(clientGC)
	}
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(clientProcs)
	}
}

// handOffChosenFleet: this build has the Temporal backend.
func (*backendFlags) handOffChosenFleet() error { return nil }

// backend is the fleet's app.Backend.
func (fl *fleet) backend(cmd *cobra.Command) (app.Backend, error) { return fl.dial(cmd) }

// followFleet follows a session set going on the fleet until it stops.
func followFleet(ctx context.Context, cmd *cobra.Command, s app.Started, o followOptions) error {
	out := cmd.OutOrStdout()
	if o.json {
		out = cmd.ErrOrStderr()
	}
	r, err := fleetview.Follow(ctx, s.On, s.ID, fleetview.Options{Out: out, Err: cmd.ErrOrStderr(), Quiet: o.quiet, Since: s.Since, Say: printError})
	if errors.Is(err, fleetview.ErrStoppedWaiting) {
		return &exitStatus{code: exitPaused, printed: true}
	}
	if err != nil {
		return err
	}
	return fleetEnded(cmd, s.On, r, o)
}

// fleetEnded ends run or resume as a local run ends: the report as JSON
// when asked, the resume command at a pause, and run's exit status.
func fleetEnded(cmd *cobra.Command, on app.Remote, r engine.StatusReport, o followOptions) error {
	if o.json {
		if err := render.JSON(cmd.OutOrStdout(), liveStatus{StatusReport: r}); err != nil {
			return err
		}
	}
	switch r.Status {
	case string(engine.StatusCompleted):
		return nil
	case string(engine.StatusPaused):
		fmt.Fprintf(cmd.ErrOrStderr(), "session %s is paused; continue it with: pipeline resume%s %s\n", r.ID, on.FlagsLine(), r.ID)
		if o.failOnPause {
			fmt.Fprintln(cmd.ErrOrStderr(), "exit 1: --fail-on-pause")
			return &exitStatus{code: exitFailed, printed: true}
		}
		return &exitStatus{code: exitPaused, printed: true}
	}
	return &exitStatus{code: exitFailed, printed: true}
}
