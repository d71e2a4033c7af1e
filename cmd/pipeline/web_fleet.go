//go:build temporal

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/pipeline-dev/pipeline/internal/web"
	_ "github.com/pipeline-dev/pipeline/internal/web/nethttp" // this build's HTTP, in process
)

// useWeb: this build's HTTP is package nethttp's, which set itself up
// on import.
func useWeb() {}

// serveWeb does the HTTP that the lean build hands over (web_handoff.go
// there): pipeline-temporal __web post reads a web.Request on its
// standard input and prints the web.Response; __web refuse BODY prints
// the address of a listener that answers every request with HTTP 400 and
// BODY, and serves until its standard input closes. done is false for
// any other command line.
func serveWeb(args []string) (code int, done bool) {
	if len(args) == 0 || args[0] != webHelperName {
		return 0, false
	}
	var err error
	switch {
	case len(args) == 2 && args[1] == "post":
		err = servePost()
	case len(args) == 3 && args[1] == "refuse":
		err = serveRefusal(args[2])
	default:
		err = fmt.Errorf("%s takes post, or refuse BODY", webHelperName)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "pipeline: %v\n", err)
		return exitFailed, true
	}
	return exitCompleted, true
}

func servePost() error {
	var r web.Request
	if err := json.NewDecoder(os.Stdin).Decode(&r); err != nil {
		return fmt.Errorf("%s post: %w", webHelperName, err)
	}
	// The lean build that asked bounds this process with its context.
	resp, err := web.Post(context.Background(), r)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(resp)
}

func serveRefusal(body string) error {
	addr, stop, err := web.Refuse(body)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Println(addr)
	// Serve until the lean build closes our standard input.
	io.Copy(io.Discard, os.Stdin)
	return nil
}
