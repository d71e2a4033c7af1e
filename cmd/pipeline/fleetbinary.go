package main

import (
	"os"
	"os/exec"
	"path/filepath"
)

// fleetBinary is the build of pipeline with the Temporal backend (go
// build -tags temporal): the client of --backend temporal and pipeline
// worker. The build people run for local work hands those commands to it
// (handoff.go), so that no local command pays the package init of the
// Temporal SDK, gRPC and protobuf.
const fleetBinary = "pipeline-temporal"

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
