package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/internal/render"
)

// importOptions are the flags of import.
type importOptions struct {
	flags   *storeFlags
	output  *outputFlag
	replace bool
	maxSize string
}

func importCommand() *cobra.Command {
	o := &importOptions{}
	cmd := newCommand(&cobra.Command{
		Use:     "import FILE",
		Short:   "Read an exported session into the store",
		Long:    helpText("import"),
		Example: helpText("import.example"),
		Args:    cobra.ExactArgs(1),
	}, o.run)
	o.flags = addStoreFlags(cmd, false)
	o.output = addOutputFlag(cmd)
	cmd.Flags().BoolVar(&o.replace, "replace", false, "replace the session of the same id if the store has another version of it")
	cmd.Flags().StringVar(&o.maxSize, "max-size", "4GiB", "the most the session's files may hold together: refuses a bigger (or hostile) archive")
	return cmd
}

func (o *importOptions) run(cmd *cobra.Command, args []string) error {
	if err := o.output.check(); err != nil {
		return err
	}
	limit, err := app.ParseSize(o.maxSize)
	if err != nil {
		return err
	}
	r, err := app.Import(cmd.Context(), app.ImportRequest{Pipeline: o.flags.pipeline(sayTo(cmd)), File: args[0], From: cmd.InOrStdin(),
		MaxSize: limit, Replace: o.replace})
	if err != nil {
		return err
	}
	if o.output.json() {
		return render.JSON(cmd.OutOrStdout(), r)
	}
	return nil
}

// importSessionFile is resume --session-file: the session in the archive
// is imported (left as it is when the store already has it), and is the
// one resumed; id, when given, must name it.
func importSessionFile(cmd *cobra.Command, flags *storeFlags, path, id string) (string, error) {
	r, err := app.Import(cmd.Context(), app.ImportRequest{Pipeline: flags.pipeline(sayTo(cmd)), File: path, From: cmd.InOrStdin()})
	if err != nil {
		return "", err
	}
	if id != "" && !strings.HasPrefix(r.Session, id) {
		return "", usagef("--session-file %s holds session %s, not %s", path, r.Session, id)
	}
	return r.Session, nil
}
