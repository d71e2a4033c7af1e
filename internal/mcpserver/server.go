package mcpserver

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pipeline-dev/pipeline/app"
)

// Options configure a Server.
type Options struct {
	// Root is the folder whose pipelines the server exposes; the current
	// folder when "".
	Root string
	// Binary is the pipeline binary that run and resume start as a
	// detached runner; os.Executable() when "".
	Binary string
	// Version is the server's version, as pipeline version prints it.
	Version string
	// Logger gets the SDK's and the server's own log; nothing when nil
	// (on stdio, standard output is the protocol's).
	Logger *slog.Logger
}

// Server is pipeline's MCP server. Close it when done.
type Server struct {
	mcp    *mcp.Server
	root   confined
	binary string
	env    []string
	log    *slog.Logger
	subs   *subscriptions
}

// New makes the server: its tools, resources and prompts.
func New(o Options) (*Server, error) {
	if o.Root == "" {
		o.Root = "."
	}
	root, err := newConfined(o.Root)
	if err != nil {
		return nil, err
	}
	if o.Binary == "" {
		if o.Binary, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("finding the pipeline binary the tools run: %w", err)
		}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	// The runners run with the server's environment, without what would
	// make them print for a CI job.
	s := &Server{root: root, binary: o.Binary, log: o.Logger, env: app.RunnerEnv()}
	s.subs = newSubscriptions(s)
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "pipeline", Title: "pipeline: AI-agent work as declared phases", Version: o.Version},
		&mcp.ServerOptions{
			Instructions: instructions(root.root),
			Logger:       o.Logger,
			Capabilities: &mcp.ServerCapabilities{},
			SubscribeHandler: func(ctx context.Context, req *mcp.SubscribeRequest) error {
				return s.subs.subscribe(req.Params.URI)
			},
			UnsubscribeHandler: func(ctx context.Context, req *mcp.UnsubscribeRequest) error {
				s.subs.unsubscribe(req.Params.URI)
				return nil
			},
		})
	s.addTools()
	s.addResources()
	s.addPrompts()
	return s, nil
}

func instructions(root string) string {
	return `pipeline runs long AI-agent work as declared phases (phases.yaml) and keeps each run as a session (.pipeline/ beside phases.yaml).
This server exposes the pipelines under ` + root + ` only; give file paths relative to it.
Typical use: validate → plan → run (returns the session id at once; the runner goes on in the background) → status until it pauses or completes → resume with notes, or pause with notes.
Exit codes in the results keep the CLI's meaning: 0 completed, 1 failed, 2 usage/spec error, 3 paused.
Each session is also a resource, pipeline://sessions/<id> (subscribe to hear when it changes state).`
}

// MCP is the SDK's server, to run on a transport.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Root is the folder the server exposes.
func (s *Server) Root() string { return s.root.root }

// Run serves one client on t (stdio for pipeline mcp) until it goes.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	return s.mcp.Run(ctx, t)
}

// HTTPHandler serves clients over streamable HTTP.
func (s *Server) HTTPHandler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, nil)
}

// Close stops following the stores.
func (s *Server) Close() error { return s.subs.close() }

// pipelineArgs are the arguments that name the session f to a command run
// in the folder of its phases.yaml (app.CommandArgs).
func (s *Server) pipelineArgs(f found) (dir string, args []string) {
	return app.CommandArgs(f.store, f.file)
}
