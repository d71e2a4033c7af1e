package app

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/pipeline-dev/pipeline/internal/lazy"
	"github.com/pipeline-dev/pipeline/templates"
)

// Where a template comes from, in the order one shadows another.
const (
	TemplateProject = "project"  // .pipeline/templates/NAME/ of the project
	TemplateUser    = "user"     // <user config>/pipeline/templates/NAME/
	TemplateBuiltIn = "built-in" // shipped in the binary
)

// Template is one template of pipeline init --template: a phases.yaml,
// and a spec skeleton when it has one.
type Template struct {
	Name string `json:"name"`
	// Description is phases.yaml's "# description: ..." line.
	Description string `json:"description"`
	From        string `json:"from"`
	// Dir is the template's folder; "" for a built-in one.
	Dir    string `json:"dir,omitempty"`
	Phases []byte `json:"-"`
	Spec   []byte `json:"-"`
}

// templateName and specLine are compiled on first use, not at every
// start of pipeline.
var templateName = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`) }}

// Templates lists the templates the project in dir can use, by name: a
// project's own over the user's over the built-in ones of the same name.
func Templates(dir string) ([]Template, error) {
	byName := map[string]Template{}
	for _, source := range templateSources(dir) {
		found, err := source.list()
		if err != nil {
			return nil, err
		}
		for _, t := range found {
			if _, shadowed := byName[t.Name]; !shadowed {
				byName[t.Name] = t
			}
		}
	}
	list := make([]Template, 0, len(byName))
	for _, t := range byName {
		list = append(list, t)
	}
	slices.SortFunc(list, func(a, b Template) int { return strings.Compare(a.Name, b.Name) })
	return list, nil
}

// FindTemplate returns the template name names for the project in dir;
// an unknown name is a usage error that lists the known ones.
func FindTemplate(dir, name string) (*Template, error) {
	list, err := Templates(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(list))
	for i, t := range list {
		if t.Name == name {
			return &t, nil
		}
		names[i] = t.Name
	}
	return nil, Usagef("no template %q; pipeline templates lists them: %s", name, strings.Join(names, ", "))
}

// templateSource is one place templates are found.
type templateSource struct {
	from string
	fsys fs.FS
	// root is the folder fsys reads, "" for the built-in ones.
	root string
}

// templateSources are the places in the order they shadow one another.
func templateSources(dir string) []templateSource {
	project := filepath.Join(dir, ".pipeline", "templates")
	sources := []templateSource{{from: TemplateProject, fsys: os.DirFS(project), root: project}}
	if config, err := os.UserConfigDir(); err == nil {
		user := filepath.Join(config, "pipeline", "templates")
		sources = append(sources, templateSource{from: TemplateUser, fsys: os.DirFS(user), root: user})
	}
	return append(sources, templateSource{from: TemplateBuiltIn, fsys: templates.FS})
}

// list reads the templates of a source: each folder holding a
// phases.yaml; a source that does not exist has none.
func (s templateSource) list() ([]Template, error) {
	entries, err := fs.ReadDir(s.fsys, ".")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the templates in %s: %w", s.root, err)
	}
	var list []Template
	for _, e := range entries {
		if !e.IsDir() || !templateName.Get().MatchString(e.Name()) {
			continue
		}
		phases, err := fs.ReadFile(s.fsys, e.Name()+"/phases.yaml")
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading template %s: %w", e.Name(), err)
		}
		spec, err := fs.ReadFile(s.fsys, e.Name()+"/spec.md")
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("reading template %s: %w", e.Name(), err)
		}
		t := Template{Name: e.Name(), Description: templateDescription(phases), From: s.from, Phases: phases, Spec: spec}
		if s.root != "" {
			t.Dir = filepath.Join(s.root, e.Name())
		}
		list = append(list, t)
	}
	return list, nil
}

// templateDescription is the text of phases.yaml's first
// "# description:" comment line.
func templateDescription(phases []byte) string {
	lines := bufio.NewScanner(bytes.NewReader(phases))
	for lines.Scan() {
		if text, ok := strings.CutPrefix(strings.TrimSpace(lines.Text()), "# description:"); ok {
			return strings.TrimSpace(text)
		}
	}
	return ""
}

var specLine = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`(?m)^spec:[ \t]*[^#\n]*?([ \t]+#.*)?$`) }}

// PhasesFor is the template's phases.yaml naming spec (a path relative
// to the folder phases.yaml is written to) as its spec: its top-level
// spec: line replaced, or one added after version: when it has none.
func (t *Template) PhasesFor(spec string) []byte {
	line := "spec: " + quoteYAML(filepath.ToSlash(spec))
	if loc := specLine.Get().FindSubmatchIndex(t.Phases); loc != nil {
		comment := ""
		if loc[2] >= 0 {
			comment = string(t.Phases[loc[2]:loc[3]])
		}
		return slices.Concat(t.Phases[:loc[0]], []byte(line+comment), t.Phases[loc[1]:])
	}
	version := regexp.MustCompile(`(?m)^version:.*$`).FindIndex(t.Phases)
	if version == nil {
		return slices.Concat([]byte(line+"\n"), t.Phases)
	}
	return slices.Concat(t.Phases[:version[1]], []byte("\n"+line), t.Phases[version[1]:])
}

// quoteYAML quotes a path that YAML would not read as plain text.
func quoteYAML(s string) string {
	if regexp.MustCompile(`^[A-Za-z0-9_./-]+$`).MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
