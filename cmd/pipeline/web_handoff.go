//go:build !temporal

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/pipeline-dev/pipeline/internal/web"
)

// This build links no net/http: the POSTs of webhooks and of the OTLP
// export, and the gemini step's refusing listener, are done by
// pipeline-temporal (webHelper there), one process for each, which
// costs a run that uses them a few milliseconds and every other start of
// pipeline nothing. run sets it up (an init function would cost every
// start a page of code read in).
func useWeb() { web.Use(fleetWeb{}) }

// serveWeb is pipeline-temporal's: this build has no webHelper.
func serveWeb([]string) (int, bool) { return 0, false }

// fleetWeb is package web's Client that runs pipeline-temporal.
type fleetWeb struct{}

// Post runs pipeline-temporal __web post with r on its standard input
// and reads the answer on its standard output.
func (fleetWeb) Post(ctx context.Context, r web.Request) (web.Response, error) {
	request, err := json.Marshal(r)
	if err != nil {
		return web.Response{}, err
	}
	cmd, err := webHelperCommand(ctx, "post")
	if err != nil {
		return web.Response{}, err
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(request), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return web.Response{}, ctx.Err()
		}
		return web.Response{}, helperError(err, &stderr)
	}
	var resp web.Response
	if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil {
		return web.Response{}, fmt.Errorf("%s answered what is not a response: %w", fleetBinary, err)
	}
	return resp, nil
}

// Refuse runs pipeline-temporal __web refuse BODY, which prints the
// address it listens on and serves until its standard input closes.
func (fleetWeb) Refuse(body string) (string, func(), error) {
	cmd, err := webHelperCommand(context.Background(), "refuse", body)
	if err != nil {
		return "", nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		stdin.Close()
		cmd.Wait()
	}
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, helperError(err, &stderr)
	}
	return strings.TrimSpace(addr), stop, nil
}

// webHelperCommand is pipeline-temporal __web with args, marked as
// handed over to (so that a copy of this build under that name says so
// instead of starting again).
func webHelperCommand(ctx context.Context, args ...string) (*exec.Cmd, error) {
	path, looked := findFleetBinary()
	if path == "" {
		return nil, fmt.Errorf("needs %s, the full build of pipeline, for its HTTP, and it is not here (looked at %s): install both with make install",
			fleetBinary, strings.Join(looked, ", "))
	}
	self, _ := os.Executable()
	cmd := exec.CommandContext(ctx, path, append([]string{webHelperName}, args...)...)
	cmd.Env = append(os.Environ(), handedOffEnv+"="+self)
	return cmd, nil
}

// helperError is why pipeline-temporal __web failed: the line it said,
// else err.
func helperError(err error, stderr io.Reader) error {
	said, _ := io.ReadAll(stderr)
	if line := strings.TrimSpace(string(said)); line != "" {
		return errors.New(strings.TrimPrefix(line, "pipeline: "))
	}
	return fmt.Errorf("%s: %w", fleetBinary, err)
}
