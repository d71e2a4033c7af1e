package main

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/schemas"
)

var (
	//go:embed starter/phases.yaml
	starterPhases []byte
	//go:embed starter/spec.md
	starterSpec []byte
)

const starterSpecPath = "specs/001-example/README.md"

// initFile is a file pipeline init writes.
type initFile struct {
	path    string
	content []byte
}

func initCommand() *cobra.Command {
	var template, specPath string
	cmd := newCommand(&cobra.Command{
		Use:   "init [DIR]",
		Short: "Write a commented starter phases.yaml and an example spec, or a template's",
		Long: `Write phases.yaml, ` + starterSpecPath + ` and phases.schema.json
(the JSON Schema that phases.yaml's first line points editors at) into DIR
(default: the current folder). Nothing is overwritten: if phases.yaml or
the spec exists, init stops before writing anything; a phases.schema.json
already there is kept.

--template NAME writes that template's phases.yaml and spec skeleton
instead (pipeline templates lists them: built-in, the user's and the
project's own in .pipeline/templates/NAME/). --spec SPEC writes only a
phases.yaml for an existing spec: the template its frontmatter names
(pipeline: {template: NAME}), or --template's, with spec: set to SPEC.`,
		Example: helpText("init.example"),
		Args:    cobra.MaximumNArgs(1),
	}, func(cmd *cobra.Command, args []string) error {
		dir := "."
		if len(args) == 1 {
			dir = args[0]
		}
		files, err := initFiles(dir, template, specPath)
		if err != nil {
			return err
		}
		return writeInitFiles(cmd, dir, files)
	})
	cmd.Flags().StringVar(&template, "template", "", "write this template's phases.yaml and spec (pipeline templates lists them)")
	cmd.Flags().StringVar(&specPath, "spec", "", "write a phases.yaml for this existing spec, from the template its frontmatter names")
	return cmd
}

// initFiles are the files init writes into dir: the starter's, a
// template's, or a template's phases.yaml for an existing spec.
func initFiles(dir, name, specPath string) ([]initFile, error) {
	phasesPath := filepath.Join(dir, "phases.yaml")
	if name == "" && specPath == "" {
		return []initFile{{phasesPath, starterPhases}, {filepath.Join(dir, filepath.FromSlash(starterSpecPath)), starterSpec}}, nil
	}
	if specPath != "" {
		return initForSpec(dir, name, specPath)
	}
	t, err := app.FindTemplate(dir, name)
	if err != nil {
		return nil, err
	}
	files := []initFile{{phasesPath, t.Phases}}
	if t.Spec != nil {
		target, err := templateSpecPath(t)
		if err != nil {
			return nil, err
		}
		today := []byte(time.Now().Format("2006-01-02"))
		files = append(files, initFile{filepath.Join(dir, filepath.FromSlash(target)), bytes.ReplaceAll(t.Spec, []byte("{{today}}"), today)})
	}
	return files, nil
}

// initForSpec is the phases.yaml of the template an existing spec names
// (or name, over it), pointing at the spec.
func initForSpec(dir, name, specPath string) ([]initFile, error) {
	fm, err := spec.LoadSpec(specPath)
	if err != nil {
		return nil, err
	}
	if name == "" && fm.Pipeline != nil {
		name = fm.Pipeline.Template
	}
	if name == "" {
		return nil, usagef("%s names no template (pipeline: {template: NAME} in its frontmatter); give one with --template", specPath)
	}
	t, err := app.FindTemplate(dir, name)
	if err != nil {
		return nil, err
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	absSpec, err := filepath.Abs(specPath)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(absDir, absSpec)
	if err != nil {
		return nil, usagef("%s is not reachable from %s: %v", specPath, dir, err)
	}
	return []initFile{{filepath.Join(dir, "phases.yaml"), t.PhasesFor(rel)}}, nil
}

// templateSpecPath is where a template's spec skeleton goes: the spec its
// phases.yaml names, or the starter's path when it names none.
func templateSpecPath(t *app.Template) (string, error) {
	var doc struct {
		Spec string `yaml:"spec"`
	}
	if err := yaml.Unmarshal(t.Phases, &doc); err != nil {
		return "", usagef("template %s: its phases.yaml does not parse: %v", t.Name, err)
	}
	if doc.Spec == "" {
		return starterSpecPath, nil
	}
	clean := filepath.ToSlash(filepath.Clean(filepath.FromSlash(doc.Spec)))
	if filepath.IsAbs(doc.Spec) || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", usagef("template %s: its spec %q is outside the folder phases.yaml is written to", t.Name, doc.Spec)
	}
	return clean, nil
}

// writeInitFiles writes files, none of which may exist yet, and the
// schema phases.yaml's first line names when it is not there.
func writeInitFiles(cmd *cobra.Command, dir string, files []initFile) error {
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
		files = append(files, initFile{schemaPath, schemas.Phases})
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
