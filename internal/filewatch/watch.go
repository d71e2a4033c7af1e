// Package filewatch reports changes to the files a pipeline's watch:
// globs and specs name, debounced, with fsnotify. It lives apart from
// triggers so that the decision engine, which evaluates triggers, links
// no file watching.
package filewatch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/fsnotify/fsnotify"

	"github.com/pipeline-dev/pipeline/internal/clock"
)

// DefaultDebounce is how long a burst of changes to watched files must be
// quiet before it is reported: editors save in several steps.
const DefaultDebounce = 200 * time.Millisecond

// Targets is what a Watcher watches: globs relative to Root (`**`
// matches any number of folders) and exact files.
type Targets struct {
	Root  string
	Globs []string
	Files []string
}

// Change is a burst of changes to watched files, once it has been quiet
// for the debounce: the files, absolute and sorted. A file in it may have
// been written, replaced, created or removed.
type Change struct {
	Paths []string
}

// Watcher reports changes to the files that Targets name, with fsnotify.
// fsnotify does not recurse: the folders a glob can reach are watched one
// by one, added as they appear and dropped as they go. Editors' swap and
// backup files are ignored; a save through a temporary file renamed over
// the target, and a delete followed by a create, are changes of the
// target.
type Watcher struct {
	clock    clock.Clock
	debounce time.Duration
	notify   *fsnotify.Watcher
	changes  chan Change
	// Observed, when set, is told every event the watcher has taken in,
	// matched or not: tests await it before they move a fake clock.
	Observed func(path string)

	mu      sync.Mutex
	targets compiledTargets
	dirs    map[string]bool // the folders watched
	pending map[string]bool
	stop    func() bool
	// errs are the folders that could not be watched since SetTargets
	// last said them; limit those refused at an inotify limit, said once.
	errs  []error
	limit *WatchLimitError
	// add watches a folder: the inotify watcher's Add.
	add func(string) error
}

type compiledTargets struct {
	root  string
	globs []string // absolute, slash-separated
	files map[string]bool
	// bases are the folders under which a glob can match, and whether it
	// can match below their first level.
	bases map[string]bool
}

// NewWatcher watches targets; the debounce of zero reports every change
// at once.
func NewWatcher(t Targets, debounce time.Duration, clk clock.Clock) (*Watcher, error) {
	return newWatcher(t, debounce, clk, nil)
}

// newWatcher is NewWatcher with add watching each folder in place of
// the inotify watcher's Add, when set.
func newWatcher(t Targets, debounce time.Duration, clk clock.Clock, add func(string) error) (*Watcher, error) {
	if clk == nil {
		clk = clock.Real{}
	}
	notify, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, watchError("", err)
	}
	w := &Watcher{clock: clk, debounce: debounce, notify: notify, changes: make(chan Change, 16),
		dirs: map[string]bool{}, pending: map[string]bool{}, add: add}
	if w.add == nil {
		w.add = notify.Add
	}
	if err := w.SetTargets(t); err != nil {
		notify.Close()
		return nil, err
	}
	return w, nil
}

// Changes delivers the debounced changes.
func (w *Watcher) Changes() <-chan Change { return w.changes }

// SetTargets replaces what is watched: phases.yaml changed its watch
// globs, or a session with another spec appeared.
func (w *Watcher) SetTargets(t Targets) error {
	ct, err := compileTargets(t)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.targets = ct
	wanted := map[string]bool{}
	for base, deep := range ct.bases {
		w.walk(base, deep, wanted, false)
	}
	for dir := range w.dirs {
		if !wanted[dir] {
			_ = w.notify.Remove(dir)
			delete(w.dirs, dir)
		}
	}
	// What could not be watched is said once, not again at every call.
	errs := w.errs
	if w.limit != nil {
		errs = append(errs, w.limit)
	}
	w.errs, w.limit = nil, nil
	return errors.Join(errs...)
}

// failed keeps a folder that could not be watched: the folders refused
// at an inotify limit make one error. Called with w.mu held.
func (w *Watcher) failed(err error) {
	var limit *WatchLimitError
	if !errors.As(err, &limit) {
		w.errs = append(w.errs, err)
		return
	}
	if w.limit == nil {
		w.limit = limit
		return
	}
	w.limit.Folders = append(w.limit.Folders, limit.Folders...)
}

