package main

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/schemas"
)

var (
	//go:embed starter/phases.yaml
	starterPhases []byte
	//go:embed starter/spec.md
	starterSpec []byte
)

const starterSpecPath = "specs/001-example/README.md"

func initCommand() *cobra.Command {
	return newCommand(&cobra.Command{
		Use:   "init [DIR]",
		Short: "Write a commented starter phases.yaml and an example spec",
		Long: `Write phases.yaml, ` + starterSpecPath + ` and phases.schema.json
(the JSON Schema that phases.yaml's first line points editors at) into DIR
(default: the current folder). Nothing is overwritten: if phases.yaml or
the spec exists, init stops before writing anything; a phases.schema.json
already there is kept.`,
		Example: `  pipeline init
  pipeline init my-project && pipeline validate my-project/phases.yaml`,
		Args: cobra.MaximumNArgs(1),
	}, func(cmd *cobra.Command, args []string) error {
		dir := "."
		if len(args) == 1 {
			dir = args[0]
		}
		files := []struct {
			path    string
			content []byte
		}{
			{filepath.Join(dir, "phases.yaml"), starterPhases},
			{filepath.Join(dir, filepath.FromSlash(starterSpecPath)), starterSpec},
		}
		for _, f := range files {
			if _, err := os.Lstat(f.path); err == nil {
				return usagef("%s already exists; init writes nothing over an existing file (move it away, or write the pipeline by hand)", f.path)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		// The schema phases.yaml's first line names, so that the reference
		// resolves.
		if schemaPath := filepath.Join(dir, "phases.schema.json"); !exists(schemaPath) {
			files = append(files, struct {
				path    string
				content []byte
			}{schemaPath, schemas.Phases})
		}
		for _, f := range files {
			if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
				return err
			}
			if err := writeNew(f.path, f.content); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", f.path)
		}
		next := "next: edit the spec, then run pipeline validate and pipeline plan"
		if dir != "." {
			next = fmt.Sprintf("next: cd %s, edit the spec, then run pipeline validate and pipeline plan", app.ShellQuote(dir))
		}
		fmt.Fprintln(cmd.OutOrStdout(), next)
		return nil
	})
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// writeNew creates path, failing if it appeared since it was checked.
func writeNew(path string, content []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(content); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
