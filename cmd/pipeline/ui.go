//go:build temporal

package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/internal/serve"
	"github.com/pipeline-dev/pipeline/internal/ui"
)

// uiFleet reaches the fleets that sessions run on (ui_fleet.go), so that
// the dashboard shows where they stand there and acts on them there.
var uiFleet ui.FleetBackend

// uiOptions are ui's flags.
type uiOptions struct {
	root        string
	addr        string
	open        bool
	allowRemote bool
}

func uiCommand() *cobra.Command {
	o := &uiOptions{}
	cmd := newCommand(&cobra.Command{
		Use:     "ui",
		Short:   uiShort,
		Long:    helpText("ui"),
		Example: helpText("ui.example"),
		Args:    cobra.NoArgs,
	}, o.run)
	cmd.Flags().StringVar(&o.root, "root", "", "the folder whose pipelines are shown (default: the current folder)")
	cmd.Flags().StringVar(&o.addr, "addr", "127.0.0.1:8642", "the address to listen on: a loopback one unless --allow-remote (port 0: any free port)")
	cmd.Flags().BoolVar(&o.open, "open", false, "open the dashboard in the browser")
	cmd.Flags().BoolVar(&o.allowRemote, "allow-remote", false, "let --addr be another address than loopback; every request then needs a token ($PIPELINE_UI_TOKEN, or one printed)")
	cmd.MarkFlagDirname("root")
	return cmd
}

func (o *uiOptions) run(cmd *cobra.Command, _ []string) error {
	loopback, err := serve.Loopback(o.addr)
	if err != nil {
		return usagef("--addr %s: %v; give HOST:PORT, e.g. 127.0.0.1:8642", o.addr, err)
	}
	if !loopback && !o.allowRemote {
		return usagef("--addr %s is not a loopback address: whoever reaches the dashboard can resume runs (run commands) on this machine; listen on 127.0.0.1:PORT, or pass --allow-remote, which asks every request for a token", o.addr)
	}
	opts := ui.Options{Root: o.root, Remote: o.allowRemote, Fleet: uiFleet}
	if o.allowRemote {
		if opts.AccessToken = os.Getenv("PIPELINE_UI_TOKEN"); opts.AccessToken == "" {
			opts.AccessToken = ui.NewToken()
		}
	}
	srv, err := ui.New(opts)
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return usagef("--addr %s: %v", o.addr, err)
	}
	url := "http://" + ln.Addr().String() + "/"
	if opts.AccessToken != "" {
		url += "?token=" + opts.AccessToken
	}
	fmt.Fprintf(cmd.OutOrStdout(), "pipeline ui: serving the sessions below %s on %s (Ctrl+C to stop)\n", srv.Root(), url)
	if o.open {
		openBrowser(cmd, url)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// srv.Close ends the event streams, which Shutdown would wait for.
	return serve.HTTP(ctx, ln, srv, func() { srv.Close() })
}

// openBrowser opens url with the system's opener; a failure is said, not
// fatal: the URL is printed.
func openBrowser(cmd *cobra.Command, url string) {
	opener := "xdg-open"
	if runtime.GOOS == "darwin" {
		opener = "open"
	}
	c := exec.Command(opener, url)
	if err := c.Start(); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "pipeline ui: could not open the browser (%v): open %s\n", err, url)
		return
	}
	go c.Wait()
}
