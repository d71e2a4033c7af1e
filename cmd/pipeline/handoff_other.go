//go:build !temporal && !unix

package main

import (
	"errors"
	"os"
	"os/exec"
)

// execFleet runs pipeline-temporal and ends with its exit status, where
// a process cannot be replaced.
func execFleet(path string, argv, env []string) error {
	cmd := exec.Command(path, argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.Env = os.Stdin, os.Stdout, os.Stderr, env
	err := cmd.Run()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		os.Exit(exitErr.ExitCode())
	}
	if err != nil {
		return err
	}
	os.Exit(0)
	return nil
}
