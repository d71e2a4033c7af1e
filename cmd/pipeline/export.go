package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
)

func exportCommand() *cobra.Command {
	var (
		flags *storeFlags
		out   string
	)
	cmd := newCommand(&cobra.Command{
		Use:   "export [SESSION]",
		Short: "Write a session to one file, to resume it elsewhere",
		Long: `Write SESSION, or the latest session of the pipeline and spec, to one
gzip'd tar: its event log, snapshot, transcripts and the spec kept at its
pause, after a manifest (the archive's format, the session's status, each
file's size and SHA-256). Its paths are relative to the project, so that
pipeline import (or pipeline resume --session-file) in any checkout of the
project, on any machine, continues it there.

The files were redacted when they were written; they are redacted again
on the way out, with the secrets of this environment too. A running
session is refused: pause it first. The agent's own session (its CLI's
files) does not go with it: resumed elsewhere, the step starts a fresh
one with the resume context.`,
		Example: `  pipeline export -o session.tar.gz
  pipeline export 20261125-093000123-a1b2c3 -o /tmp/design.tar.gz
  pipeline export -o - | ssh build-host pipeline import -`,
		Args: cobra.MaximumNArgs(1),
	}, func(cmd *cobra.Command, args []string) error {
		id := ""
		if len(args) == 1 {
			id = args[0]
		}
		ref, err := findSession(flags, id)
		if err != nil {
			return err
		}
		defer ref.Close()
		path := out
		if path == "" {
			path = "pipeline-session-" + ref.ID() + ".tar.gz"
		}
		var m store.Manifest
		if path == "-" {
			m, err = session.Export(ref, cmd.OutOrStdout(), time.Now())
		} else {
			err = writeFileAtomic(path, 0o600, func(w io.Writer) error {
				var err error
				m, err = session.Export(ref, w, time.Now())
				return err
			})
		}
		if err != nil {
			return err
		}
		var size int64
		for _, f := range m.Files {
			size += f.Size
		}
		what := m.Summary.Status
		if m.Summary.PauseReason != "" {
			what += ": " + m.Summary.PauseReason
		}
		where := path
		if path == "-" {
			where = "standard output"
		}
		printError(cmd.ErrOrStderr(), fmt.Sprintf("exported session %s (%s, %d files, %d bytes) to %s\n", m.Session, what, len(m.Files), size, where))
		return nil
	})
	flags = addStoreFlags(cmd, true)
	cmd.Flags().StringVarP(&out, "output", "o", "", "the file to write; - for standard output (default pipeline-session-ID.tar.gz)")
	return cmd
}

func removeIfThere(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
