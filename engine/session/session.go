// Package session is the session service: the one lifecycle of a session
// that every driver (the local loop, watch, CI, a fleet) goes through. Open
// takes the lock of a pipeline and spec, creates or loads the session
// (snapshot plus replay), detects a runner that died, stops what such a
// runner left running, and owns the recorder, redaction and pause requests.
// Find gives read-only access, for the commands that only look.
package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/redact"
	"github.com/pipeline-dev/pipeline/steps"
	"github.com/pipeline-dev/pipeline/triggers"
)

// RefusedError is a session operation refused as asked: "not now, not like
// this" (a run already live, phases changed, nothing to resume). Nothing
// ran and nothing was written.
type RefusedError struct {
	Message string
	Err     error // what caused it, if anything
}

func (e *RefusedError) Error() string { return e.Message }
func (e *RefusedError) Unwrap() error { return e.Err }

// storeRefused is a store that cannot be used as it is (full, not
// writable, a link where a file should be): nothing ran.
func storeRefused(st *store.Store, err error) error {
	var r *RefusedError
	if errors.As(err, &r) {
		return err
	}
	return &RefusedError{Err: err, Message: fmt.Sprintf(
		"%v\nthe session store %s cannot be used as it is: make room, fix it, or keep sessions elsewhere with --state-dir", err, st.Root)}
}

func refused(format string, args ...any) error {
	return &RefusedError{Message: fmt.Sprintf(format, args...)}
}

// pauseRequestFile holds the notes of pipeline pause for the runner.
const pauseRequestFile = "pause-request.txt"

// stepProcessFile held the process group of the step running, in the
// session's folder, for builds before the lock's holder kept it
// (store.Holder.Steps): a session such a build left is still swept by it.
const stepProcessFile = "step-process"

// Create says when Open makes a new session.
type Create int

// When Open makes a new session.
const (
	// Never: open an existing session, or fail.
	Never Create = iota
	// IfNone: the newest session of the pipeline and spec when it has
	// one of the statuses, or else a new one (pipeline run): an older
	// session is never taken over a newer one that failed or completed.
	IfNone
	// Always: a new session (pipeline run --new).
	Always
)

// Options says which session Open opens.
type Options struct {
	// File is the pipeline's phases.yaml and Plan its plan; with ID set
	// and Plan nil, the plan is loaded from the files the session was
	// started with.
	File string
	Plan *spec.Plan
	// ID names the session; empty: the latest of the pipeline and spec
	// whose status is one of Statuses (any status when none is given).
	ID string
	// Name, with no ID, is the session's name (run --name): the session
	// of that name when there is one, of this pipeline and spec and not
	// completed; else a new session, which gets the name.
	Name     string
	Statuses []engine.Status
	Create   Create
	// Say reports what Open did on the way (what a dead runner's step
	// left running, stopped); nil says nothing.
	Say func(format string, args ...any)
	// memoryLocked: the opener holds the session's memory lock
	// (Ref.Remember), which Close then does not take.
	memoryLocked bool
}

// Session is a session opened for a run or an amendment: its lock is held
// until Close.
type Session struct {
	Store *store.Store
	X     *store.Session
	Plan  *spec.Plan
	Key   string
	// Created: Open made this session. Crashed: it was running when its
	// runner died (killed, crashed, the machine rebooted).
	Created bool
	Crashed bool

	lock *store.Lock
	// holder is what the lock's file says of its holder (this process),
	// written under holderMu (the step's observer writes it too).
	holderMu sync.Mutex
	holder   store.Holder
	// stepRunning: a step's process group is recorded (StepProcess).
	stepRunning atomic.Bool
	// memoryLocked: see Options.memoryLocked.
	memoryLocked bool
	state        engine.State
	// redactor is swapped by SetPlan while steps read it.
	redactor atomic.Pointer[redact.Redactor]
	recorder *Recorder
	git      *Git
	// specWrites counts the writes of the spec's status (followSpec):
	// the session's own writes to the work tree (WorkTreeWrites).
	specWrites atomic.Int64
	closed     bool
	// broken is the error that stopped the recording.
	broken error
	// live is what SetLive last wrote (live.go); liveKept: a live file
	// may be in the session's folder. A folder Open made holds none until
	// SetLive writes one (no step's end removes a file never made); one
	// opened again may hold a dead runner's.
	liveMu   sync.Mutex
	live     Live
	liveKept bool
	// say reports what the session did beyond its events (Options.Say).
	say func(format string, args ...any)
	// listed is what the index said of the key's sessions when Open
	// looked for one to continue (Listed).
	listed []store.Brief
	looked bool
	// forceSpec completes the spec whatever its checklist says
	// (pipeline complete --force).
	forceSpec bool
}