func compileTargets(t Targets) (compiledTargets, error) {
	root, err := filepath.Abs(t.Root)
	if err != nil {
		return compiledTargets{}, err
	}
	ct := compiledTargets{root: root, files: map[string]bool{}, bases: map[string]bool{}}
	for _, g := range t.Globs {
		abs := g
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(root, g)
		}
		abs = filepath.ToSlash(filepath.Clean(abs))
		if !doublestar.ValidatePattern(abs) {
			return compiledTargets{}, fmt.Errorf("watch: %q is not a valid glob", g)
		}
		ct.globs = append(ct.globs, abs)
		base, rest := doublestar.SplitPattern(abs)
		base = filepath.FromSlash(base)
		ct.bases[base] = ct.bases[base] || strings.Contains(rest, "/") || strings.Contains(rest, "**")
	}
	for _, f := range t.Files {
		abs, err := filepath.Abs(f)
		if err != nil {
			return compiledTargets{}, err
		}
		ct.files[abs] = true
		dir := filepath.Dir(abs)
		ct.bases[dir] = ct.bases[dir] || false
	}
	return ct, nil
}

// walk watches dir, and the folders below it when deep; with report, the
// matching files found on the way are pending changes (they appeared in a
// folder created after the watch began). Called with w.mu held.
func (w *Watcher) walk(dir string, deep bool, wanted map[string]bool, report bool) {
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll // the folder may come later: its parent is watched if a glob reaches it
			}
			return nil
		}
		if !d.IsDir() {
			if report && w.matches(path) {
				w.pending[path] = true
			}
			return nil
		}
		if path != dir && (!deep || skippedDir(d.Name())) {
			return fs.SkipDir
		}
		wanted[path] = true
		if !w.dirs[path] {
			if err := w.add(path); err != nil {
				w.failed(watchError(path, err))
				return fs.SkipDir
			}
			w.dirs[path] = true
		}
		return nil
	})
	if err != nil {
		w.errs = append(w.errs, err)
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		// Watch the nearest existing parent, so the folder is seen when
		// it is made.
		for parent := filepath.Dir(dir); parent != dir; dir, parent = parent, filepath.Dir(parent) {
			if info, err := os.Stat(parent); err == nil && info.IsDir() {
				wanted[parent] = true
				if !w.dirs[parent] && w.add(parent) == nil {
					w.dirs[parent] = true
				}
				break
			}
		}
	}
}

// watchError says what a failure to watch means. inotify reports its
// limits with errnos that read as something else: ENOSPC (the watches of
// fs.inotify.max_user_watches used up) is not a full disk, EMFILE (the
// instances of fs.inotify.max_user_instances) not open files.
func watchError(path string, err error) error {
	var folders []string
	if path != "" {
		folders = []string{path}
	}
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return &WatchLimitError{Setting: "fs.inotify.max_user_watches", Folders: folders}
	case errors.Is(err, syscall.EMFILE):
		return &WatchLimitError{Setting: "fs.inotify.max_user_instances", Folders: folders}
	}
	what := "watching"
	if path != "" {
		what += " " + path
	}
	return fmt.Errorf("%s: %w", what, err)
}

// WatchLimitError is a limit of the system's file watching (inotify)
// reached: a setting of the system's to raise, not a fault of the files.
type WatchLimitError struct {
	// Setting is the sysctl: fs.inotify.max_user_watches (watched
	// folders) or fs.inotify.max_user_instances (watchers).
	Setting string
	// Folders could not be watched; none when no watcher could be made.
	Folders []string
}

func (e *WatchLimitError) Error() string {
	var b strings.Builder
	switch len(e.Folders) {
	case 0:
		b.WriteString("cannot watch files")
	case 1:
		fmt.Fprintf(&b, "cannot watch %s", e.Folders[0])
	default:
		fmt.Fprintf(&b, "cannot watch %d folders (the first: %s)", len(e.Folders), e.Folders[0])
	}
	what, suggest, otherwise := "watched folders", 524288, "narrow the watch: globs"
	if e.Setting == "fs.inotify.max_user_instances" {
		what, suggest, otherwise = "file watchers", 1024, "stop other watchers"
	}
	fmt.Fprintf(&b, ": the system's limit of %s is reached (sysctl %s", what, e.Setting)
	current := sysctlInt(e.Setting)
	if current > 0 {
		fmt.Fprintf(&b, " = %d", current)
		suggest = max(suggest, 2*current)
	}
	fmt.Fprintf(&b, "); raise it (sudo sysctl %s=%d, and in /etc/sysctl.d/ to keep it), or %s", e.Setting, suggest, otherwise)
	return b.String()
}

// sysctlInt reads a numeric kernel setting, or 0 where there is none.
func sysctlInt(name string) int {
	content, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(name, ".", "/"))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(content)))
	return n
}

// skippedDir names folders no spec lives in, whose churn is not ours to
// follow.
func skippedDir(name string) bool {
	return name == ".git" || name == ".pipeline" || name == "node_modules"
}

