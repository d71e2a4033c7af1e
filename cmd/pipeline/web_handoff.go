//go:build !temporal

package main

import (
	"context"
	"os"
	"sync"

	"github.com/pipeline-dev/pipeline/internal/web"
	"github.com/pipeline-dev/pipeline/internal/web/relay"
)

// This build links no net/http: the POSTs of webhooks and of the OTLP
// export, and the gemini step's refusing listener, are done by
// pipeline-temporal (package relay), one process for each, which costs a
// run that uses them a few milliseconds and every other start of
// pipeline nothing. run sets it up (an init function would cost every
// start a page of code read in).
func useWeb() { web.Use(&firstUseWeb{}) }

// fleetWeb is the relay to pipeline-temporal.
func fleetWeb() relay.Client {
	self, _ := os.Executable()
	return relay.Client{Binary: fleetBinary, Find: findFleetBinary,
		// Marked as handed over to, so that a copy of this build under
		// that name says so instead of starting again.
		Env: append(os.Environ(), handedOffEnv+"="+self)}
}

// firstUseWeb is the relay made at its first use: its path of this binary
// (os.Executable, a readlink of /proc/self/exe) and its copy of the
// environment cost every run 0.5 % of its CPU (perf), and few runs post
// anything. Nothing changes the environment after start-up (the init of
// fleet.go), so the first use's is the start's.
type firstUseWeb struct {
	once  sync.Once
	relay relay.Client
}

func (w *firstUseWeb) client() relay.Client {
	w.once.Do(func() { w.relay = fleetWeb() })
	return w.relay
}

func (w *firstUseWeb) Post(ctx context.Context, r web.Request) (web.Response, error) {
	return w.client().Post(ctx, r)
}

func (w *firstUseWeb) Refuse(body string) (string, func(), error) { return w.client().Refuse(body) }

// serveWeb is pipeline-temporal's: this build answers no relay.
func serveWeb([]string) (int, bool) { return 0, false }
