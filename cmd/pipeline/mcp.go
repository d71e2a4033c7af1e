//go:build temporal

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/internal/mcpserver"
	"github.com/pipeline-dev/pipeline/internal/serve"
)

// mcpOptions are mcp's flags.
type mcpOptions struct {
	root        string
	httpAddr    string
	allowRemote bool
}

func mcpCommand() *cobra.Command {
	o := &mcpOptions{}
	cmd := newCommand(&cobra.Command{
		Use:     "mcp",
		Short:   mcpShort,
		Long:    helpText("mcp"),
		Example: helpText("mcp.example"),
		Args:    cobra.NoArgs,
	}, o.run)
	cmd.Flags().StringVar(&o.root, "root", "", "the folder whose pipelines are exposed (default: the current folder)")
	cmd.Flags().StringVar(&o.httpAddr, "http", "", "serve streamable HTTP on this loopback address (127.0.0.1:PORT) rather than on stdio")
	cmd.Flags().BoolVar(&o.allowRemote, "allow-non-loopback", false, "let --http listen on an address other than loopback (the server has no authentication)")
	cmd.MarkFlagDirname("root")
	return cmd
}

func (o *mcpOptions) run(cmd *cobra.Command, _ []string) error {
	var addr string
	if o.httpAddr != "" {
		loopback, err := serve.Loopback(o.httpAddr)
		if err != nil {
			return usagef("--http %s: %v; give HOST:PORT, e.g. 127.0.0.1:8765", o.httpAddr, err)
		}
		if !o.allowRemote && !loopback {
			return usagef("--http %s is not a loopback address: the MCP server has no authentication, and whoever reaches it can start and stop runs (run commands) on this machine; listen on 127.0.0.1:PORT, or pass --allow-non-loopback on a network you trust", o.httpAddr)
		}
		addr = o.httpAddr
	}
	srv, err := mcpserver.New(mcpserver.Options{Root: o.root, Version: buildVersion().Version})
	if err != nil {
		return usagef("%v", err)
	}
	defer srv.Close()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if addr == "" {
		err := srv.Run(ctx, mcpserver.StdioTransport(os.Stdin, os.Stdout))
		if ctx.Err() != nil || errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usagef("--http %s: %v", addr, err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "pipeline mcp: serving %s on http://%s (Ctrl+C to stop)\n", srv.Root(), ln.Addr())
	return serve.HTTP(ctx, ln, srv.HTTPHandler(), nil)
}
