package main

import (
	"bytes"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/internal/cireport"
	"github.com/pipeline-dev/pipeline/internal/render"
	"github.com/pipeline-dev/pipeline/internal/termview"
)

// statusOptions are status's flags.
type statusOptions struct {
	flags   *storeFlags
	output  *outputFlag
	verbose bool
	watch   bool
	bf      *backendFlags
}

func statusCommand() *cobra.Command {
	o := &statusOptions{}
	cmd := newCommand(&cobra.Command{
		Use:     "status [SESSION]",
		Short:   "Show where a session stands",
		Long:    helpText("status"),
		Example: helpText("status.example"),
		Args:    cobra.MaximumNArgs(1),
	}, o.run)
	o.flags = addStoreFlags(cmd, true)
	o.output = addOutputFlag(cmd, "markdown")
	cmd.Flags().BoolVarP(&o.verbose, "verbose", "v", false, "show the history of every phase")
	cmd.Flags().BoolVarP(&o.watch, "watch", "w", false, "show the status again every second until the session stops running (Ctrl+C to stop)")
	o.bf = addBackendFlags(cmd)
	return cmd
}

func (o *statusOptions) run(cmd *cobra.Command, args []string) error {
	id, be, err := sessionBackend(cmd, args, o.output, o.bf, o.flags.file, "state-dir")
	if err != nil {
		return err
	}
	defer be.Close()
	show := func(w io.Writer) (running bool, err error) {
		report, err := be.Status(cmd.Context(), app.StatusRequest{Pipeline: o.flags.pipeline(nil), Session: id})
		if err != nil {
			return false, err
		}
		running = report.Running
		switch o.output.format {
		case "json":
			if o.watch {
				return running, render.JSONLine(w, report)
			}
			return running, render.JSON(w, report)
		case "markdown":
			_, err := w.Write(cireport.Markdown(report.StatusReport, termview.NewScreenText().Line))
			return running, err
		}
		return running, render.Status(w, *report, o.verbose)
	}
	if !o.watch {
		_, err := show(cmd.OutOrStdout())
		return err
	}
	return watchStatus(cmd, show)
}

// liveStatus is a status report with, while a step runs, its live
// progress.
type liveStatus = app.StatusResponse

// watchStatus shows the status every second until the session stops
// running or the user interrupts: on a terminal over the last one.
func watchStatus(cmd *cobra.Command, show func(io.Writer) (bool, error)) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := cmd.OutOrStdout()
	f, onTerminal := out.(*os.File)
	onTerminal = onTerminal && term.IsTerminal(int(f.Fd()))
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		var b bytes.Buffer
		running, err := show(&b)
		if err != nil {
			return err
		}
		if onTerminal {
			io.WriteString(out, "\x1b[H\x1b[2J")
		}
		if _, err := out.Write(b.Bytes()); err != nil {
			return err
		}
		if !running {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