// Open takes the lock of the pipeline and spec, then opens the session
// Options name, creating it as Options.Create says. A session that was
// running is crashed: no process held its lock.
func Open(ctx context.Context, st *store.Store, o Options) (*Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	say := o.Say
	if say == nil {
		say = func(string, ...any) {}
	}
	plan, key, id := o.Plan, "", ""
	named := false
	if o.Name != "" && o.ID == "" {
		if err := store.CheckName(o.Name); err != nil {
			return nil, refused("%v", err)
		}
		if holder, ok := st.Named(o.Name); ok && o.Create != Always {
			if _, err := st.Find(holder); err == nil {
				o.ID, named = holder, true
			}
		}
		if !named {
			o.Create = Always
		}
	}
	if o.Create != Never {
		// A session about to run: its prompts need the project's memory.
		if err := checkProjectMemory(st); err != nil {
			return nil, err
		}
	}
	if o.ID != "" {
		if err := CheckRef(o.ID); err != nil {
			return nil, err
		}
		// The session is found before its lock is taken (the lock is its
		// key's) and opened for writing only under it.
		meta, err := st.Find(o.ID)
		if err != nil {
			return nil, refused("%v", err)
		}
		key, id = meta.Key, meta.ID
		if named && plan != nil && KeyOf(st, o.File, plan) != key {
			return nil, refused("the name %s is session %s's, of %s: name this run otherwise, or run that pipeline", o.Name, id, meta.File)
		}
		if plan == nil {
			if plan, err = spec.LoadCached(meta.File, meta.Spec, spec.CacheDir()); err != nil {
				return nil, err
			}
		}
	} else {
		key = KeyOf(st, o.File, plan)
	}
	git := startGitFor(st, o.File)
	now := time.Now()
	lock, err := st.Lock(key, store.Holder{PID: os.Getpid(), Started: now})
	var locked *store.LockedError
	if errors.As(err, &locked) {
		git.wait("")
		return nil, refused("%v", err)
	}
	if err != nil {
		git.wait("")
		return nil, storeRefused(st, err)
	}
	s := &Session{Store: st, Plan: plan, Key: key, lock: lock, memoryLocked: o.memoryLocked, say: say}
	var x *store.Session
	fail := func(err error) (*Session, error) {
		git.wait("")
		if x != nil {
			x.Close()
		}
		lock.Release()
		return nil, err
	}
	if id != "" {
		if x, err = st.Session(id); err != nil {
			if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrRemoved) {
				return fail(&RefusedError{Message: err.Error(), Err: err})
			}
			var ambiguous *store.AmbiguousError
			if errors.As(err, &ambiguous) {
				return fail(&RefusedError{Message: err.Error(), Err: err})
			}
			return fail(storeRefused(st, err))
		}
	} else if o.Create != Always {
		// Looked up under the lock: no other runner can start or end a
		// session of this key meanwhile.
		if x, s.state, s.listed, err = latestOpen(st, plan, key, o.Statuses, o.Create == IfNone, say); err != nil {
			return fail(err)
		}
		s.looked = true
		if x == nil && o.Create == Never {
			what := "no session"
			if len(o.Statuses) > 0 {
				what = "no " + statusWords(o.Statuses) + " session"
			}
			return fail(refused("%s of %s in %s; name one (pipeline sessions lists them)", what, o.File, st.Root))
		}
	}
	switch {
	case x == nil:
		if x, err = st.Create(store.Meta{ID: NewSessionID(now), Pipeline: plan.Name.Value, File: o.File,
			Spec: plan.Spec, Key: key, Created: now, Name: o.Name}); err != nil {
			var taken *store.NameTakenError
			if errors.As(err, &taken) {
				return fail(refused("%v", err))
			}
			return fail(storeRefused(st, err))
		}
		s.Created = true
	case id != "":
		// A replay runs with its model and agent on every resume.
		plan = planForSession(plan, x)
		s.Plan = plan
		if s.state, err = LoadState(plan, x); err != nil {
			return fail(refused("%v", err))
		}
		if named && s.state.Status == engine.StatusCompleted {
			return fail(refused("the name %s is session %s's, which completed: name this run otherwise", o.Name, id))
		}
	default:
		if replayPlan := planForSession(plan, x); replayPlan != plan {
			plan, s.Plan = replayPlan, replayPlan
			if s.state, err = LoadState(plan, x); err != nil {
				return fail(refused("%v", err))
			}
		}
	}
	// A fleet session's copy keeps no state of its own (its workflow
	// does): it is never crashed, or each activity of a worker would scan
	// every process of the machine for the session's mark as it opens the
	// copy. What a lost worker's step left running is still swept: the
	// step group its lock's holder records says so.
	if !s.Created && x.Meta.OnFleet() == nil {
		s.Crashed = s.state.Status == engine.StatusRunning || s.state.Status == ""
	}
	s.X, s.liveKept = x, !s.Created
	if err := s.takeLock(st, now, say); err != nil {
		return fail(storeRefused(st, err))
	}
	s.redactor.Store(NewRedactor(plan))
	s.recorder = NewRecorder(x, plan, func(text string) string { return s.Redactor().String(text) })
	s.git = git.wait(s.Dir())
	if s.Created {
		if err := s.saveSpecAtStart(); err != nil {
			return fail(storeRefused(st, err))
		}
	}
	// What a human asked of the working set while the last runner ran,
	// and it did not take before it ended (or died).
	if !s.Created {
		if err := s.TakeMemoryRequests(say); err != nil {
			return fail(storeRefused(st, err))
		}
	}
	return s, nil
}

