package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/internal/cireport"
)

// The flags of a run in a CI job (run and resume). What the job reads of
// the run (its groups, the annotation, the job summary, the step outputs,
// the JUnit report) is package cireport's. See README.md, "CI".

// ciFlags are the flags run and resume share for CI jobs.
type ciFlags struct {
	cmd          *cobra.Command
	ci           bool
	junit        string
	failOnPause  bool
	noHumanGates bool
	// quiet and verbose: how much of the run is shown.
	quiet, verbose bool
	noPrompt       bool
}

func addCIFlags(cmd *cobra.Command) *ciFlags {
	f := &ciFlags{cmd: cmd}
	cmd.Flags().BoolVar(&f.ci, "ci", false, "CI mode: plain timestamped lines, groups and annotations on GitHub Actions and GitLab CI (default: on when CI is true, 1 or yes)")
	cmd.Flags().StringVar(&f.junit, "junit", "", "write a JUnit XML report to `FILE` at the end: one testcase per phase")
	cmd.Flags().BoolVar(&f.failOnPause, "fail-on-pause", false, "exit 1 rather than 3 when the session pauses (it stays paused and resumable)")
	cmd.Flags().BoolVar(&f.noHumanGates, "no-human-gates", false, "treat auto_advance: false as true for this run (no file changes)")
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "print only how the run ended (paused, completed or failed, and why)")
	cmd.Flags().BoolVarP(&f.verbose, "verbose", "v", false, "also print each trigger that fires, with the values it read")
	cmd.MarkFlagsMutuallyExclusive("quiet", "verbose")
	cmd.Flags().BoolVar(&f.noPrompt, "no-prompt", false, "at a pause on a terminal, do not ask what to do: leave the session paused and exit 3")
	return f
}

// settings is the run's CI mode.
func (f *ciFlags) settings() cireport.Settings {
	var flag *bool
	if f.cmd.Flags().Changed("ci") {
		flag = &f.ci
	}
	return cireport.Mode(flag, os.Getenv)
}

// launch sets a run's CI settings.
func (f *ciFlags) launch(l *launch) *launch {
	l.ci, l.junit, l.failOnPause = f.settings(), f.junit, f.failOnPause
	l.quiet, l.verbose = f.quiet, f.verbose
	l.noPrompt, l.noHumanGates = f.noPrompt, f.noHumanGates
	return l
}

// refuseWithWatch refuses the flags that speak of how a run ends with run
// --watch, whose run goes on after a pause.
func (f *ciFlags) refuseWithWatch() error {
	for _, name := range []string{"junit", "fail-on-pause", "no-human-gates"} {
		if f.cmd.Flags().Changed(name) {
			return usagef("--%s cannot go with --watch: a watched run does not end at a pause (run it without --watch in CI)", name)
		}
	}
	return nil
}
