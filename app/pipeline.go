package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// DefaultFile is the phases.yaml an operation reads when none is named.
const DefaultFile = "phases.yaml"

// Pipeline names a pipeline as the operations take it: its phases.yaml,
// the spec whose frontmatter overrides it, and where its sessions are
// kept. Relative paths are relative to the current folder.
type Pipeline struct {
	// File is the pipeline's phases.yaml; "" is DefaultFile.
	File string `json:"file,omitempty"`
	// Spec overrides the spec phases.yaml names.
	Spec string `json:"spec,omitempty"`
	// StateDir overrides where sessions are kept (.pipeline beside
	// phases.yaml, or $PIPELINE_STATE_DIR).
	StateDir string `json:"state_dir,omitempty"`
	// Say receives what an operation tells a person on the way (a
	// session whose runner died, a recovered store); nil: nobody.
	Say func(format string, args ...any) `json:"-"`
}

func (p Pipeline) file() string {
	if p.File == "" {
		return DefaultFile
	}
	return p.File
}

// say tells Say, when there is one.
func (p Pipeline) say(format string, args ...any) {
	if p.Say != nil {
		p.Say(format, args...)
	}
}

// StoreDir is where the sessions of the pipeline are kept.
func (p Pipeline) StoreDir() string {
	if p.StateDir != "" {
		return p.StateDir
	}
	if env := os.Getenv("PIPELINE_STATE_DIR"); env != "" {
		return env
	}
	return filepath.Join(filepath.Dir(p.file()), ".pipeline")
}

// Open opens (making) the store; one that cannot be used (not a folder,
// not writable, not private) is a usage error with the way out.
func (p Pipeline) Open() (*store.Store, error) {
	st, err := store.Open(p.StoreDir())
	if err != nil {
		return nil, StoreUnusable(err)
	}
	return st, nil
}

// Existing opens the store for an operation that only reads or amends
// sessions: one that finds no store says so rather than make one.
func (p Pipeline) Existing() (*store.Store, error) {
	dir := p.StoreDir()
	st, err := store.OpenExisting(dir)
	if errors.Is(err, store.ErrNoStore) {
		return nil, Usagef("no sessions in %s yet; start one with: %s (or pass --state-dir, or --file for another pipeline)", dir, p.RunLine())
	}
	if err != nil {
		return nil, StoreUnusable(err)
	}
	return st, nil
}

// RunLine is the command that starts a session of the pipeline.
func (p Pipeline) RunLine() string {
	line := "pipeline run"
	if p.file() != DefaultFile {
		line += " " + ShellQuote(p.file())
	}
	if p.Spec != "" {
		line += " --spec " + ShellQuote(p.Spec)
	}
	if p.StateDir != "" {
		line += " --state-dir " + ShellQuote(p.StateDir)
	}
	return line
}

