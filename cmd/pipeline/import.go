package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
)

func importCommand() *cobra.Command {
	var (
		flags   *storeFlags
		output  *outputFlag
		replace bool
		maxSize string
	)
	cmd := newCommand(&cobra.Command{
		Use:   "import FILE",
		Short: "Read an exported session into the store",
		Long: `Read a session written by pipeline export (FILE, or - for standard input)
into the store of this project (.pipeline beside phases.yaml, or
--state-dir). Its phases.yaml and spec are those of this checkout, at the
same place in the project as where it was exported. Then pipeline resume
continues it; pipeline resume --session-file FILE does both.

The archive is checked before anything is written: only the files a
session has, as regular files (no absolute path, no "..", no link or
device), each the size and SHA-256 its manifest says, within --max-size
together. The same session already in the store is left as it is;
another version of it is refused unless --replace (never while it runs).`,
		Example: `  pipeline import session.tar.gz
  pipeline import --replace --state-dir ci-state session.tar.gz
  pipeline export -o - | ssh build-host pipeline import -`,
		Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string) error {
		if err := output.check(); err != nil {
			return err
		}
		limit, err := parseSize(maxSize)
		if err != nil {
			return err
		}
		got, err := importSession(cmd, flags, args[0], session.ImportOptions{MaxSize: limit, Replace: replace})
		if err != nil {
			return err
		}
		if output.json() {
			return writeJSON(cmd.OutOrStdout(), importedJSON{Summary: got.Manifest.Summary, File: got.Meta.File, Spec: got.Meta.Spec,
				Unchanged: got.Unchanged, Replaced: got.Replaced})
		}
		return nil
	})
	flags = addStoreFlags(cmd, false)
	output = addOutputFlag(cmd)
	cmd.Flags().BoolVar(&replace, "replace", false, "replace the session of the same id if the store has another version of it")
	cmd.Flags().StringVar(&maxSize, "max-size", "4GiB", "the most the session's files may hold together: refuses a bigger (or hostile) archive")
	return cmd
}

// importedJSON is what import -o json prints.
type importedJSON struct {
	store.Summary
	File      string `json:"file"`
	Spec      string `json:"spec,omitempty"`
	Unchanged bool   `json:"unchanged,omitempty"`
	Replaced  bool   `json:"replaced,omitempty"`
}

// importSession imports the archive at path (- for standard input) into
// the store of flags, making it if need be, and says what it did on
// standard error.
func importSession(cmd *cobra.Command, flags *storeFlags, path string, o session.ImportOptions) (store.Imported, error) {
	var in io.Reader = cmd.InOrStdin()
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return store.Imported{}, err
		}
		defer f.Close()
		in = f
	} else {
		path = "standard input"
	}
	st, err := flags.open()
	if err != nil {
		return store.Imported{}, err
	}
	defer st.Close()
	got, err := session.Import(st, in, o)
	if err != nil {
		return got, err
	}
	sum := got.Manifest.Summary
	what := sum.Status
	if sum.PauseReason != "" {
		what += ": " + sum.PauseReason
	}
	if sum.Phase != "" {
		what += ", phase " + sum.Phase
	}
	var say string
	switch {
	case got.Unchanged:
		say = fmt.Sprintf("session %s (%s) from %s is already in %s, the same: nothing to import\n", got.Meta.ID, what, path, st.Root)
	case got.Replaced:
		say = fmt.Sprintf("replaced session %s with the one from %s (%s) in %s\n", got.Meta.ID, path, what, st.Root)
	default:
		say = fmt.Sprintf("imported session %s (%s) from %s into %s\n", got.Meta.ID, what, path, st.Root)
	}
	// Its files are where they were in the project it was exported from:
	// imported elsewhere, there is nothing to resume it with.
	if _, err := os.Stat(got.Meta.File); err != nil {
		say += fmt.Sprintf("warning: its pipeline %s is not there (%s relative to %s): import it into the store of the project's checkout (run it there, or pass --file or --state-dir)\n",
			got.Meta.File, st.Rel(got.Meta.File), st.Base())
	}
	printError(cmd.ErrOrStderr(), say)
	return got, nil
}

// importSessionFile is resume --session-file: the session in the archive
// is imported (left as it is when the store already has it), and is the
// one resumed; id, when given, must name it.
func importSessionFile(cmd *cobra.Command, flags *storeFlags, path, id string) (string, error) {
	got, err := importSession(cmd, flags, path, session.ImportOptions{})
	if err != nil {
		return "", err
	}
	if id != "" && !strings.HasPrefix(got.Meta.ID, id) {
		return "", usagef("--session-file %s holds session %s, not %s", path, got.Meta.ID, id)
	}
	return got.Meta.ID, nil
}

// sizeUnits are the units parseSize reads, longest first.
var sizeUnits = []struct {
	suffix string
	size   int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10},
	{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}}

// parseSize reads a size: bytes, or a number with KiB, MiB or GiB (K, M,
// G and KB, MB, GB read the same, in powers of 1024).
func parseSize(text string) (int64, error) {
	t, unit := strings.TrimSpace(text), int64(1)
	for _, u := range sizeUnits {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, unit = strings.TrimSpace(rest), u.size
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/unit {
		return 0, usagef("--max-size %q is not a size: write bytes, or a number with KiB, MiB or GiB (512MiB, 8GiB)", text)
	}
	return n * unit, nil
}
