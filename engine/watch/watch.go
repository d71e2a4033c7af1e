// Package watch is the watch driver: one long-running loop over the
// sessions of one or more pipelines that resumes a paused session when its
// spec, a file its pipeline's watch: globs match, or its phases.yaml
// changes, and a session paused by a rate limit when its resume_after
// comes. Every session runs through the session service and the local
// driver, at most MaxParallel at once; the session lock decides who runs
// a session, and a store has one watcher at a time.
package watch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/clock"
	"github.com/pipeline-dev/pipeline/internal/filewatch"
	"github.com/pipeline-dev/pipeline/internal/redact"
)

// LockKey is the store lock a watcher holds: one watcher per store, so
// that two never race to resume the same sessions. Its holder lists the
// sessions waiting for a free slot (Holder.Queued), for pipeline sessions.
const LockKey = "watch"

// ErrInterrupted ends Run when its context was cancelled or a signal
// stopped it: what ran was paused. Run returns it as an
// *InterruptedError, which names those sessions.
var ErrInterrupted = errors.New("watch: interrupted")

// InterruptedError is ErrInterrupted with the sessions the interrupt
// paused: none when none was running (a session that had completed or
// paused by itself is not among them).
type InterruptedError struct {
	Paused []string
}

func (e *InterruptedError) Error() string {
	if len(e.Paused) == 0 {
		return "watch: interrupted; no session was running"
	}
	return fmt.Sprintf("watch: interrupted; paused %s", strings.Join(e.Paused, ", "))
}

func (e *InterruptedError) Is(target error) bool { return target == ErrInterrupted }

// Pipeline is one phases.yaml to watch, with its store.
type Pipeline struct {
	File  string
	Store *store.Store
}

// Options configure Run.
type Options struct {
	Pipelines []Pipeline
	// Debounce, when set, overrides the pipelines' watch_debounce (the
	// smallest of them; filewatch.DefaultDebounce when none sets one).
	Debounce *time.Duration
	// MaxParallel bounds the sessions running at once; <= 0: the number
	// of cores.
	MaxParallel int
	// Reasons, when set, narrows the pauses a change resumes.
	Reasons []string
	// Keys, when set, keeps the sessions of these (pipeline, spec) keys
	// only (pipeline run --watch follows its own session).
	Keys []string
	// Clock drives the debounce and the rate limits' resume_after.
	Clock clock.Clock
	// Grace is the time a stopped step gets before it is killed.
	Grace time.Duration
	// Report receives every event, in order, from one goroutine.
	Report func(Event)
	// View shows a session's run; nil shows nothing.
	View func(id string, redactor *redact.Redactor) local.View
	// Interrupts forwards requests to every running session: a Kill stops
	// their steps at once.
	Interrupts <-chan local.Interrupt
	// Observed is told every file event the watcher takes in (tests).
	Observed func(path string)
	// Ended, when set, is asked after each run whether the watch is over
	// (pipeline run --watch ends with its session).
	Ended func(id string, state engine.State) bool
	// Sessions, when set, is shown the watched sessions once the watch is
	// ready and after each run.
	Sessions func([]Watched)
	// Backend, when set, is where the sessions live and run (a Temporal
	// fleet): Pipelines name the files only (Store nil, no watch lock),
	// and the watcher runs nothing itself.
	Backend Backend
	// Signals: SIGINT, SIGTERM and SIGHUP pause what runs and end the
	// watch, a second one kills the running steps at once, SIGQUIT does
	// both; a SIGTERM sent by pipeline pause SESSION pauses that session
	// only, and the watch goes on.
	Signals bool
}

