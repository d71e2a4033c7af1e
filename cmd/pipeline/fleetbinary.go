package main

import (
	"os"
	"os/exec"
	"path/filepath"
)

// fleetBinary is the full build of pipeline (go build -tags temporal):
// the client of --backend temporal, and the commands that are servers or
// need heavy libraries: pipeline worker (the Temporal SDK), mcp (the MCP
// SDK), search (SQLite) and ui (its search box is search). The build
// people run for local work hands those commands to it (handoff.go), so
// that the commands run in a loop (run, status, plan...) do not pay the
// package init of the Temporal SDK, gRPC, protobuf, the MCP SDK and
// SQLite at every start.
//
// Its name stays that of its build tag, which is how it is built, and
// what scripts, CI jobs and fleets that run pipeline-temporal worker
// already call; the hand-off and doctor say what else it carries.
const fleetBinary = "pipeline-temporal"

// companionShort is the one-line help of a command only the full build
// has, which the local build hands to it whole: its flags, --help, help
// NAME and shell completion included; ok is false for any other name.
// The help is here, so that both builds list them alike. (A switch, not
// a map: a map would be made at every start of pipeline.)
func companionShort(name string) (short string, ok bool) {
	switch name {
	case "mcp":
		return mcpShort, true
	case "search":
		return searchShort, true
	case "ui":
		return uiShort, true
	case "worker":
		return workerShort, true
	}
	return "", false
}

const (
	mcpShort    = "Serve the pipelines of this folder to agents (Model Context Protocol)"
	searchShort = "Search the transcripts, prompts, notes and working sets of all sessions"
	uiShort     = "Serve a dashboard of the sessions in the browser"
	workerShort = "Run the sessions' steps of a Temporal fleet"
)

// handedOffEnv marks a process that a pipeline without the Temporal
// backend started as its pipeline-temporal: if that process has no
// Temporal backend either (a copy of the local build under that name),
// it says so instead of starting itself again, forever.
const handedOffEnv = "PIPELINE_HANDED_OFF"

// findFleetBinary looks for pipeline-temporal beside this executable (as
// os.Executable names it, then the file a symbolic link leads to), then
// on PATH; looked is where it looked, for the message when it is not
// found.
func findFleetBinary() (path string, looked []string) {
	if exe, err := os.Executable(); err == nil {
		dirs := []string{filepath.Dir(exe)}
		if real, err := filepath.EvalSymlinks(exe); err == nil && filepath.Dir(real) != dirs[0] {
			dirs = append(dirs, filepath.Dir(real))
		}
		for _, dir := range dirs {
			candidate := filepath.Join(dir, fleetBinary)
			looked = append(looked, candidate)
			if info, err := os.Stat(candidate); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
				return candidate, looked
			}
		}
	}
	looked = append(looked, "PATH")
	if p, err := exec.LookPath(fleetBinary); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		return p, looked
	}
	return "", looked
}