// InSkippedDir reports whether a slash-separated relative path goes
// through a folder the Watcher does not follow (.git, .pipeline,
// node_modules): what matches a glob there is not watched.
func InSkippedDir(rel string) bool {
	for _, part := range strings.Split(rel, "/") {
		if skippedDir(part) {
			return true
		}
	}
	return false
}

// editorTemp reports the swap, backup and temporary files editors write
// beside the file they save.
func editorTemp(name string) bool {
	switch {
	case name == "4913", strings.HasSuffix(name, "~"), strings.HasPrefix(name, ".#"),
		strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#"),
		strings.HasSuffix(name, ".swp"), strings.HasSuffix(name, ".swx"), strings.HasSuffix(name, ".swo"),
		strings.HasSuffix(name, "___jb_tmp___"), strings.HasSuffix(name, "___jb_old___"),
		strings.HasSuffix(name, ".tmp"), strings.Contains(name, ".tmp."):
		return true
	}
	return false
}

// matches reports whether path is a target. Called with w.mu held.
func (w *Watcher) matches(path string) bool {
	if editorTemp(filepath.Base(path)) {
		return false
	}
	if w.targets.files[path] {
		return true
	}
	slash := filepath.ToSlash(path)
	for _, g := range w.targets.globs {
		if doublestar.MatchUnvalidated(g, slash) {
			return true
		}
	}
	return false
}

// isDir reports whether path is a folder (not a link to one).
func isDir(path string) bool {
	info, err := os.Lstat(path)
	return err == nil && info.IsDir()
}

// under reports whether path lies below dir.
func under(path, dir string) bool {
	return strings.HasPrefix(path, dir+string(filepath.Separator))
}

// Run takes in fsnotify's events until ctx is done, and then closes the
// watcher.
func (w *Watcher) Run(ctx context.Context) error {
	defer w.notify.Close()
	for {
		select {
		case <-ctx.Done():
			w.mu.Lock()
			if w.stop != nil {
				w.stop()
			}
			w.mu.Unlock()
			return nil
		case err, ok := <-w.notify.Errors:
			if !ok {
				return nil
			}
			// An overflowed queue lost events: report every target as
			// changed rather than miss one.
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.mu.Lock()
				for base, deep := range w.targets.bases {
					w.walk(base, deep, map[string]bool{}, true)
				}
				for f := range w.targets.files {
					w.pending[f] = true
				}
				change, ready := w.arm()
				w.mu.Unlock()
				if ready {
					w.changes <- change
				}
				continue
			}
			return err
		case ev, ok := <-w.notify.Events:
			if !ok {
				return nil
			}
			w.take(ev)
		}
	}
}

func (w *Watcher) take(ev fsnotify.Event) {
	w.mu.Lock()
	path := filepath.Clean(ev.Name)
	if ev.Has(fsnotify.Create) && !skippedDir(filepath.Base(path)) && isDir(path) {
		// A new folder: watch what of it a target can reach, and take
		// what was made in it before the watch began.
		for base, deep := range w.targets.bases {
			switch {
			case path == base:
				w.walk(base, deep, map[string]bool{}, true)
			case deep && under(path, base):
				w.walk(path, true, map[string]bool{}, true)
			case under(base, path):
				// On the way to a base that did not exist: walk to it.
				w.walk(base, deep, map[string]bool{}, true)
			}
		}
	}
	if (ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)) && w.dirs[path] {
		_ = w.notify.Remove(path)
		delete(w.dirs, path)
	}
	if w.matches(path) {
		w.pending[path] = true
	}
	change, ready := w.arm()
	observed := w.Observed
	w.mu.Unlock()
	if ready {
		w.changes <- change
	}
	if observed != nil {
		observed(path)
	}
}

// arm (re)starts the debounce when changes are pending: they are
// reported once nothing has happened for the debounce. With no debounce
// the change is ready now, for the caller to send once it has let go of
// w.mu. Called with w.mu held.
func (w *Watcher) arm() (Change, bool) {
	if len(w.pending) == 0 {
		return Change{}, false
	}
	if w.stop != nil {
		w.stop()
	}
	if w.debounce <= 0 {
		return w.takePending(), true
	}
	w.stop = w.clock.AfterFunc(w.debounce, func() {
		w.mu.Lock()
		change := w.takePending()
		w.mu.Unlock()
		if len(change.Paths) > 0 {
			w.changes <- change
		}
	})
	return Change{}, false
}

// takePending empties the pending paths into a change. Called with w.mu
// held.
func (w *Watcher) takePending() Change {
	paths := make([]string, 0, len(w.pending))
	for p := range w.pending {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	clear(w.pending)
	w.stop = nil
	return Change{Paths: paths}
}
