package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/internal/render"
)

// sessionsOptions are the flags of sessions.
type sessionsOptions struct {
	flags    *storeFlags
	output   *outputFlag
	active   bool
	all      bool
	specPath string
	status   string
	bf       *backendFlags
}

func sessionsCommand() *cobra.Command {
	o := &sessionsOptions{}
	cmd := newCommand(&cobra.Command{
		Use:     "sessions",
		Short:   "List the sessions kept beside phases.yaml",
		Long:    strings.ReplaceAll(helpText("sessions"), "MAX_STORE_DEPTH", strconv.Itoa(maxStoreDepth)),
		Example: helpText("sessions.example"),
		Args:    cobra.NoArgs,
	}, o.run)
	o.flags = addStoreFlags(cmd, false)
	o.output = addOutputFlag(cmd)
	cmd.Flags().BoolVar(&o.active, "active", false, "only sessions not finished: running or paused")
	cmd.Flags().BoolVar(&o.all, "all", false, "the sessions of every pipeline below the current folder")
	cmd.Flags().StringVar(&o.specPath, "spec", "", "only the sessions of this spec")
	cmd.Flags().StringVar(&o.status, "status", "", "only sessions with this status: running, paused, completed or failed")
	o.bf = addBackendFlags(cmd)
	return cmd
}

func (o *sessionsOptions) run(cmd *cobra.Command, _ []string) error {
	if err := o.output.check(); err != nil {
		return err
	}
	if o.all && (cmd.Flags().Changed("file") || cmd.Flags().Changed("state-dir")) {
		return usagef("--all finds the stores below the current folder: it cannot go with --file or --state-dir")
	}
	be, fl, err := o.bf.backend(cmd, o.flags.file)
	if err != nil {
		return err
	}
	defer be.Close()
	if fl != nil {
		if err := refuseOnFleet(cmd, "state-dir", "all"); err != nil {
			return err
		}
	}
	r, err := be.Sessions(cmd.Context(), app.SessionsRequest{Pipeline: o.flags.pipeline(nil), All: o.all,
		Active: o.active, Status: o.status, SpecFilter: o.specPath, Forks: !o.all})
	if err != nil {
		return err
	}
	if o.output.json() {
		return render.JSON(cmd.OutOrStdout(), r.Sessions)
	}
	none := r.NoneMatch(o.all && fl == nil, "pipeline run"+fileArg(cmd))
	if len(r.Sessions) == 0 && none == "" {
		none = fmt.Sprintf("no sessions yet; start one with: pipeline run%s\n", fileArg(cmd))
	}
	return render.Sessions(cmd.OutOrStdout(), r.Sessions, o.all, none)
}

// cleanOptions are clean's flags.
type cleanOptions struct {
	flags     *storeFlags
	output    *outputFlag
	olderThan string
	keep      int
	dryRun    bool
}

func cleanCommand() *cobra.Command {
	o := &cleanOptions{}
	cmd := newCommand(&cobra.Command{
		Use:     "clean",
		Short:   "Delete old finished sessions",
		Long:    helpText("clean"),
		Example: helpText("clean.example"),
		Args:    cobra.NoArgs,
	}, o.run)
	o.flags = addStoreFlags(cmd, false)
	o.output = addOutputFlag(cmd)
	cmd.Flags().StringVar(&o.olderThan, "older-than", "", "age past which finished sessions go: 7d, 12h (required)")
	cmd.Flags().IntVar(&o.keep, "keep", 3, "sessions to keep for each pipeline and spec, however old")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "say what would be removed, remove nothing")
	return cmd
}

func (o *cleanOptions) run(cmd *cobra.Command, _ []string) error {
	if err := o.output.check(); err != nil {
		return err
	}
	r, err := app.Clean(cmd.Context(), app.CleanRequest{Pipeline: o.flags.pipeline(sayTo(cmd)),
		OlderThan: o.olderThan, Keep: o.keep, DryRun: o.dryRun})
	out := cmd.OutOrStdout()
	if o.output.json() {
		if err != nil {
			return err
		}
		return render.JSON(out, r)
	}
	if r != nil {
		render.Cleaned(out, r) // on an error too: what went before it
	}
	if err != nil {
		return err
	}
	if r.DryRun {
		fmt.Fprintf(out, "%d session(s) would be removed (--dry-run: nothing was)\n", len(r.Removed))
	} else {
		fmt.Fprintf(out, "%d session(s) removed\n", len(r.Removed))
	}
	return nil
}

// parseAge reads --older-than (app.ParseAge).
var parseAge = app.ParseAge

// maxStoreDepth bounds the walk of sessions --all (app.FindStores).
const maxStoreDepth = app.MaxStoreDepth

// fileArg is the FILE a command was given with --file, as a next command
// takes it, or "" for the default.
func fileArg(cmd *cobra.Command) string {
	if f := cmd.Flags().Lookup("file"); f != nil && f.Value.String() != f.DefValue {
		return " " + shellQuote(f.Value.String())
	}
	return ""
}
