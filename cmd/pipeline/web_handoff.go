//go:build !temporal

package main

import (
	"os"

	"github.com/pipeline-dev/pipeline/internal/web"
	"github.com/pipeline-dev/pipeline/internal/web/relay"
)

// This build links no net/http: the POSTs of webhooks and of the OTLP
// export, and the gemini step's refusing listener, are done by
// pipeline-temporal (package relay), one process for each, which costs a
// run that uses them a few milliseconds and every other start of
// pipeline nothing. run sets it up (an init function would cost every
// start a page of code read in).
func useWeb() { web.Use(fleetWeb()) }

// fleetWeb is the relay to pipeline-temporal.
func fleetWeb() relay.Client {
	self, _ := os.Executable()
	return relay.Client{Binary: fleetBinary, Find: findFleetBinary,
		// Marked as handed over to, so that a copy of this build under
		// that name says so instead of starting again.
		Env: append(os.Environ(), handedOffEnv+"="+self)}
}

// serveWeb is pipeline-temporal's: this build answers no relay.
func serveWeb([]string) (int, bool) { return 0, false }
