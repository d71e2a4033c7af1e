// Package relay hands package web's HTTP from a process that links no
// net/http (the lean pipeline) to one that does (pipeline-temporal), one
// short process per request: Client is the asking side, Serve the
// answering one. A request travels on standard input, never in argv, so
// that a webhook's URL and headers (secrets) are not on the command line.
package relay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/pipeline-dev/pipeline/internal/web"
)

// Command is the hidden command of the answering build.
const Command = "__web"

// Client is a web.Client that runs Binary's Command for each request.
type Client struct {
	// Binary names the answering build in messages.
	Binary string
	// Find says where the answering build is ("" when it is not), and
	// where it looked.
	Find func() (path string, looked []string)
	// Env is the answering process's environment.
	Env []string
}

// Post runs Command post with r on its standard input and reads the
// answer on its standard output.
func (c Client) Post(ctx context.Context, r web.Request) (web.Response, error) {
	request, err := json.Marshal(r)
	if err != nil {
		return web.Response{}, err
	}
	cmd, err := c.command(ctx, "post")
	if err != nil {
		return web.Response{}, err
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(request), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return web.Response{}, ctx.Err()
		}
		return web.Response{}, c.failure(err, &stderr)
	}
	var resp web.Response
	if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil {
		return web.Response{}, fmt.Errorf("%s answered what is not a response: %w", c.Binary, err)
	}
	return resp, nil
}

// Refuse runs Command refuse BODY, which prints the address it listens
// on and serves until its standard input closes.
func (c Client) Refuse(body string) (string, func(), error) {
	cmd, err := c.command(context.Background(), "refuse", body)
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
		return "", nil, c.failure(err, &stderr)
	}
	return strings.TrimSpace(addr), stop, nil
}

func (c Client) command(ctx context.Context, args ...string) (*exec.Cmd, error) {
	path, looked := c.Find()
	if path == "" {
		return nil, fmt.Errorf("needs %s, the full build of pipeline, for its HTTP, and it is not here (looked at %s): install both with make install",
			c.Binary, strings.Join(looked, ", "))
	}
	cmd := exec.CommandContext(ctx, path, append([]string{Command}, args...)...)
	cmd.Env = c.Env
	return cmd, nil
}

// failure is why the answering process failed: the line it said, else
// err.
func (c Client) failure(err error, stderr io.Reader) error {
	said, _ := io.ReadAll(stderr)
	if line := strings.TrimSpace(string(said)); line != "" {
		return errors.New(strings.TrimPrefix(line, "pipeline: "))
	}
	return fmt.Errorf("%s: %w", c.Binary, err)
}

// Serve answers one request with the process's web.Client: args are
// what follows Command (post, or refuse BODY). post reads a web.Request
// on stdin and writes the web.Response on stdout; refuse BODY writes the
// address of a listener that answers every request with HTTP 400 and
// BODY, and serves until stdin closes.
func Serve(args []string, stdin io.Reader, stdout io.Writer) error {
	switch {
	case len(args) == 1 && args[0] == "post":
		var r web.Request
		if err := json.NewDecoder(stdin).Decode(&r); err != nil {
			return fmt.Errorf("%s post: %w", Command, err)
		}
		// The process that asked bounds this one with its context.
		resp, err := web.Post(context.Background(), r)
		if err != nil {
			return err
		}
		return json.NewEncoder(stdout).Encode(resp)
	case len(args) == 2 && args[0] == "refuse":
		addr, stop, err := web.Refuse(args[1])
		if err != nil {
			return err
		}
		defer stop()
		fmt.Fprintln(stdout, addr)
		io.Copy(io.Discard, stdin)
		return nil
	}
	return fmt.Errorf("%s takes post, or refuse BODY", Command)
}
