package app

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/schemas"
)

var (
	//go:embed starter/phases.yaml
	starterPhases []byte
	//go:embed starter/spec.md
	starterSpec []byte
)

// StarterSpecPath is where pipeline init writes its example spec.
const StarterSpecPath = "specs/001-example/README.md"

// InitRequest is pipeline init: the starter's phases.yaml and example
// spec, a template's (Template), or a template's phases.yaml for an
// existing spec (Spec), written into Dir.
type InitRequest struct {
	Dir      string `json:"dir"`
	Template string `json:"template,omitempty"`
	Spec     string `json:"spec,omitempty"`
}

// InitResponse is what init wrote, and what to do next.
type InitResponse struct {
	Written []string `json:"written"`
	Next    string   `json:"next"`
}

// InitFile is a file pipeline init writes.
type InitFile struct {
	Path    string
	Content []byte
}

// Init writes the files of req into its folder: nothing is overwritten,
// so if phases.yaml or the spec exists, it stops before writing anything
// (a phases.schema.json already there is kept). On an error after a
// write, the response says what was written.
func Init(_ context.Context, req InitRequest) (*InitResponse, error) {
	if req.Dir == "" {
		req.Dir = "."
	}
	files, err := initFiles(req.Dir, req.Template, req.Spec)
	if err != nil {
		return nil, err
	}
	written, err := writeInitFiles(req.Dir, files)
	r := &InitResponse{Written: written, Next: "next: edit the spec, then run pipeline validate and pipeline plan"}
	if req.Dir != "." {
		r.Next = fmt.Sprintf("next: cd %s, edit the spec, then run pipeline validate and pipeline plan", ShellQuote(req.Dir))
	}
	return r, err
}

// initFiles are the files init writes into dir: the starter's, a
// template's, or a template's phases.yaml for an existing spec.
func initFiles(dir, name, specPath string) ([]InitFile, error) {
	phasesPath := filepath.Join(dir, "phases.yaml")
	if name == "" && specPath == "" {
		return []InitFile{{phasesPath, starterPhases}, {filepath.Join(dir, filepath.FromSlash(StarterSpecPath)), starterSpec}}, nil
	}
	if specPath != "" {
		return initForSpec(dir, name, specPath)
	}
	t, err := FindTemplate(dir, name)
	if err != nil {
		return nil, err
	}
	files := []InitFile{{phasesPath, t.Phases}}
	if t.Spec != nil {
		target, err := templateSpecPath(t)
		if err != nil {
			return nil, err
		}
		today := []byte(time.Now().Format("2006-01-02"))
		files = append(files, InitFile{filepath.Join(dir, filepath.FromSlash(target)), bytes.ReplaceAll(t.Spec, []byte("{{today}}"), today)})
	}
	return files, nil
}

// initForSpec is the phases.yaml of the template an existing spec names
// (or name, over it), pointing at the spec.
func initForSpec(dir, name, specPath string) ([]InitFile, error) {
	fm, err := spec.LoadSpec(specPath)
	if err != nil {
		return nil, err
	}
	if name == "" && fm.Pipeline != nil {
		name = fm.Pipeline.Template
	}
	if name == "" {
		return nil, Usagef("%s names no template (pipeline: {template: NAME} in its frontmatter); give one with --template", specPath)
	}
	t, err := FindTemplate(dir, name)
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
		return nil, Usagef("%s is not reachable from %s: %v", specPath, dir, err)
	}
	return []InitFile{{filepath.Join(dir, "phases.yaml"), t.PhasesFor(rel)}}, nil
}

// templateSpecPath is where a template's spec skeleton goes: the spec its
// phases.yaml names, or the starter's path when it names none.
func templateSpecPath(t *Template) (string, error) {
	var doc struct {
		Spec string `yaml:"spec"`
	}
	if err := yaml.Unmarshal(t.Phases, &doc); err != nil {
		return "", Usagef("template %s: its phases.yaml does not parse: %v", t.Name, err)
	}
	if doc.Spec == "" {
		return StarterSpecPath, nil
	}
	clean := filepath.ToSlash(filepath.Clean(filepath.FromSlash(doc.Spec)))
	if filepath.IsAbs(doc.Spec) || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", Usagef("template %s: its spec %q is outside the folder phases.yaml is written to", t.Name, doc.Spec)
	}
	return clean, nil
}

// writeInitFiles writes files, none of which may exist yet, and the
// schema phases.yaml's first line names when it is not there; written
// is what it wrote, also when it stopped on an error.
func writeInitFiles(dir string, files []InitFile) (written []string, _ error) {
	for _, f := range files {
		if _, err := os.Lstat(f.Path); err == nil {
			return nil, Usagef("%s already exists; init writes nothing over an existing file (move it away, or write the pipeline by hand)", f.Path)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	// The schema phases.yaml's first line names, so that the reference
	// resolves.
	if schemaPath := filepath.Join(dir, "phases.schema.json"); !exists(schemaPath) {
		files = append(files, InitFile{schemaPath, schemas.Phases})
	}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
			return written, err
		}
		if err := writeNew(f.Path, f.Content); err != nil {
			return written, err
		}
		written = append(written, f.Path)
	}
	return written, nil
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