// takeLock names the session in the lock's holder, and sweeps what the
// last holders left. The step groups the last holder left stay in the
// record until they are swept: a kill -9 meanwhile hands them on to the
// next holder.
func (s *Session) takeLock(st *store.Store, now time.Time, say func(string, ...any)) error {
	previous := s.lock.Previous()
	s.holder = store.Holder{PID: os.Getpid(), Session: s.X.Meta.ID, Started: now, Steps: previous.Steps}
	if err := s.lock.SetHolder(s.holder); err != nil {
		return err
	}
	if err := s.sweep(st, previous, say); err != nil {
		return err
	}
	if len(previous.Steps) == 0 {
		return nil
	}
	s.holder.Steps = nil
	return s.lock.SetHolder(s.holder)
}

// sweep stops what the steps of the lock's last holders left running,
// now that the lock, which proves them dead, is ours: the process groups
// its record names, and what carries the mark of their sessions (the
// session opened, when its runner died while it ran; the last holder's,
// when it is another and did not end it cleanly; those whose groups the
// last holder handed on, for a holder killed before it named its
// session). A folder this process has just made holds no pause request,
// no step process and no memory request of an earlier runner.
func (s *Session) sweep(st *store.Store, previous store.Holder, say func(string, ...any)) error {
	sweepGroups(previous.Steps, say)
	x := s.X
	if !s.Created {
		if err := x.RemoveFile(pauseRequestFile); err != nil {
			return err
		}
		if err := sweepOrphans(x, hasGroup(previous.Steps, x.Meta.ID), s.Crashed, say); err != nil {
			return err
		}
	}
	var errs []error
	for _, id := range othersToSweep(previous, x.Meta.ID) {
		prev, err := st.Session(id)
		if err != nil {
			continue
		}
		err = sweepOrphans(prev, hasGroup(previous.Steps, id), lastStatus(s.Plan, prev) == engine.StatusRunning, say)
		errs = append(errs, err, prev.Close())
	}
	return errors.Join(errs...)
}

