//go:build temporal

package main

import (
	"fmt"
	"os"

	"github.com/pipeline-dev/pipeline/internal/web/relay"

	_ "github.com/pipeline-dev/pipeline/internal/web/nethttp" // this build's HTTP, in process
)

// useWeb: this build's HTTP is package nethttp's, which set itself up
// on import.
func useWeb() {}

// serveWeb answers the HTTP that the lean build hands over
// (pipeline-temporal __web ...: see package relay); done is false for
// any other command line.
func serveWeb(args []string) (code int, done bool) {
	if len(args) == 0 || args[0] != relay.Command {
		return 0, false
	}
	if err := relay.Serve(args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "pipeline: %v\n", err)
		return exitFailed, true
	}
	return exitCompleted, true
}
