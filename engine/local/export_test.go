package local

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/pipeline-dev/pipeline/engine"
)

// The tests send their runs SIGINT and SIGHUP: the runs catch them as a
// run started with them at their default action does, even where the
// harness started the tests with them ignored (a script's job in the
// background), which a run leaves ignored (caughtSignals).
func init() {
	if signal.Ignored(os.Interrupt) || signal.Ignored(syscall.SIGHUP) {
		signal.Notify(make(chan os.Signal, 1), os.Interrupt, syscall.SIGHUP)
		caughtSignals = notIgnored(runSignals...)
	}
}

// TapFirings hands tap, for each run of d, the way the step executor
// delivers a live trigger's firing to the run's loop.
func TapFirings(d *Driver, tap func(put func(engine.TriggerFired))) { d.tapFirings = tap }