// othersToSweep are the sessions other than opened whose steps may have
// left something running: the last holder's, unless it ended it cleanly
// (then it is not read again: a third of the open of a short run's), and
// those of the step groups it handed on.
func othersToSweep(previous store.Holder, opened string) []string {
	var ids []string
	add := func(id string) {
		if id != "" && id != opened && CheckID(id) == nil && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if !previous.Ended {
		add(previous.Session)
	}
	for _, g := range previous.Steps {
		add(g.Session)
	}
	return ids
}

// earlyGit is GitFor of a pipeline's folder, asked while the session
// opens (its lock, its folder): of a run of one short step, a tenth of
// what the run spends beyond the step, and it needs nothing of the
// session but the folder, known from the file before.
//
// It is asked on a goroutine, but that goroutine often gets no thread of
// its own before the session's opening is done (the run queue's next
// goroutine is the last one started, and the new session's syncs start
// after it): then wait, rather than queue behind them, asks itself, and
// the goroutine, when it runs, finds the answer there.
type earlyGit struct {
	dir  string
	find func() *Git // GitFor(dir), once; nil when none was started, or once taken
	git  *Git
}

// startGitFor starts GitFor of the folder of the pipeline file (none
// without one: a session named by its id alone).
func startGitFor(st *store.Store, file string) *earlyGit {
	if file == "" {
		return &earlyGit{}
	}
	dir := filepath.Dir(st.Abs(st.Rel(file)))
	e := &earlyGit{dir: dir, find: sync.OnceValue(func() *Git { return GitFor(dir) })}
	go e.find()
	return e
}

// wait is GitFor(dir): the one started, when it was of dir. An Open that
// fails waits too (dir ""), so that no git it started outlives it.
func (e *earlyGit) wait(dir string) *Git {
	if e.find != nil {
		e.git, e.find = e.find(), nil
	}
	if dir != "" && dir == e.dir {
		return e.git
	}
	if e.git != nil {
		// GitFor asks git for its paths at once, in a goroutine of its
		// own: a Git not used (or given up by an Open that failed after)
		// is waited for to its end.
		e.git.paths()
	}
	if dir == "" {
		return nil
	}
	return GitFor(dir)
}

// latestOpen opens the newest session of key the index lists with one of
// statuses, with its state; nil when there is none. The index can be
// behind the session's files (a runner killed between an event and its
// snapshot): a session whose files say otherwise gets its listing
// brought up to date and is passed over. With newest, only the newest
// session of key is taken, and an older one with one of the statuses
// passed over is said.
func latestOpen(st *store.Store, plan *spec.Plan, key string, statuses []engine.Status, newest bool, say func(string, ...any)) (*store.Session, engine.State, []store.Brief, error) {
	list, err := sessionsWith(st, key, statuses)
	if err != nil {
		return nil, engine.State{}, nil, storeRefused(st, err)
	}
	var newestSeen *store.Brief
	for i := range list {
		sum := list[i]
		if newest && newestSeen != nil {
			// The newest stays as it is: say what is passed over.
			if len(statuses) == 0 || slices.Contains(statuses, engine.Status(sum.Status)) {
				say("session %s is %s, but the newest session of this pipeline and spec is %s (%s): it is not resumed (pipeline resume %s continues it)",
					sum.ID, sum.Status, newestSeen.ID, newestSeen.Status, sum.ID)
				break
			}
			continue
		}
		if newest {
			newestSeen = &list[i]
		}
		if len(statuses) > 0 && !slices.Contains(statuses, engine.Status(sum.Status)) {
			continue
		}
		x, err := st.Session(sum.ID)
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrRemoved) {
			continue // removed since the index was read
		}
		if err != nil {
			return nil, engine.State{}, nil, refused("%v", err)
		}
		state, err := LoadState(plan, x)
		if err != nil {
			x.Close()
			return nil, engine.State{}, nil, refused("%v", err)
		}
		now := engine.Status(state.Status)
		if len(statuses) == 0 || slices.Contains(statuses, now) || now == "" {
			return x, state, list, nil
		}
		// Listed as one of statuses, it is now something else: the
		// listing catches up, and the search goes on.
		err = WriteSnapshot(plan, x, state, NewRedactor(plan).String)
		x.Close()
		if err != nil {
			return nil, engine.State{}, nil, storeRefused(st, err)
		}
		// The list is given on (Listed): it says what the index now says.
		list[i].Status = string(now)
	}
	return nil, engine.State{}, list, nil
}

// sweepOrphans stops what the steps of a runner killed while it ran x
// left behind: their leaders died with the runner, their children may
// not have.
//
// The process group recorded while a step ran (in the lock's holder,
// which sweepGroups read; in a step-process file of x, by an older build)
// finds what stayed in the group; the session's mark in the environment
// of every step's process finds what left the group (a setsid daemon) and
// what was started before the group could be recorded. The mark is looked
// for only when the runner died while the session ran, or a group was
// recorded: it scans every process.
func sweepOrphans(x *store.Session, recorded, crashed bool, say func(string, ...any)) error {
	content, _ := x.ReadFile(stepProcessFile)
	if content == nil && !recorded && !crashed {
		return nil
	}
	if pgid, ok := stepGroup(content, thisMachine()); ok && steps.KillOrphans(pgid) {
		say("stopped what the last runner's step left running (process group %d)", pgid)
	}
	if left := steps.KillMarked(StepMark(x.Meta.ID)); len(left) > 0 {
		pids := make([]string, len(left))
		for i, pid := range left {
			pids[i] = fmt.Sprint(pid)
		}
		say("stopped %d process(es) the last runner's steps left running outside their process group: pid %s", len(left), strings.Join(pids, ", "))
	}
	if content == nil {
		return nil
	}
	return x.RemoveFile(stepProcessFile)
}

// sweepGroups stops what stayed in the process groups of steps a dead
// holder recorded, those of this machine and boot. The boot is read only
// when there is a group to sweep: a run that opens after a clean end
// reads it when its step starts (StepProcess), while the step's program
// loads, not on the way to it.
func sweepGroups(groups []store.StepGroup, say func(string, ...any)) {
	if len(groups) == 0 {
		return
	}
	machine := thisMachine()
	for _, g := range groups {
		if g.Boot == machine && steps.KillOrphans(g.Group) {
			say("stopped what the last runner's step left running (process group %d)", g.Group)
		}
	}
}

