package mcpserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// confined is the root folder and the checks of what is asked of it.
type confined struct {
	// root is absolute, its links resolved.
	root string
}

func newConfined(dir string) (confined, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return confined{}, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return confined{}, fmt.Errorf("the root folder %s: %w", dir, err)
	}
	info, err := os.Stat(real)
	if err != nil {
		return confined{}, err
	}
	if !info.IsDir() {
		return confined{}, fmt.Errorf("the root %s is not a folder", dir)
	}
	return confined{root: real}, nil
}

// within reports whether path (absolute, clean) is the root or below it.
func (c confined) within(path string) bool {
	rel, err := filepath.Rel(c.root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// realPath is path with its links resolved; for a path that does not
// exist (yet), its nearest existing folder's links are resolved.
func realPath(path string) string {
	rest := ""
	for {
		real, err := filepath.EvalSymlinks(path)
		if err == nil {
			return filepath.Join(real, rest)
		}
		parent := filepath.Dir(path)
		if parent == path {
			return filepath.Join(path, rest)
		}
		rest = filepath.Join(filepath.Base(path), rest)
		path = parent
	}
}

// pipeline resolves a pipeline's phases.yaml (default phases.yaml) and
// its spec ("" when none is given) inside the root.
func (c confined) pipeline(p Pipeline) (path, specPath string, err error) {
	if path, err = c.file("file", p.File, "phases.yaml"); err != nil {
		return path, "", err
	}
	if p.Spec == "" {
		return path, "", c.specOf(path)
	}
	specPath, err = c.file("spec", p.Spec, "")
	return path, specPath, err
}

// specOf refuses the phases.yaml at path when its spec: leads outside the
// root (by .. or through a link): the spec would be read, and
// its frontmatter run, as if it had been given. A phases.yaml that cannot
// be read is left to the operation, which says why.
func (c confined) specOf(path string) error {
	doc, _ := spec.LoadFile(path)
	if doc == nil || doc.Pipeline.Spec == "" {
		return nil
	}
	// As spec.Load takes it: relative to phases.yaml's folder.
	specPath := filepath.Join(filepath.Dir(path), filepath.FromSlash(doc.Pipeline.Spec))
	if _, err := c.file("spec", specPath, ""); err != nil {
		return fmt.Errorf("%s names spec: %s, which leads outside the folder this server exposes (%s): the server runs no spec from there; move the spec inside it, or give a spec inside it", c.rel(path), doc.Pipeline.Spec, c.root)
	}
	return nil
}

// file resolves a file argument: relative to the root (what defaults
// names when it is empty), or absolute. One that leaves the root, by ..
// or through a link, is refused with the way back in.
func (c confined) file(what, arg, def string) (string, error) {
	if arg == "" {
		arg = def
	}
	path := arg
	if !filepath.IsAbs(path) {
		path = filepath.Join(c.root, path)
	}
	path = filepath.Clean(path)
	if !c.within(path) {
		return "", c.outside(what, arg)
	}
	if real := realPath(path); !c.within(real) {
		return "", fmt.Errorf("%s %q leads to %s through a symbolic link, outside the folder this server exposes (%s): give a file inside it; the server only runs pipelines there",
			what, arg, real, c.root)
	}
	return path, nil
}

func (c confined) outside(what, arg string) error {
	return fmt.Errorf("%s %q is outside the folder this server exposes (%s): give a path inside it, relative to it (e.g. phases.yaml or examples/x/phases.yaml); the server only runs pipelines there, and was started with --root to choose that folder",
		what, arg, c.root)
}

// rel is path relative to the root, for messages and for the commands
// run there.
func (c confined) rel(path string) string {
	if r, err := filepath.Rel(c.root, path); err == nil {
		return r
	}
	return path
}

// storeDir is where the sessions of the pipeline at file are kept, by the
// CLI's rule: $PIPELINE_STATE_DIR, else .pipeline beside phases.yaml. It
// must be below the root too.
func (c confined) storeDir(file string) (string, error) {
	dir := filepath.Join(filepath.Dir(file), ".pipeline")
	if env := os.Getenv("PIPELINE_STATE_DIR"); env != "" {
		dir = env
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(filepath.Dir(file), dir)
		}
	}
	real := realPath(filepath.Clean(dir))
	switch {
	case c.within(real):
		return dir, nil
	case os.Getenv("PIPELINE_STATE_DIR") != "":
		return "", fmt.Errorf("the sessions of %s are kept in %s (PIPELINE_STATE_DIR), outside the folder this server exposes (%s): unset PIPELINE_STATE_DIR or start the server with a --root that holds it",
			c.rel(file), dir, c.root)
	}
	return "", fmt.Errorf("the sessions of %s are kept in %s, a symbolic link to %s, outside the folder this server exposes (%s): replace the link with a folder, or start the server with a --root that holds %s",
		c.rel(file), c.rel(dir), real, c.root, real)
}

// stores finds the stores (.pipeline folders) below the root, as
// pipeline sessions --all does, with $PIPELINE_STATE_DIR when it is set
// and below the root.
func (c confined) stores() []string {
	var out []string
	if dir := c.stateDirWithin(); dir != "" {
		out = append(out, dir)
	}
	found, _ := app.FindStores(c.root)
	return append(out, found...)
}

// stateDirWithin is $PIPELINE_STATE_DIR when it is absolute and below the
// root, else "".
func (c confined) stateDirWithin() string {
	if env := os.Getenv("PIPELINE_STATE_DIR"); env != "" && filepath.IsAbs(env) && c.within(realPath(env)) {
		return env
	}
	return ""
}

// found is a session found below the root.
type found struct {
	// store is the store's folder; file the session's phases.yaml,
	// absolute.
	store string
	file  string
	meta  store.Meta
}

// errNoSession is a session id no store below the root knows.
var errNoSession = errors.New("no such session")

// session finds session id (or a unique start or end of one) in the stores below
// the root, or in the store of file when file is given. One whose
// phases.yaml is outside the root is refused.
func (c confined) session(id, file string) (found, error) {
	if id == "" {
		return found{}, fmt.Errorf("no session given: pass its id (the sessions tool lists them)")
	}
	if strings.ContainsAny(id, `/\`) || strings.Contains(id, "..") || session.CheckRef(id) != nil {
		return found{}, fmt.Errorf("%q is not a session id (ids look like 20261125-093000123-a1b2c3): call the sessions tool to list them", id)
	}
	var dirs []string
	if file != "" {
		path, err := c.file("file", file, "phases.yaml")
		if err != nil {
			return found{}, err
		}
		dir, err := c.storeDir(path)
		if err != nil {
			return found{}, err
		}
		dirs = []string{dir}
	} else {
		dirs = c.stores()
	}
	dir, meta, err := app.FindInStores(dirs, id)
	var ambiguous *store.AmbiguousError
	switch {
	case errors.As(err, &ambiguous):
		return found{}, fmt.Errorf("%w: call the sessions tool to list them", err)
	case err != nil:
		return found{}, fmt.Errorf("%w %q below %s: call the sessions tool to list the sessions (or run to start one)", errNoSession, id, c.root)
	}
	st, err := store.OpenExisting(dir)
	if err != nil {
		return found{}, err
	}
	f := found{store: dir, file: st.Abs(meta.File), meta: meta}
	st.Close()
	if f.file == "" || !c.within(realPath(f.file)) {
		return found{}, fmt.Errorf("session %s belongs to %s, outside the folder this server exposes (%s): it cannot be read or driven from here", meta.ID, f.file, c.root)
	}
	if specPath := st.Abs(meta.Spec); meta.Spec != "" && !c.within(realPath(specPath)) {
		return found{}, fmt.Errorf("session %s runs the spec %s, outside the folder this server exposes (%s): it cannot be read or driven from here", meta.ID, specPath, c.root)
	}
	if meta.Spec == "" {
		if err := c.specOf(f.file); err != nil {
			return found{}, err
		}
	}
	return f, nil
}