// Watched is a session as the watcher sees it.
type Watched struct {
	ID     string `json:"id"`
	Spec   string `json:"spec,omitempty"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	Queued bool   `json:"queued,omitempty"`
}

// Event is one line of the watcher's report.
type Event struct {
	Time  time.Time `json:"time"`
	Event string    `json:"event"`
	// File is the file that changed, relative to the working folder when
	// it is below it.
	File string `json:"file,omitempty"`
	// Change says what the file is to the watcher: spec, phases.yaml,
	// watched (a watch: glob), or why the session came up without one.
	Change  string `json:"change,omitempty"`
	Session string `json:"session,omitempty"`
	// Reason: why a session was resumed (the pause it had), skipped,
	// queued, or paused; the error of an invalid file.
	Reason string `json:"reason,omitempty"`
	// Status is the session's status once the event happened.
	Status string `json:"status,omitempty"`
}

// Event kinds.
const (
	EventReady     = "ready"     // watching; Reason says what
	EventFollowed  = "followed"  // a session made since the watch began is watched too
	EventChanged   = "changed"   // a file changed
	EventInvalid   = "invalid"   // a changed phases.yaml or spec does not load: the old plan is kept
	EventReloaded  = "reloaded"  // a changed phases.yaml or spec loaded: it applies from each session's next step
	EventResumed   = "resumed"   // a session was resumed
	EventQueued    = "queued"    // a session waits for a free slot
	EventSkipped   = "skipped"   // a session was not resumed, and why
	EventPaused    = "paused"    // a session's run paused
	EventCompleted = "completed" // a session's run completed
	EventFailed    = "failed"    // a session's run failed
	EventError     = "error"     // the watcher met an error it goes on from
	EventStopping  = "stopping"  // interrupted: pausing what runs
)

// What a change is to a session.
const (
	ChangeSpec     = "spec"
	ChangePipeline = "phases.yaml"
	ChangeWatched  = "watched"
	ChangeWhileOff = "changed while no watcher ran"
	ChangeDue      = "resume_after reached"
)

// pipe is a watched pipeline.
type pipe struct {
	file  string // absolute
	dir   string
	st    *store.Store
	index string
	// plan is the last good plan of phases.yaml alone, for its watch
	// globs; a session's own plan (phases.yaml with its spec) is loaded
	// when it resumes.
	plan *spec.Plan
	// globbed holds the content hash of every file the watch globs
	// matched when a session of the pipeline last paused (or the watch
	// began): a change that leaves a file so is no change. It is how a
	// session's own last writes, which the debounce reports after its
	// pause, are told from a human's; clocks cannot tell them apart.
	globbed map[string]string
	// invalid: phases.yaml did not load when it last changed; the next
	// good one is said to be valid again.
	invalid bool
}

// tracked is the latest session of a (pipeline, spec) key.
type tracked struct {
	id, key, spec string
	pipe          *pipe
	status        engine.Status
	reason        string
	resumeAfter   time.Time
	// elsewhere: another process runs it.
	elsewhere bool
	queued    bool
	// why it was queued: the change that woke it.
	queuedFile, queuedChange string
	run                      *running
	cancelDue                func() bool
	// plan is the last plan of the session that loaded, planKey what it
	// was made from (see planKey).
	plan    *spec.Plan
	planKey string
	// listed is the time of the session's index line last read.
	listed time.Time
	// invalid: the session's plan (its spec's frontmatter) did not load
	// when it last changed.
	invalid bool
}

// running is a session this watcher runs.
type running struct {
	sess       *session.Session
	plans      chan *spec.Plan
	interrupts chan local.Interrupt
	digest     string
}

type finished struct {
	t     *tracked
	state engine.State
	err   error
}

type watcher struct {
	o        Options
	clock    clock.Clock
	pipes    []*pipe
	locks    map[string]*store.Lock // by store root
	sessions map[string]*tracked    // by key
	queue    []*tracked
	active   int
	notify   *filewatch.Watcher
	targets  filewatch.Targets
	// targetsErr is what watching the targets last failed with: said
	// once, not at every change of the targets.
	targetsErr string
	due        chan *tracked
	done       chan finished
	ctx        context.Context
	// runs is the context of the sessions' runs: cancelled, they pause.
	runs       context.Context
	cancelRuns context.CancelFunc
	stopping   bool
	// pausedByStop are the sessions whose runs the stop paused.
	pausedByStop []string
	over         bool
	ready        bool
	// followed are the sessions scan found since the watch began, to be
	// reported once their specs are watched.
	followed []Event
	started  time.Time
}

// Run watches until ctx is done (then pauses what runs and returns
// ErrInterrupted) or Options.Ended says the watch is over. A store that
// another watcher already watches is refused (*session.RefusedError).
func Run(ctx context.Context, o Options) error {
	w := &watcher{o: o, clock: o.Clock, sessions: map[string]*tracked{}, locks: map[string]*store.Lock{}, due: make(chan *tracked, 16),
		done: make(chan finished, 16), ctx: ctx, started: time.Now()}
	if w.clock == nil {
		w.clock = clock.Real{}
	}
	if w.o.MaxParallel <= 0 {
		w.o.MaxParallel = runtime.NumCPU()
	}
	if w.o.Report == nil {
		w.o.Report = func(Event) {}
	}
	w.runs, w.cancelRuns = context.WithCancel(context.WithoutCancel(ctx))
	defer w.cancelRuns()
	defer w.release()
	var signals chan os.Signal
	if o.Signals {
		// From the start: a signal before the watch is ready pauses
		// nothing and ends it with exit 3, as one after.
		signals = make(chan os.Signal, 4)
		signal.Notify(signals, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
		defer signal.Stop(signals)
	}
	if err := w.open(); err != nil {
		return err
	}
	debounce := w.debounce()
	if err := w.scan(); err != nil {
		return err
	}
	w.targets = w.wanted()
	for _, p := range w.pipes {
		w.hashGlobbed(p)
	}
	notify, err := filewatch.NewWatcher(w.targets, debounce, w.clock)
	if err != nil {
		return fmt.Errorf("watching: %w", err)
	}
	notify.Observed = o.Observed
	w.notify = notify
	watchCtx, stopWatching := context.WithCancel(context.Background())
	watchErr := make(chan error, 1)
	go func() { watchErr <- notify.Run(watchCtx) }()
	defer func() {
		stopWatching()
		<-watchErr
	}()
	paused := w.pausedHere()
	// Changes from here on reach the watcher: what changed before is
	// caught up first, and a change seen twice (made during the catch
	// up) finds the spec as its resume left it.
	w.catchUp()
	w.report(Event{Event: EventReady, Reason: fmt.Sprintf("watching %d file(s) and %d glob(s) of %d pipeline(s); %d paused session(s); debounce %s, at most %d at once",
		len(w.targets.Files), len(w.targets.Globs), len(w.pipes), paused, debounce, w.o.MaxParallel)})
	w.ready = true
	w.show()
	return w.loop(ctx, notify, watchErr, signals)
}

// debounce is Options.Debounce, else the smallest watch_debounce of the
// pipelines, else filewatch.DefaultDebounce.
func (w *watcher) debounce() time.Duration {
	if w.o.Debounce != nil {
		return *w.o.Debounce
	}
	debounce, set := filewatch.DefaultDebounce, false
	for _, p := range w.pipes {
		if d := p.plan.WatchDebounce; d != nil && (!set || time.Duration(*d) < debounce) {
			debounce, set = time.Duration(*d), true
		}
	}
	return debounce
}

// pausedHere counts the paused sessions no other process runs.
func (w *watcher) pausedHere() int {
	paused := 0
	for _, t := range w.sessions {
		if t.status == engine.StatusPaused && !t.elsewhere {
			paused++
		}
	}
	return paused
}

// open takes the watch lock of every store and loads each pipeline.
func (w *watcher) open() error {
	// Every file's problems are told at once, as validate does.
	var problems spec.Error
	for _, p := range w.o.Pipelines {
		file, err := filepath.Abs(p.File)
		if err != nil {
			return err
		}
		plan, err := spec.Load(p.File, "")
		var specErr *spec.Error
		if errors.As(err, &specErr) {
			problems.Problems = append(problems.Problems, specErr.Problems...)
			continue
		}
		if err != nil {
			return err
		}
		if w.o.Backend != nil {
			w.pipes = append(w.pipes, &pipe{file: file, dir: filepath.Dir(file), plan: plan,
				index: filepath.Join(filepath.Dir(file), ".pipeline", store.IndexName)})
			continue
		}
		if w.locks[p.Store.Root] == nil {
			lock, err := p.Store.Lock(LockKey, store.Holder{PID: os.Getpid(), Started: w.started})
			var locked *store.LockedError
			if errors.As(err, &locked) {
				h := locked.Holder
				return &session.RefusedError{Err: err, Message: fmt.Sprintf(
					"pipeline watch (pid %d, started %s) already watches the sessions in %s: one watcher per folder, so that no session is resumed twice; stop that one first",
					h.PID, h.Started.Local().Format("2006-01-02 15:04:05"), p.Store.Root)}
			}
			if err != nil {
				return err
			}
			w.locks[p.Store.Root] = lock
		}
		root, err := filepath.Abs(p.Store.Root)
		if err != nil {
			return err
		}
		w.pipes = append(w.pipes, &pipe{file: file, dir: filepath.Dir(file), st: p.Store, plan: plan,
			index: filepath.Join(root, store.IndexName)})
	}
	if len(problems.Problems) > 0 {
		return &problems
	}
	return nil
}

func (w *watcher) release() {
	for _, l := range w.locks {
		l.Release()
	}
}

// scan brings the tracked sessions up to date from the stores' indexes:
// the latest session of every key of every pipeline.
func (w *watcher) scan() error {
	if w.o.Backend != nil {
		return w.scanBackend()
	}
	return w.scanStores()
}

// scanStores is scan of the local stores.
func (w *watcher) scanStores() error {
	seen := map[string]bool{}
	for _, p := range w.pipes {
		list, err := p.st.List()
		if err != nil {
			return err
		}
		for _, sum := range list { // newest first
			if seen[sum.Key] || sum.Key != p.st.Key(p.file, sum.Spec) {
				continue
			}
			if len(w.o.Keys) > 0 && !slices.Contains(w.o.Keys, sum.Key) {
				continue
			}
			seen[sum.Key] = true
			t := w.sessions[sum.Key]
			if t != nil && t.run != nil {
				continue // ours: the run tells its state
			}
			if t == nil || t.id != sum.ID {
				if t != nil && t.cancelDue != nil {
					t.cancelDue()
				}
				t = &tracked{id: sum.ID, key: sum.Key, spec: sum.Spec, pipe: p}
				w.sessions[sum.Key] = t
				// The plan it would resume with now: kept should
				// phases.yaml turn invalid.
				w.planFor(t)
				if w.ready {
					// Said once the spec is watched (see retarget).
					w.followed = append(w.followed, Event{Event: EventFollowed, File: rel(t.spec), Session: t.id, Status: sum.Status})
				}
			}
			wasElsewhere := t.elsewhere
			t.elsewhere = p.st.Held(sum.Key)
			if !sum.Updated.Equal(t.listed) || t.elsewhere || wasElsewhere {
				t.listed = sum.Updated
				t.status, t.reason = engine.Status(sum.Status), sum.PauseReason
				if !t.elsewhere && (t.status == engine.StatusPaused || t.status == engine.StatusRunning) {
					w.readState(t)
				}
			}
			if t.status != engine.StatusPaused || t.reason != engine.ReasonRateLimit {
				if t.cancelDue != nil {
					t.cancelDue()
					t.cancelDue = nil
				}
				continue
			}
			if t.cancelDue == nil {
				w.scheduleDue(t)
			}
		}
	}
	// Keys with no session left (pipeline clean removed them).
	w.forget(seen)
	return nil
}

// readState reads t's status from its files rather than its index line,
// which lags behind them after a kill (the line of a resume comes with a
// later snapshot): a session the index says is paused may have been
// running when its runner died. One whose runner died is continued as a
// paused one is.
func (w *watcher) readState(t *tracked) {
	ref, err := session.Find(t.pipe.st, session.Options{ID: t.id})
	if err != nil {
		return
	}
	state, crashed, err := ref.State()
	ref.Close()
	if err != nil {
		return
	}
	t.status, t.reason = state.Status, ""
	if state.Pause != nil && state.Status == engine.StatusPaused {
		t.reason = state.Pause.Reason
	}
	if crashed {
		t.status, t.reason = engine.StatusPaused, engine.ReasonRunnerDied
	}
}

// scheduleDue arms the resume of a session paused by a rate limit at its
// resume_after.
func (w *watcher) scheduleDue(t *tracked) {
	ref, err := session.Find(t.pipe.st, session.Options{ID: t.id})
	if err != nil {
		return
	}
	state, _, err := ref.State()
	ref.Close()
	if err != nil || state.Pause == nil || state.Pause.ResumeAfter == nil {
		return
	}
	t.resumeAfter = *state.Pause.ResumeAfter
	wait := t.resumeAfter.Sub(w.clock.Now())
	t.cancelDue = w.clock.AfterFunc(max(wait, 0), func() { w.due <- t })
}

// wanted is what the watcher must watch now.
func (w *watcher) wanted() filewatch.Targets {
	var t filewatch.Targets
	for _, p := range w.pipes {
		t.Files = append(t.Files, p.file)
		if w.o.Backend == nil {
			t.Files = append(t.Files, p.index)
		}
		if p.plan.Spec != "" {
			abs, _ := filepath.Abs(p.plan.Spec)
			t.Files = append(t.Files, abs)
		}
		for _, g := range p.plan.Watch {
			t.Globs = append(t.Globs, escapeGlob(filepath.ToSlash(p.dir))+"/"+g)
		}
	}
	for _, s := range w.sessions {
		if s.spec != "" {
			t.Files = append(t.Files, s.spec)
		}
	}
	slices.Sort(t.Files)
	t.Files = slices.Compact(t.Files)
	slices.Sort(t.Globs)
	t.Globs = slices.Compact(t.Globs)
	return t
}

// escapeGlob escapes a folder's name for use in a glob.
func escapeGlob(path string) string {
	var b strings.Builder
	for _, r := range path {
		if strings.ContainsRune(`*?[]{}\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// retarget watches what is wanted now, when that changed.
func (w *watcher) retarget() {
	t := w.wanted()
	if slices.Equal(t.Files, w.targets.Files) && slices.Equal(t.Globs, w.targets.Globs) {
		return
	}
	w.targets = t
	if err := w.notify.SetTargets(t); err != nil && err.Error() != w.targetsErr {
		w.report(Event{Event: EventError, Reason: err.Error()})
		w.targetsErr = err.Error()
	}
}

// retargetAndSay watches what is wanted now, then says which sessions
// are followed: a change of their spec from then on counts.
func (w *watcher) retargetAndSay() {
	w.retarget()
	for _, e := range w.followed {
		w.report(e)
	}
	w.followed = nil
}

// catchUp resumes the paused sessions whose spec or plan changed while no
// watcher ran: the spec's hash, or the plan's digest, differs from the
// one recorded at the pause.
func (w *watcher) catchUp() {
	for _, t := range w.sorted() {
		if t.status != engine.StatusPaused || t.elsewhere || t.reason == engine.ReasonRunnerDied {
			continue
		}
		plan, err := w.planFor(t)
		if err != nil {
			continue // reported when it changes
		}
		if w.o.Backend != nil {
			if w.changedOnBackend(t, plan) {
				w.consider(t, t.spec, ChangeWhileOff)
			}
			continue
		}
		ref, err := session.Find(t.pipe.st, session.Options{ID: t.id})
		if err != nil {
			continue
		}
		state, _, stateErr := ref.State()
		changed, _ := session.SpecChangedSincePause(plan, ref.X)
		ref.Close()
		if stateErr != nil {
			continue
		}
		file := t.spec
		if !changed && state.PlanDigest != "" && state.PlanDigest != plan.Digest {
			changed, file = true, t.pipe.file
		}
		if changed {
			w.consider(t, file, ChangeWhileOff)
		}
	}
}

// sorted lists the tracked sessions oldest first: the order they queue in.
func (w *watcher) sorted() []*tracked {
	list := make([]*tracked, 0, len(w.sessions))
	for _, t := range w.sessions {
		list = append(list, t)
	}
	slices.SortFunc(list, func(a, b *tracked) int { return strings.Compare(a.id, b.id) })
	return list
}

func (w *watcher) loop(ctx context.Context, notify *filewatch.Watcher, watchErr <-chan error, signals <-chan os.Signal) error {
	cancelled := ctx.Done()
	outputLost := false
	// stop pauses what runs and ends the watch once it has.
	stop := func(cause string) {
		if w.stopping {
			return
		}
		w.stopping = true
		w.cancelRuns()
		w.queue = nil
		w.setQueued()
		if w.active > 0 {
			cause += fmt.Sprintf(": pausing %d running session(s)", w.active)
		}
		w.report(Event{Event: EventStopping, Reason: cause})
	}
	kill := func(cause string) {
		w.forward(local.Interrupt{Kill: true, Cause: cause})
	}
	poll, stopPolling := w.pollBackend()
	defer stopPolling()
	for {
		if w.over && w.active == 0 {
			return nil
		}
		if w.stopping && w.active == 0 {
			return &InterruptedError{Paused: w.pausedByStop}
		}
		select {
		case <-cancelled:
			cancelled = nil
			stop("cancelled")
		case sig := <-signals:
			w.signalled(sig, &outputLost, stop, kill)
		case in := <-w.o.Interrupts:
			w.forward(in)
		case change := <-notify.Changes():
			if !w.stopping {
				w.changed(change.Paths)
			}
		case t := <-w.due:
			t.cancelDue = nil
			if !w.stopping && w.sessions[t.key] == t {
				w.consider(t, "", ChangeDue)
			}
		case f := <-w.done:
			w.ended(f)
		case <-poll:
			if !w.stopping {
				w.changed([]string{w.pipes[0].index})
			}
		case err := <-watchErr:
			if err != nil {
				return fmt.Errorf("watching: %w", err)
			}
			watchErr = nil
		}
	}
}

// signalled does what a signal asks: stop (pause what runs, end the
// watch), kill the running steps, or pass a pause on (see
// Options.Signals).
func (w *watcher) signalled(sig os.Signal, outputLost *bool, stop, kill func(string)) {
	switch {
	case sig == syscall.SIGPIPE && (*outputLost || !local.OutputClosed()):
		// A step's closed input, or the output already known lost.
	case sig == syscall.SIGPIPE || sig == syscall.SIGHUP:
		*outputLost = true
		stop("the output or terminal was closed")
	case sig == syscall.SIGQUIT:
		stop("quit (SIGQUIT)")
		kill("quit (SIGQUIT)")
	case w.stopping:
		kill("interrupted again")
	case sig == syscall.SIGTERM && w.pauseRequested():
		// pipeline pause SESSION: that session pauses, the watch goes on.
	case sig == syscall.SIGTERM:
		stop("terminated (SIGTERM)")
	default:
		stop("interrupted (SIGINT)")
	}
}

// forward sends in to every running session.
func (w *watcher) forward(in local.Interrupt) {
	for _, t := range w.sessions {
		if t.run != nil {
			select {
			case t.run.interrupts <- in:
			default:
			}
		}
	}
}

// pauseRequested passes the pause requests pipeline pause left to the
// sessions they are for, and reports whether there was one.
func (w *watcher) pauseRequested() bool {
	found := false
	for _, t := range w.sessions {
		if t.run == nil || t.run.sess == nil {
			continue
		}
		if notes, ok := t.run.sess.PauseRequest(); ok {
			found = true
			select {
			case t.run.interrupts <- local.Interrupt{Reason: engine.ReasonHuman, Notes: notes, Cause: local.CausePauseCommand}:
			default:
			}
		}
	}
	return found
}

// changed routes a burst of changed files to the sessions they concern.
func (w *watcher) changed(paths []string) {
	rescan := false
	type cause struct{ file, change string }
	wake := map[*tracked]cause{}
	for _, path := range paths {
		if w.inStore(path) {
			continue // the sessions' own files: a glob over them would resume them for ever
		}
		for _, p := range w.pipes {
			switch {
			case path == p.index:
				rescan = true
			case path == p.file:
				w.report(Event{Event: EventChanged, File: rel(path), Change: ChangePipeline})
				if !w.reload(p) {
					continue
				}
				for _, t := range w.sessions {
					if t.pipe == p {
						wake[t] = cause{path, ChangePipeline}
					}
				}
			default:
				specOf := false
				for _, t := range w.sessions {
					if t.pipe == p && t.spec == path {
						specOf = true
						wake[t] = cause{path, ChangeSpec}
					}
				}
				if specOf {
					w.report(Event{Event: EventChanged, File: rel(path), Change: ChangeSpec})
					continue
				}
				if !w.globChanged(p, path) {
					continue
				}
				for _, t := range w.sessions {
					if t.pipe == p {
						if _, ok := wake[t]; !ok {
							wake[t] = cause{path, ChangeWatched}
						}
					}
				}
			}
		}
	}
	if rescan {
		if err := w.scan(); err != nil {
			w.report(Event{Event: EventError, Reason: err.Error()})
		}
		w.retargetAndSay()
	}
	for _, t := range w.sorted() {
		if c, ok := wake[t]; ok {
			w.consider(t, c.file, c.change)
		}
	}
}

// globChanged reports whether path, a file of p's folder, is one its
// watch: globs match whose content changed since the sessions last
// paused, and says so.
func (w *watcher) globChanged(p *pipe, path string) bool {
	if !under(path, p.dir) || !w.globbed(p, path) {
		return false
	}
	if hash, had := p.globbed[path]; had && hash == fileHash(path) {
		w.report(Event{Event: EventSkipped, File: rel(path), Change: ChangeWatched,
			Reason: "as it was when the sessions last paused (their own runs wrote it)"})
		return false
	}
	p.globbed[path] = fileHash(path)
	w.report(Event{Event: EventChanged, File: rel(path), Change: ChangeWatched})
	return true
}

// inStore reports whether path is a file of a store other than its
// index.
func (w *watcher) inStore(path string) bool {
	for _, p := range w.pipes {
		if path != p.index && under(path, filepath.Dir(p.index)) {
			return true
		}
	}
	return false
}

// hashGlobbed records the content of every file p's watch globs match
// (see pipe.globbed).
func (w *watcher) hashGlobbed(p *pipe) {
	p.globbed = map[string]string{}
	root := os.DirFS(p.dir)
	for _, g := range p.plan.Watch {
		matches, err := doublestar.Glob(root, g, doublestar.WithFilesOnly(), doublestar.WithNoFollow())
		if err != nil {
			continue
		}
		for _, m := range matches {
			if filewatch.InSkippedDir(m) {
				continue
			}
			path := filepath.Join(p.dir, filepath.FromSlash(m))
			p.globbed[path] = fileHash(path)
		}
	}
}

// maxHashed bounds the files hashed whole; a larger one is known by its
// size and modification time.
const maxHashed = 4 << 20

// fileHash names a file's content; "" when it cannot be read (gone).
func fileHash(path string) string {
	info, err := os.Stat(path)
	if err != nil || !info.Mode().IsRegular() {
		return ""
	}
	if info.Size() > maxHashed {
		return fmt.Sprintf("size %d, modified %s", info.Size(), info.ModTime().Format(time.RFC3339Nano))
	}
	content, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return session.ContentHash(content)
}

// globbed reports whether one of p's watch globs matches path.
func (w *watcher) globbed(p *pipe, path string) bool {
	rel, err := filepath.Rel(p.dir, path)
	if err != nil {
		return false
	}
	for _, g := range p.plan.Watch {
		if ok, _ := doublestar.Match(g, filepath.ToSlash(rel)); ok {
			return true
		}
	}
	return false
}

// reload loads a changed phases.yaml; an invalid one is reported and the
// plan it would replace kept.
func (w *watcher) reload(p *pipe) bool {
	plan, err := spec.Load(p.file, "")
	if err != nil {
		p.invalid = true
		w.report(Event{Event: EventInvalid, File: rel(p.file), Reason: withConsequence(err, "the sessions keep the plan they had")})
		return false
	}
	again := p.invalid
	p.invalid = false
	if plan.Digest == p.plan.Digest {
		if again {
			w.report(Event{Event: EventReloaded, File: rel(p.file), Reason: "valid again: applied; the plan is the one the sessions kept"})
		}
		return false // saved as it was
	}
	p.plan = plan
	w.hashGlobbed(p)
	reason := "valid: it applies to every session from its next step"
	if again {
		reason = "valid again: applied; it applies to every session from its next step"
	}
	w.report(Event{Event: EventReloaded, File: rel(p.file), Reason: reason})
	w.retarget()
	return true
}

// consider resumes t for a change of file, or says why not.
func (w *watcher) consider(t *tracked, file, change string) {
	skip := func(format string, args ...any) {
		w.report(Event{Event: EventSkipped, File: rel(file), Change: change, Session: t.id, Status: string(t.status),
			Reason: fmt.Sprintf(format, args...)})
	}
	if t.run == nil && !t.queued && w.o.Backend == nil {
		// Another process may have started or ended it since the index
		// was read: its lock says.
		if held := t.pipe.st.Held(t.key); held != t.elsewhere {
			t.elsewhere = held
			if !held {
				w.readState(t)
			}
		}
	}
	var spec specSeen
	if change == ChangeSpec {
		spec = w.specSeen(t)
	}
	if spec.ownWrite {
		// The session moved its spec's status: no human changed it.
		skip("the session itself wrote the spec (its status)")
		return
	}
	switch {
	case t.run != nil:
		w.replan(t, file)
		return
	case t.queued:
		skip("already queued")
		return
	case t.elsewhere && w.o.Backend != nil:
		skip("running on its backend")
		return
	case t.elsewhere:
		skip("running in another process")
		return
	case t.status != engine.StatusPaused:
		if change == ChangeSpec {
			// Said for its own spec only: a change of phases.yaml or of a
			// watched file would list every finished session.
			skip("%s", t.status)
		}
		return
	case change != ChangeDue && t.reason == engine.ReasonRateLimit && w.clock.Now().Before(t.resumeAfter):
		skip("paused by a rate limit until %s: resumed then", t.resumeAfter.Local().Format("15:04:05"))
		return
	case len(w.o.Reasons) > 0 && !slices.Contains(w.o.Reasons, t.reason):
		skip("paused for %s, which --reasons leaves out", t.reason)
		return
	case change == ChangeSpec && spec.unchanged(w, t):
		skip("the spec is as it was at the pause")
		return
	}
	if w.active >= w.o.MaxParallel {
		t.queued, t.queuedFile, t.queuedChange = true, file, change
		w.queue = append(w.queue, t)
		w.setQueued()
		w.report(Event{Event: EventQueued, File: rel(file), Change: change, Session: t.id, Status: string(t.status),
			Reason: fmt.Sprintf("%d running, --max-parallel %d", w.active, w.o.MaxParallel)})
		return
	}
	w.start(t, file, change)
}

// planFor loads t's plan: phases.yaml with the session's spec. When
// phases.yaml is what does not load (reported when it changed), the last
// plan that loaded is kept; a spec that does not load is the session's
// to fix, and it stays paused.
func (w *watcher) planFor(t *tracked) (*spec.Plan, error) {
	key := planKey(t.pipe.file, t.spec)
	if t.plan != nil && key != "" && key == t.planKey {
		return t.plan, nil
	}
	plan, err := spec.Load(t.pipe.file, t.spec)
	if err == nil {
		t.plan, t.planKey = plan, key
		return plan, nil
	}
	var specErr *spec.Error
	if t.plan == nil || !errors.As(err, &specErr) {
		return nil, err
	}
	for _, p := range specErr.Problems {
		if abs, _ := filepath.Abs(p.File); abs != t.pipe.file {
			return nil, err
		}
	}
	return t.plan, nil
}

// planKey names what a session's plan is made from: phases.yaml's bytes,
// the spec's path and its frontmatter (as the plan's digest does). A
// change of the spec's body, what a human edits most, leaves it, and the
// plan is not parsed again: a resume costs no parse of a long pipeline.
// "" when a file cannot be read.
func planKey(file, specPath string) string {
	h := sha256.New()
	content, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	fmt.Fprintf(h, "%d\n%s\n%s\n", len(content), content, specPath)
	if specPath != "" {
		content, err := os.ReadFile(specPath)
		if err != nil {
			return ""
		}
		h.Write(spec.FrontmatterBlock(content))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// specSeen is what t's session knows of its spec as it is now, read
// from the session once (the session's files and the spec, which a
// resume reads again, were read twice for each change).
type specSeen struct {
	// ownWrite: the spec is as t's session last wrote it
	// (session.SpecWrittenHashFile): it moved its status, no human
	// changed it.
	ownWrite bool
	// atPause: the spec is as it was at t's pause (session.SpecHashFile):
	// a save that changed nothing, or a change a resume took in.
	atPause bool
}

// specSeen reads what t's session knows of its spec. A session on a
// backend (the fleet) has no store here, and never writes its spec; it
// is asked on the backend (see unchanged).
func (w *watcher) specSeen(t *tracked) specSeen {
	if t.pipe.st == nil {
		return specSeen{}
	}
	x, err := t.pipe.st.ReadSession(t.id)
	if err != nil {
		return specSeen{}
	}
	written, _ := x.ReadFile(session.SpecWrittenHashFile)
	kept, _ := x.ReadFile(session.SpecHashFile)
	x.Close()
	now, err := os.ReadFile(t.spec)
	if err != nil {
		return specSeen{}
	}
	hash := session.ContentHash(now)
	return specSeen{
		ownWrite: written != nil && strings.TrimSpace(string(written)) == hash,
		atPause:  kept != nil && strings.TrimSpace(string(kept)) == hash,
	}
}

// unchanged reports whether t's spec is as it was at its pause.
func (s specSeen) unchanged(w *watcher, t *tracked) bool {
	if w.o.Backend != nil {
		plan, err := w.planFor(t)
		return err == nil && !w.changedOnBackend(t, plan)
	}
	return s.atPause
}

// replan sends a session this watcher runs its reloaded plan: phases.yaml
// or its spec's frontmatter changed; it applies from the next step.
func (w *watcher) replan(t *tracked, file string) {
	plan, err := w.planFor(t)
	if err != nil {
		t.invalid = true
		w.report(Event{Event: EventInvalid, File: rel(file), Session: t.id, Reason: withConsequence(err, "the session keeps the plan it had")})
		return
	}
	w.validAgain(t, file)
	if plan.Digest == t.run.digest {
		w.report(Event{Event: EventSkipped, File: rel(file), Session: t.id, Status: string(engine.StatusRunning),
			Reason: "running; its plan is unchanged"})
		return
	}
	t.run.digest = plan.Digest
	select {
	case <-t.run.plans: // a newer plan replaces one not taken yet
	default:
	}
	t.run.plans <- plan
	w.report(Event{Event: EventSkipped, File: rel(file), Session: t.id, Status: string(engine.StatusRunning),
		Reason: "running; the new plan applies from its next step"})
}

// validAgain says that t's plan loads again, after an invalid one.
func (w *watcher) validAgain(t *tracked, file string) {
	if t.invalid {
		t.invalid = false
		w.report(Event{Event: EventReloaded, File: rel(file), Session: t.id, Reason: "valid again: applied"})
	}
}

// withConsequence is an error followed by what it means for the
// sessions, as an event's reason: on a line of its own after an error of
// several lines (a spec error's caret blocks), after a semicolon
// otherwise.
func withConsequence(err error, then string) string {
	text := strings.TrimRight(err.Error(), "\n")
	if strings.Contains(text, "\n") {
		return text + "\n" + then
	}
	return text + "; " + then
}

// start opens and resumes t, and runs it in the background.
func (w *watcher) start(t *tracked, file, change string) {
	fail := func(err error) {
		w.report(Event{Event: EventSkipped, File: rel(file), Change: change, Session: t.id, Status: string(t.status), Reason: oneLine(err.Error())})
	}
	plan, err := w.planFor(t)
	if err != nil {
		t.invalid = true
		w.report(Event{Event: EventInvalid, File: rel(file), Session: t.id, Reason: withConsequence(err, "the session stays paused")})
		return
	}
	w.validAgain(t, file)
	if w.o.Backend != nil {
		w.startOnBackend(t, plan, file, change)
		return
	}
	var remarks []string
	sess, err := session.Open(w.ctx, t.pipe.st, session.Options{File: t.pipe.file, Plan: plan, ID: t.id,
		Say: func(format string, args ...any) { remarks = append(remarks, fmt.Sprintf(format, args...)) }})
	if err != nil {
		fail(err)
		return
	}
	events, err := sess.Resume(w.clock.Now(), "", "")
	if err != nil {
		sess.Close()
		fail(err)
		return
	}
	t.run = &running{sess: sess, plans: make(chan *spec.Plan, 1), interrupts: make(chan local.Interrupt, 2), digest: plan.Digest}
	w.active++
	reason := t.reason
	t.status, t.reason = engine.StatusRunning, ""
	w.report(Event{Event: EventResumed, File: rel(file), Change: change, Session: t.id, Status: string(t.status), Reason: reason})
	view := local.Discard
	if w.o.View != nil {
		view = w.o.View(t.id, sess.Redactor())
	}
	for _, r := range remarks {
		view.Say("%s", r)
	}
	driver := &local.Driver{View: view, Clock: w.clock, Grace: w.o.Grace, Interrupts: t.run.interrupts, Plans: t.run.plans}
	ctx := w.runs
	go func() {
		state, err := driver.Run(ctx, sess, events...)
		err = errors.Join(err, sess.Close(), view.Close())
		w.done <- finished{t: t, state: state, err: err}
	}()
}

// ended takes in the end of a run and starts the next queued session.
func (w *watcher) ended(f finished) {
	t := f.t
	w.active--
	t.run = nil
	t.status = f.state.Status
	t.reason = ""
	kind, reason := EventFailed, ""
	switch t.status {
	case engine.StatusPaused:
		kind = EventPaused
		if w.stopping {
			w.pausedByStop = append(w.pausedByStop, t.id)
		}
		w.hashGlobbed(t.pipe)
		if f.state.Pause != nil {
			t.reason, reason = f.state.Pause.Reason, f.state.Pause.Reason
			if f.state.Pause.Note != "" {
				reason += ": " + f.state.Pause.Note
			}
			if t.reason == engine.ReasonRateLimit && f.state.Pause.ResumeAfter != nil && !w.stopping {
				t.resumeAfter = *f.state.Pause.ResumeAfter
				wait := t.resumeAfter.Sub(w.clock.Now())
				t.cancelDue = w.clock.AfterFunc(max(wait, 0), func() { w.due <- t })
				reason += fmt.Sprintf(" (resumes at %s)", t.resumeAfter.Local().Format("15:04:05"))
			}
		}
	case engine.StatusCompleted:
		kind = EventCompleted
	case engine.StatusRunning:
		kind = EventStopping // no longer waited for; it runs on its backend
		t.elsewhere = true
	}
	if f.err != nil {
		reason = strings.TrimSpace(reason + " " + oneLine(f.err.Error()))
	}
	w.report(Event{Event: kind, Session: t.id, Status: string(t.status), Reason: oneLine(reason)})
	if w.o.Ended != nil && w.o.Ended(t.id, f.state) {
		w.over = true
		w.queue = nil
	}
	for len(w.queue) > 0 && w.active < w.o.MaxParallel && !w.stopping {
		next := w.queue[0]
		w.queue = w.queue[1:]
		next.queued = false
		w.consider(next, next.queuedFile, next.queuedChange)
	}
	w.setQueued()
	w.show()
}

// show gives Options.Sessions the watched sessions.
func (w *watcher) show() {
	if w.o.Sessions == nil {
		return
	}
	var list []Watched
	for _, t := range w.sorted() {
		list = append(list, Watched{ID: t.id, Spec: rel(t.spec), Status: string(t.status), Reason: t.reason, Queued: t.queued})
	}
	w.o.Sessions(list)
}

// setQueued writes the queue into the watch locks' holder, where pipeline
// sessions reads it.
func (w *watcher) setQueued() {
	for root, l := range w.locks {
		h := store.Holder{PID: os.Getpid(), Started: w.started}
		for _, t := range w.queue {
			if t.pipe.st.Root == root {
				h.Queued = append(h.Queued, t.id)
			}
		}
		if err := l.SetHolder(h); err != nil {
			w.report(Event{Event: EventError, Reason: fmt.Sprintf("recording the queue in %s: %v", root, err)})
		}
	}
}

func (w *watcher) report(e Event) {
	e.Time = w.clock.Now()
	w.o.Report(e)
}

// rel shows path relative to the working folder when it is below it.
func rel(path string) string {
	if path == "" {
		return ""
	}
	if wd, err := os.Getwd(); err == nil {
		if r, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(r, "..") {
			return r
		}
	}
	return path
}

func under(path, dir string) bool {
	return strings.HasPrefix(path, dir+string(filepath.Separator))
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