// thisMachine is machineID, read once: a process lives in one boot.
var thisMachine = sync.OnceValue(machineID)

// hasGroup reports whether groups holds one of session id's steps.
func hasGroup(groups []store.StepGroup, id string) bool {
	return slices.ContainsFunc(groups, func(g store.StepGroup) bool { return g.Session == id })
}

// stepGroup reads the step-process file: the process group of the step
// that ran, and the machine (and boot) it ran on. A group recorded on
// another machine, or before a reboot (a store restored from a CI cache
// or an export, a copied project), names nothing here: its number may be
// someone else's group now. A file without a machine (written by an
// older pipeline) is taken as this machine's.
func stepGroup(content []byte, machine string) (int, bool) {
	fields := strings.Fields(string(content))
	if len(fields) == 0 || len(fields) > 2 {
		return 0, false
	}
	if len(fields) == 2 && fields[1] != machine {
		return 0, false
	}
	pgid, err := strconv.Atoi(fields[0])
	return pgid, err == nil
}

// StepMark is put in the environment of every process of the session's
// steps (PIPELINE_SESSION=id): what a dead runner's steps left running is
// found by it.
func StepMark(id string) string { return "PIPELINE_SESSION=" + id }

// ID is the session's id.
func (s *Session) ID() string { return s.X.Meta.ID }

// Listed is what the index listed of the session's key (its pipeline and
// spec) as Open looked, under the key's lock, for a session to continue:
// the newest first, those not completed and the two newest whatever their
// status (Store.OpenOf); looked is false when Open did not look (a
// session named, or made whatever there was). The lock is held until Close: no other runner
// can start or end a session of the key meanwhile, so the list stays
// true of the sessions before this one (one may be removed meanwhile:
// pipeline rm, clean).
func (s *Session) Listed() (list []store.Brief, looked bool) { return s.listed, s.looked }

// Dir is where the session's steps run: the folder of its phases.yaml.
func (s *Session) Dir() string { return filepath.Dir(s.X.Meta.File) }

// State is the session's state as of its last recorded event.
func (s *Session) State() engine.State { return s.state }

// Start is the first event of a new session.
func (s *Session) Start(now time.Time) engine.Event {
	return engine.Started{At: now, Plan: s.Plan.Digest}
}

// StartAt is the first event of a new session that starts at phase (run
// --from), or runs that phase alone (only: run --only).
func (s *Session) StartAt(now time.Time, phase string, only bool) (engine.Event, error) {
	if err := CheckPhase(s.Plan, phase); err != nil {
		return nil, err
	}
	return engine.Started{At: now, Plan: s.Plan.Digest, From: phase, Only: only}, nil
}

// CheckPhase refuses a phase name that is not one of the plan's (an
// empty name is none, and fine).
func CheckPhase(plan *spec.Plan, phase string) error {
	if phase != "" && !slices.ContainsFunc(plan.Phases, func(p spec.PhasePlan) bool { return p.Name == phase }) {
		return refused("%q is not a phase of %s (%s)%s", phase, plan.File, PhaseNames(plan), PhaseHint(plan, phase))
	}
	return nil
}

// Resume returns the events that continue the session: a paused one at
// the step that paused, a failed one at the step that failed (either at
// phase, when given), one whose runner died at the step it was running. Notes are for the agent's resume context.
func (s *Session) Resume(now time.Time, notes, phase string) ([]engine.Event, error) {
	if phase != "" && !slices.ContainsFunc(s.Plan.Phases, func(p spec.PhasePlan) bool { return p.Name == phase }) {
		return nil, refused("--phase %q is not a phase of %s (%s)%s", phase, s.X.Meta.File, PhaseNames(s.Plan), PhaseHint(s.Plan, phase))
	}
	if err := checkProjectMemory(s.Store); err != nil {
		return nil, err
	}
	switch {
	case s.Created && s.state.Status == "":
		return nil, refused("session %s has not started: there is nothing to resume", s.ID())
	case s.state.Status == engine.StatusPaused, s.state.Status == engine.StatusFailed:
		// A failed session retries the step that failed (or starts at
		// phase): a failure late in a long run does not cost the phases
		// before it.
		resumed := engine.Resumed{At: now, Notes: notes, Phase: phase, Plan: s.Plan.Digest}
		resumed.Changed, resumed.Conflicts, resumed.Head, resumed.Tree = s.changedWhilePaused()
		return []engine.Event{resumed}, nil
	case s.Crashed:
		if phase != "" {
			return nil, refused("--phase needs a paused session; session %s was cut short while running: resume it first", s.ID())
		}
		var events []engine.Event
		if notes != "" {
			events = append(events, engine.Noted{At: now, Notes: notes})
		}
		return append(events, s.Recover(now)), nil
	default:
		return nil, refused("session %s is %s: there is nothing to resume (pipeline run --new starts another)", s.ID(), s.state.Status)
	}
}