// ShellQuote quotes s for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// RelativeToHere is path as a message names it: relative to the current
// folder when it is below it, else as it is.
func RelativeToHere(path string) string {
	if wd, err := os.Getwd(); err == nil && filepath.IsAbs(path) {
		if rel, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return path
}

// LoadPlan loads the plan of the pipeline with its spec (relative to the
// current folder, as every path on the command line; a spec: in
// phases.yaml is relative to phases.yaml's folder). A spec that is not
// there says relative to what, and names the file it may have meant.
func (p Pipeline) LoadPlan() (*spec.Plan, error) {
	if err := p.checkPlanFiles(); err != nil {
		return nil, err
	}
	return spec.LoadCached(p.file(), p.Spec, spec.CacheDir())
}

// loadHead is LoadPlan for a caller that reads only the plan's head: a
// cached plan's phases are not decoded (see spec.LoadCachedHead).
func (p Pipeline) loadHead() (*spec.PlanHead, error) {
	if err := p.checkPlanFiles(); err != nil {
		return nil, err
	}
	return spec.LoadCachedHead(p.file(), p.Spec, spec.CacheDir())
}

// checkPlanFiles says, before the plan is loaded, which of its files is
// not there: a spec, relative to what, and the file it may have meant.
func (p Pipeline) checkPlanFiles() error {
	if p.Spec != "" {
		if _, err := os.Stat(p.Spec); errors.Is(err, fs.ErrNotExist) {
			wd, _ := os.Getwd()
			msg := fmt.Sprintf("--spec %s: no such file in the current folder (%s); a --spec path is relative to the current folder, a spec: in phases.yaml to phases.yaml's folder", p.Spec, wd)
			if beside := filepath.Join(filepath.Dir(p.file()), p.Spec); !filepath.IsAbs(p.Spec) && beside != p.Spec {
				if _, err := os.Stat(beside); err == nil {
					msg += fmt.Sprintf("; did you mean --spec %s?", beside)
				}
			}
			return Usagef("%s", msg)
		}
	}
	if _, err := os.Stat(p.file()); errors.Is(err, fs.ErrNotExist) {
		return &Error{Code: ExitUsage, Message: fmt.Sprintf("%s: no such file", p.file()), Hint: NoPipelineHint}
	}
	return nil
}

// BackendBlock is the backend: block of phases.yaml, nil when it has none
// or cannot be read. It is read from the plan cache when the plan is
// there, and otherwise from the file alone, even one with problems
// elsewhere.
func (p Pipeline) BackendBlock() *spec.Backend {
	if head, err := spec.LoadCachedHead(p.file(), p.Spec, spec.CacheDir()); err == nil {
		if head.Backend.From.Layer == spec.LayerDefault {
			return nil
		}
		block := head.Backend.Value
		return &block
	}
	if doc, _ := spec.LoadFile(p.file()); doc != nil {
		return doc.Pipeline.Backend
	}
	return nil
}

// NoPipelineHint is what to do where there is no phases.yaml.
const NoPipelineHint = "pipeline init writes a starter phases.yaml (and a spec) here; or name the pipeline: pipeline run path/to/phases.yaml"

// SessionOptions names a session for the session service: by id, or by
// the pipeline and spec, whose plan is loaded.
func (p Pipeline) SessionOptions(id string, statuses ...engine.Status) (session.Options, error) {
	o := session.Options{File: p.file(), ID: id, Statuses: statuses, Say: p.Say}
	if id != "" {
		return o, nil
	}
	if err := p.fileToFindBy(); err != nil {
		return o, err
	}
	plan, err := p.LoadPlan()
	if err != nil {
		return o, err
	}
	o.Plan = plan
	return o, nil
}

// fileToFindBy refuses a phases.yaml that is not there when a session is
// to be found by it (no id given).
func (p Pipeline) fileToFindBy() error {
	if _, err := os.Stat(p.file()); err != nil {
		return Usagef("%s: %v; run this from the pipeline's folder, pass --file, or name a session (pipeline sessions lists them)",
			p.file(), errors.Unwrap(err))
	}
	return nil
}

// FindSession finds the session id, or else the latest session of the
// pipeline and spec with one of statuses, for reading: no lock, nothing
// written. The caller closes it and its store (ref.Store).
func (p Pipeline) FindSession(id string, statuses ...engine.Status) (*session.Ref, error) {
	st, err := p.Existing()
	if err != nil {
		return nil, err
	}
	ref, err := p.findIn(st, id, statuses...)
	if err != nil {
		st.Close()
		return nil, p.elsewhere(id, err)
	}
	return ref, nil
}

// elsewhere is err, a session id not found in the pipeline's store, with
// where the session lives when it is in another git worktree of the
// repository (a fork, which pipeline sessions lists beside its parent)
// and the command to use there. Any other err is returned as it is.
func (p Pipeline) elsewhere(id string, err error) error {
	var ambiguous *store.AmbiguousError
	if id == "" || !errors.Is(err, store.ErrNotFound) || errors.As(err, &ambiguous) || p.StateDir != "" || os.Getenv("PIPELINE_STATE_DIR") != "" {
		return err
	}
	abs, aerr := filepath.Abs(p.file())
	if aerr != nil {
		return err
	}
	git := session.GitFor(filepath.Dir(abs))
	if git == nil {
		return err
	}
	rel, rerr := filepath.Rel(git.Root(), abs)
	if rerr != nil {
		return err
	}
	var dirs []string
	for _, tree := range git.Worktrees() {
		if tree != git.Root() {
			dirs = append(dirs, Pipeline{File: filepath.Join(tree, rel)}.StoreDir())
		}
	}
	dir, meta, ferr := FindInStores(dirs, id)
	if ferr != nil {
		return err
	}
	tree := filepath.Dir(filepath.Dir(dir))
	for _, t := range git.Worktrees() {
		if strings.HasPrefix(dir, t+string(filepath.Separator)) {
			tree = t
		}
	}
	return &Error{Code: ExitUsage,
		Message: fmt.Sprintf("%v; session %s lives in the git worktree %s (a fork made by pipeline fork), not in %s", err, meta.ID, tree, p.StoreDir()),
		Hint:    fmt.Sprintf("run it from there: cd %s && pipeline status %s (or logs, resume, diff ... with that id)", ShellQuote(tree), meta.ID)}
}

func (p Pipeline) findIn(st *store.Store, id string, statuses ...engine.Status) (*session.Ref, error) {
	o := session.Options{File: p.file(), ID: id, Statuses: statuses, Say: p.Say}
	if id == "" {
		latest, err := p.latest(st, statuses...)
		if err != nil {
			return nil, err
		}
		o.ID = latest
	}
	return session.Find(st, o)
}

// latest is the id of the newest session of the pipeline and spec with
// one of statuses. Only the plan's head is read (its spec names the
// sessions' key): session.Find loads the session's own plan.
func (p Pipeline) latest(st *store.Store, statuses ...engine.Status) (string, error) {
	if err := p.fileToFindBy(); err != nil {
		return "", err
	}
	head, err := p.loadHead()
	if err != nil {
		return "", err
	}
	// The key session.KeyOf gives the plan.
	last, err := session.Latest(st, st.Key(p.file(), head.Spec), statuses...)
	if err != nil {
		return "", &session.RefusedError{Message: err.Error()}
	}
	if last != nil {
		return last.ID, nil
	}
	// None of this pipeline and spec: say what starts one.
	what := "no session"
	if len(statuses) > 0 {
		names := make([]string, len(statuses))
		for i, s := range statuses {
			names[i] = string(s)
		}
		what = "no " + strings.Join(names, " or ") + " session"
	}
	of := p.file()
	if p.Spec != "" {
		of += " with spec " + p.Spec
	}
	return "", Usagef("%s of %s in %s; start one with: %s (or name one: pipeline sessions lists them)", what, of, st.Root, p.RunLine())
}

// readState finds a session for reading and rebuilds its state; a
// session whose runner died shows as paused (runner-died). The caller
// closes ref and ref.Store.
func (p Pipeline) readState(id string) (ref *session.Ref, s engine.State, crashed bool, err error) {
	ref, err = p.FindSession(id)
	if err != nil {
		return nil, s, false, err
	}
	if s, crashed, err = ref.State(); err != nil {
		ref.Close()
		ref.Store.Close()
		return nil, s, false, err
	}
	if crashed {
		s = engine.RunnerDied(s)
	}
	return ref, s, crashed, nil
}
