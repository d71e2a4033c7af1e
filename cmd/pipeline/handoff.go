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
	"github.com/pipeline-dev/pipeline/engine/local"
)

// withTemporal: this build has the Temporal backend.
const withTemporal = false

// This build has no Temporal backend, MCP server, search or dashboard: a
// session command that chose the Temporal backend, and pipeline worker,
// mcp, search and ui, hand the whole command line to pipeline-temporal
// (execFleet), which parses it again and does the work. The functions
// below stand for those of fleet.go: the fleet's app.Backend
// (fleet.backend) is the hand-off, so no command acts on a fleet, nor
// follows one of its sessions, here.

func (*fleet) backend(*cobra.Command) (app.Backend, error) { return nil, handOff("--backend temporal") }

// followFleet is never called here: the fleet's backend is the hand-off.
func followFleet(context.Context, *cobra.Command, app.Started, followOptions) error {
	return handOff("--backend temporal")
}

// handOffChosenFleet hands the command line to pipeline-temporal at once
// when the flags or the environment alone choose the temporal backend
// (phases.yaml's backend: block is read only when nothing else chose):
// this process then loads no plan, which pipeline-temporal loads again
// (its own cache entry: the cache is kept by build), and prints none of
// its warnings, which pipeline-temporal prints again. Any other choice,
// or one that is wrong, is left to the command, which says so.
func (f *backendFlags) handOffChosenFleet() error {
	chosen, err := app.ChooseBackend(app.BackendChoice{Kind: f.kind, Flags: f.target})
	if err != nil || chosen == nil {
		return nil
	}
	return handOff("--backend temporal")
}

// The commands of the full build stand here for their help listing
// only: a command line that names one is handed over before cobra reads
// it (handOffCompanion), so its flags, --help, help NAME and completion
// are the full build's.
func mcpCommand() *cobra.Command    { return companionCommand("mcp") }
func searchCommand() *cobra.Command { return companionCommand("search") }
func uiCommand() *cobra.Command     { return companionCommand("ui") }
func workerCommand() *cobra.Command { return companionCommand("worker") }

func companionCommand(name string) *cobra.Command {
	short, _ := companionShort(name)
	return newCommand(&cobra.Command{
		Use:   name,
		Short: short,
		Long: short + `.

This command is part of pipeline-temporal, the full build of pipeline,
which this one runs with the same arguments: pipeline-temporal beside
this executable, else on PATH. pipeline ` + name + ` --help shows its flags.`,
		DisableFlagParsing: true,
	}, func(*cobra.Command, []string) error { return handOff("pipeline " + name) })
}

// handOffCompanion hands a command line that names a command of the full
// build to pipeline-temporal; done is false for any other command line.
// It returns only when the hand-off cannot be made, with why.
func handOffCompanion(args []string) (done bool, _ error) {
	name := companionCommandIn(args)
	if name == "" {
		return false, nil
	}
	return true, handOff("pipeline " + name)
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
		return usagef("%s needs %s, the full build of pipeline (the Temporal backend, the MCP server, search, the dashboard), and it is not here (looked at %s); local runs need it only to send webhooks and telemetry. Install both with make install (or make build, into bin/), or build it beside this one: go build -tags temporal -o %s ./cmd/pipeline",
			what, fleetBinary, strings.Join(looked, ", "), dest)
	}
	self, _ := os.Executable()
	env := append(os.Environ(), handedOffEnv+"="+self)
	// A signal caught ahead would be lost with this process's image.
	local.LetSignalsAheadGo()
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

// companionCommandIn names the command of a command line that only the
// full build has ("" if none): its first word, or the word after help
// or cobra's completion request.
func companionCommandIn(args []string) string {
	if len(args) > 1 {
		switch args[0] {
		case "help", "__complete", "__completeNoDesc":
			args = args[1:]
		}
	}
	if len(args) > 0 {
		if _, ok := companionShort(args[0]); ok {
			return args[0]
		}
	}
	return ""
}