// changedWhilePaused returns the files the work tree changed in since
// the session's pause checkpoint, those of them left with conflict
// markers, and the snapshot (HEAD and tree) it compared.
func (s *Session) changedWhilePaused() (changed, conflicts []string, head, tree string) {
	if s.git == nil || s.state.PauseCheckpoint == "" || s.state.Status != engine.StatusPaused {
		return nil, nil, "", ""
	}
	changed, head, tree, err := s.git.ChangedSince(s.state.PauseCheckpoint)
	if err != nil {
		return nil, nil, "", ""
	}
	return changed, s.git.Conflicted(changed), head, tree
}

// Recover is the event that continues a session whose runner died: a
// session cut short before its first event starts.
func (s *Session) Recover(now time.Time) engine.Event {
	if s.state.Status == "" {
		return s.Start(now)
	}
	return engine.Recovered{At: now, Plan: s.Plan.Digest}
}

// Note adds a human's notes to a session that is paused (or whose runner
// died); they reach the agent with the next resume context.
func (s *Session) Note(now time.Time, notes string) error {
	if s.state.Status != engine.StatusPaused && !s.Crashed {
		return refused("session %s is %s: there is nothing to pause", s.ID(), s.state.Status)
	}
	_, err := s.Apply(engine.Noted{At: now, Notes: notes})
	return err
}

// Complete marks the session done by hand. Its spec's status, with
// unchecked checklist items, stays in-progress (see CompleteForced).
func (s *Session) Complete(now time.Time) error {
	_, err := s.Apply(engine.Completed{At: now})
	return err
}

// CompleteForced marks the session done by hand and its spec complete
// whatever its checklist says (pipeline complete --force).
func (s *Session) CompleteForced(now time.Time) error {
	s.forceSpec = true
	return s.Complete(now)
}

// Apply decides and records events one after another, and returns the
// actions of the last.
func (s *Session) Apply(events ...engine.Event) ([]engine.Action, error) {
	var actions []engine.Action
	for _, ev := range events {
		var next engine.State
		next, actions = engine.Decide(s.Plan, s.state, ev)
		if err := s.Record(ev, next); err != nil {
			return nil, err
		}
	}
	return actions, nil
}

// Record appends an event and the state it led to. If it cannot (a full
// disk, an I/O error, the session's folder deleted), the session stops
// recording: State shows it paused, reason engine.ReasonStoreError, as
// its files leave it (a resume, once the store is fixed, continues from
// there), and every later Record fails with the same error.
func (s *Session) Record(ev engine.Event, next engine.State) error {
	if s.broken != nil {
		return s.broken
	}
	before, status, was := s.X.Seq(), s.state.Status, s.state
	err := s.recorder.Record(ev, next)
	if s.X.Seq() != before {
		s.state = next
		if o := observing(); o != nil {
			o.Recorded(s, ev, was, next)
		}
	}
	if err != nil {
		s.broken = err
		s.state = storeFailed(s.state, err, time.Now())
		return err
	}
	return s.followSpec(ev, status)
}

// storeFailed is how a session whose record failed shows: paused, reason
// store-error, with the system's words for what failed.
func storeFailed(st engine.State, err error, now time.Time) engine.State {
	note := err.Error()
	var errno syscall.Errno
	switch {
	case errors.Is(err, store.ErrRemoved):
		note = store.ErrRemoved.Error()
	case errors.As(err, &errno):
		note = errno.Error()
	}
	st.Status, st.StepRunning, st.Waiting, st.Stopping = engine.StatusPaused, false, false, nil
	st.Pause = &engine.Firing{Reason: engine.ReasonStoreError, Note: note, At: now}
	return st
}

// StoreFailed reports whether the session could not be recorded (the
// error it met), after which nothing more is.
func (s *Session) StoreFailed() error { return s.broken }

// Transcript gives a step's transcript, made at its first byte.
func (s *Session) Transcript(phase string, attempt int, step string) (*store.Transcript, error) {
	return s.X.CreateTranscript(phase, attempt, step)
}

