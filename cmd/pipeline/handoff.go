//go:build !temporal

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
)

// withTemporal: this build has the Temporal backend.
const withTemporal = false

// This build has no Temporal backend: a session command that chose it,
// and pipeline worker, hand the whole command line to pipeline-temporal
// (execFleet), which parses it again and does the work. The functions
// below stand for those of fleet.go: the fleet's app.Backend
// (fleet.backend) is the hand-off, so no command acts on a fleet, nor
// follows one of its sessions, here.

func (*fleet) backend(*cobra.Command) (app.Backend, error) { return nil, handOff("--backend temporal") }

// followFleet is never called here: the fleet's backend is the hand-off.
func followFleet(context.Context, *cobra.Command, app.Started, followOptions) error {
	return handOff("--backend temporal")
}

func workerCommand() *cobra.Command {
	return newCommand(&cobra.Command{
		Use:   "worker",
		Short: "Run the sessions' steps of a Temporal fleet (runs pipeline-temporal)",
		Long: `Run a worker of the Temporal backend. The worker is part of
pipeline-temporal, the build of pipeline with the Temporal backend; this
one runs it with the same arguments: pipeline-temporal beside this
executable, else on PATH. pipeline worker --help shows its flags.`,
		Example: `  pipeline worker --temporal 127.0.0.1:7233`,
		// Its flags are pipeline-temporal's to parse.
		DisableFlagParsing: true,
	}, func(*cobra.Command, []string) error { return handOff("pipeline worker") })
}

// handOff runs pipeline-temporal in this process's place, with this
// process's arguments and environment; it returns only when that cannot
// be done. what names the command or flag that asked for it.
func handOff(what string) error {
	if by := os.Getenv(handedOffEnv); by != "" {
		self, _ := os.Executable()
		return usagef("%s is not a build with the Temporal backend (%s ran it as its %s for %s): build it with go build -tags temporal -o %s ./cmd/pipeline, or make install",
			self, by, fleetBinary, what, self)
	}
	path, looked := findFleetBinary()
	if path == "" {
		dest := fleetBinary
		if exe, err := os.Executable(); err == nil {
			dest = filepath.Join(filepath.Dir(exe), fleetBinary)
		}
		return usagef("%s needs %s, the build of pipeline with the Temporal backend, and it is not here (looked at %s); local runs do not need it. Install both with make install (or make build, into bin/), or build it beside this one: go build -tags temporal -o %s ./cmd/pipeline",
			what, fleetBinary, strings.Join(looked, ", "), dest)
	}
	self, _ := os.Executable()
	env := append(os.Environ(), handedOffEnv+"="+self)
	if err := execFleet(path, append([]string{path}, os.Args[1:]...), env); err != nil {
		return fmt.Errorf("%s: %s cannot run: %w", what, path, err)
	}
	return nil
}

// execFleet replaces this process with pipeline-temporal: the same pid,
// so that a signal sent to it (Ctrl+C pausing a run, SIGTERM stopping a
// worker), the exit status and the terminal are the child's own.
func execFleet(path string, argv, env []string) error {
	return syscall.Exec(path, argv, env)
}