// RecordPrompt keeps the prompt sent to an agent step (the resume context
// included), redacted, beside the step's transcript; a second prompt of
// the same attempt (the step ran again in a fresh native session) follows
// the first after a separating line.
func (s *Session) RecordPrompt(phase string, attempt int, step, prompt string) error {
	f, err := s.X.CreatePrompt(phase, attempt, step)
	if err != nil {
		return err
	}
	text := s.Redactor().String(prompt)
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	if info, err := f.Stat(); err == nil && info.Size() > 0 {
		text = PromptSeparator + text
	}
	_, err = f.WriteString(text)
	return errors.Join(err, f.Close())
}

// PromptSeparator comes between two prompts sent to the same attempt of a
// step.
const PromptSeparator = "\n----- the next prompt sent to this attempt -----\n"

// ResumeContext is the text put before the prompt of the first agent step
// after a resume, a recovery or a restart.
// The warning, when set, says the plan's template failed and the built-in
// one was used.
func (s *Session) ResumeContext(st engine.State, a engine.StartStep) (text, warning string) {
	return ResumeContextWithWarning(s.Plan, s.X, s.Redactor().String)(st, a)
}

// Redactor hides the secrets of this process's environment and of the
// plan's agents in everything the session writes or shows.
func (s *Session) Redactor() *redact.Redactor { return s.redactor.Load() }

// SetPlan switches the session to plan from its next decision on:
// phases.yaml or the spec's frontmatter changed while it ran. A plan whose
// phases are not the session's (renamed, added, removed, reordered), or
// whose phase has lost the step the session is at, is refused: the state
// indexes them.
func (s *Session) SetPlan(now time.Time, plan *spec.Plan) error {
	if err := CheckPlan(plan, s.state, s.ID()); err != nil {
		return refused("%v", err)
	}
	next, _ := engine.Decide(plan, s.state, engine.PlanChanged{At: now, Plan: plan.Digest})
	// The plan's secrets are hidden before anything more is written.
	s.redactor.Store(NewRedactor(plan))
	s.Plan, s.recorder.Plan = plan, plan
	return s.Record(engine.PlanChanged{At: now, Plan: plan.Digest}, next)
}

// Git reads the git work tree of the session's folder: HEAD, snapshots,
// the files changed since one; nil when the folder is not in a git work
// tree.
func (s *Session) Git() *Git { return s.git }

// WorkTreeWrites counts the files the session itself wrote in the work
// tree (its spec's LeanSpec status): a snapshot of the work tree taken
// before the count moved is not the work tree any more.
func (s *Session) WorkTreeWrites() int64 { return s.specWrites.Load() }

// StepProcess keeps the process group of the running step (0: none) in
// the lock's holder, so that what a killed runner left behind can be
// found and stopped by the next holder of the lock (Open). The holder is
// rewritten in place: no file is made or deleted for it.
func (s *Session) StepProcess(pgid int) {
	// No sync: this matters only after a kill -9, which the kernel's copy
	// survives; after a power cut the group names nothing (another boot).
	s.holderMu.Lock()
	defer s.holderMu.Unlock()
	h := s.holder
	h.Steps = nil
	if pgid != 0 {
		s.stepRunning.Store(true)
		h.Steps = []store.StepGroup{{Session: s.ID(), Group: pgid, Boot: thisMachine()}}
	}
	if s.lock.SetHolder(h) == nil {
		s.holder = h
		if pgid == 0 {
			s.stepRunning.Store(false)
		}
	}
}

// PauseRequest returns the notes of a pending pipeline pause, and whether
// one is pending.
func (s *Session) PauseRequest() (string, bool) {
	content, _ := s.X.ReadFile(pauseRequestFile)
	return string(content), content != nil
}

// Close keeps the spec of a paused session for the next resume's diff,
// writes the last snapshot and releases the lock. A session whose record
// failed writes nothing more: its files stay as they were.
func (s *Session) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if o := observing(); o != nil {
		defer o.Closed(s)
	}
	if s.broken != nil {
		return errors.Join(s.X.Close(), s.lock.Release())
	}
	var errs []error
	if !s.memoryLocked {
		// The memory requests left while the session ran are taken now,
		// and none is left after: a writer waits for this lock, and then
		// finds the session not running (its lock released under this
		// one) and records its change itself.
		if release, err := lockMemory(s.X, false); err == nil {
			defer release()
			if err := s.TakeMemoryRequests(nil); err != nil {
				errs = append(errs, fmt.Errorf("taking the memory changes left for the session: %w", err))
			}
		}
	}
	if s.broken != nil {
		return errors.Join(append(errs, s.X.Close(), s.lock.Release())...)
	}
	if s.state.Status == engine.StatusPaused {
		if err := s.saveSpecAtPause(); err != nil {
			errs = append(errs, fmt.Errorf("keeping the spec for the next resume: %w", err))
		}
	}
	if err := s.recorder.Close(); err != nil {
		errs = append(errs, fmt.Errorf("recording the session: %w", err))
	}
	if len(errs) == 0 && s.state.Status != engine.StatusRunning && s.state.Status != "" && !s.stepRunning.Load() && s.recorder.UpToDate() {
		// Said only when sure; on a doubt the next holder sweeps.
		s.holderMu.Lock()
		ended := s.holder
		ended.Ended = true
		_ = s.lock.SetHolder(ended)
		s.holderMu.Unlock()
	}
	errs = append(errs, s.X.Close(), s.lock.Release())
	return errors.Join(errs...)
}

func (s *Session) saveSpecAtPause() error {
	if s.Plan.Spec == "" {
		return nil
	}
	content, err := os.ReadFile(s.Plan.Spec)
	if err != nil {
		return err
	}
	if err := s.X.WriteFile(SpecAtPauseFile, []byte(s.Redactor().String(string(content)))); err != nil {
		return err
	}
	return s.X.WriteFile(SpecHashFile, []byte(ContentHash(content)))
}

// saveSpecAtStart keeps the spec as the new session starts with it,
// redacted, and the hash of its content: pipeline replay runs a replay
// with the spec as it was then. Not synced: a copy lost to a power cut
// makes a replay use the spec as it is, and say so.
func (s *Session) saveSpecAtStart() error {
	if s.Plan.Spec == "" {
		return nil
	}
	content, err := os.ReadFile(s.Plan.Spec)
	if err != nil {
		// The plan was loaded from it a moment ago; gone since, the
		// session runs as it would have, without a copy to replay.
		return nil
	}
	if err := s.X.WriteFileNoSync(SpecAtStartFile, []byte(s.Redactor().String(string(content)))); err != nil {
		return err
	}
	return s.X.WriteFileNoSync(SpecAtStartHashFile, []byte(ContentHash(content)))
}

// KeyOf names the (pipeline, spec) pair of a plan in a store: one
// session of a key runs at a time. The key is made from their paths
// relative to the store's base: the same in any checkout of the project.
func KeyOf(st *store.Store, file string, plan *spec.Plan) string {
	return st.Key(file, plan.Spec)
}

// Latest returns the newest session of key with one of statuses (any
// status when none is given), or nil.
func Latest(st *store.Store, key string, statuses ...engine.Status) (*store.Summary, error) {
	list, err := sessionsWith(st, key, statuses)
	if err != nil {
		return nil, err
	}
	for _, b := range list {
		if len(statuses) == 0 || slices.Contains(statuses, engine.Status(b.Status)) {
			sum := st.Summary(b)
			return &sum, nil
		}
	}
	return nil, nil
}

// sessionsWith lists the sessions of key, newest first, that a search
// for the newest one, or the newest with one of statuses, needs: the
// newest, and every one with one of statuses. Unless statuses holds
// completed, the older completed sessions are not read (see
// store.OpenOf): a run does not read the whole index.
func sessionsWith(st *store.Store, key string, statuses []engine.Status) ([]store.Brief, error) {
	if slices.Contains(statuses, engine.StatusCompleted) {
		return st.SessionsOf(key)
	}
	return st.OpenOf(key)
}

// NewRedactor hides the secrets of this process's environment and of the
// plan's agent environments, and common key patterns.
func NewRedactor(plan *spec.Plan) *redact.Redactor {
	env := os.Environ()
	for _, phase := range plan.Phases {
		for _, step := range phase.Steps {
			if step.Agent != nil {
				for k, v := range step.Agent.Value.Env {
					env = append(env, k+"="+v)
				}
			}
		}
	}
	return redact.New(env)
}

// PhaseNames lists the plan's phases, for messages.
// PhaseHint is what a message that refuses phase (not a phase of plan)
// adds: "; did you mean "review"?" for the phase it is closest to, or "".
// Every command that takes a phase (--from, --only, --phase, rewind --to,
// fork --at, logs --phase) says it.
func PhaseHint(plan *spec.Plan, phase string) string {
	names := make([]string, len(plan.Phases))
	for i, p := range plan.Phases {
		names[i] = p.Name
	}
	if near := triggers.Closest(phase, names); near != "" {
		return fmt.Sprintf("; did you mean %q?", near)
	}
	for _, n := range names {
		if strings.EqualFold(n, phase) {
			return fmt.Sprintf("; did you mean %q?", n)
		}
	}
	return ""
}

func PhaseNames(plan *spec.Plan) string {
	names := make([]string, len(plan.Phases))
	for i, p := range plan.Phases {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}
