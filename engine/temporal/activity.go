package temporal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/clock"
	"github.com/pipeline-dev/pipeline/steps"
)

// Activity names, as the workflow schedules them.
const (
	ActivityRunStep = "RunStep"
	ActivityCompact = "Compact"
)

// StepInput is what the RunStep activity is given: the session, its plan,
// the state that decided the step, and the StartStep.
type StepInput struct {
	SessionID string           `json:"session_id"`
	Plan      PlanSource       `json:"plan"`
	State     engine.State     `json:"state"`
	Start     engine.StartStep `json:"start"`
}

// CompactInput is what the Compact activity is given.
type CompactInput struct {
	SessionID string         `json:"session_id"`
	Plan      PlanSource     `json:"plan"`
	State     engine.State   `json:"state"`
	Compact   engine.Compact `json:"compact"`
}

// StepOutput is what a step left, and what it said on the way that the
// workflow records before its end: the working-set markers it printed
// (Markers, of phase Phase) and the live pause_when trigger that stopped
// it (Fired). They come back with the result rather than as signals: the
// workflow sees them in the order they happened, with the step's end, in
// one history event. A worker lost mid-step loses none it had
// heartbeated: each heartbeat carries the markers so far (Progress), and
// the workflow reads the last one from the heartbeat timeout.
type StepOutput struct {
	Result     engine.StepResult   `json:"result"`
	Phase      string              `json:"phase,omitempty"`
	Markers    []engine.MemoryNote `json:"markers,omitempty"`
	Fired      *engine.Firing      `json:"fired,omitempty"`
	Transcript string              `json:"transcript,omitempty"`
	Worker     string              `json:"worker,omitempty"`
	// Tail is the step and the end of its output that its heartbeats may
	// not have carried to the server, for FollowOutput.
	Tail *OutputTail `json:"tail,omitempty"`
}

// CompactOutput is a compaction turn's end, and the markers it printed.
type CompactOutput struct {
	Compacted engine.Compacted    `json:"compacted"`
	Phase     string              `json:"phase,omitempty"`
	Markers   []engine.MemoryNote `json:"markers,omitempty"`
	Tail      *OutputTail         `json:"tail,omitempty"`
}

// Progress is a step's heartbeat: how long it has run, the markers it
// printed so far, and the end of its output (for FollowOutput).
type Progress struct {
	Elapsed time.Duration       `json:"elapsed"`
	Phase   string              `json:"phase,omitempty"`
	Markers []engine.MemoryNote `json:"markers,omitempty"`
	Tail    *OutputTail         `json:"tail,omitempty"`
}

// Activities runs the steps of sessions on a worker. Register it with
// worker.RegisterActivity(&Activities{...}).
type Activities struct {
	// Fleet is where this worker's sessions run (the server, namespace
	// and task queue it polls): the copies it makes of them say so, and
	// local commands there name the fleet to use.
	Fleet *store.Fleet
	// StateDir is the session store where the worker keeps each
	// session's transcripts and prompts; empty: .pipeline beside the
	// plan's phases.yaml, as a local run keeps it.
	StateDir string
	// Grace is the time between interrupting a step and killing it
	// (5s when 0).
	Grace time.Duration
	// HeartbeatEvery is how often a running step heartbeats (5s when 0);
	// keep it well under the workflow's heartbeat timeout.
	HeartbeatEvery time.Duration
	// HeartbeatThrottle is how often, at most, the worker sends a step's
	// heartbeat, and with it the step's latest output, to the server
	// (DefaultHeartbeatThrottle when 0). It takes effect through
	// WorkerOptions.
	HeartbeatThrottle time.Duration
	// Tick is how often a step's time limits and time-based triggers are
	// checked (the executor's default when 0).
	Tick time.Duration
	// View, when set, is shown the worker's steps; nil: their lines go
	// to the activity's logger.
	View local.View
}

func (a *Activities) grace() time.Duration {
	if a.Grace > 0 {
		return a.Grace
	}
	return 5 * time.Second
}

// heartbeatEvery is how often the activity of ctx heartbeats:
// HeartbeatEvery, or more often when the workflow's heartbeat timeout
// is short (a third of it), so that a worker that is alive is never
// taken for lost and a pause reaches the step soon.
func (a *Activities) heartbeatEvery(ctx context.Context) time.Duration {
	every := 5 * time.Second
	if a.HeartbeatEvery > 0 {
		every = a.HeartbeatEvery
	}
	if timeout := activity.GetInfo(ctx).HeartbeatTimeout; timeout > 0 && timeout/3 < every {
		every = max(timeout/3, 10*time.Millisecond)
	}
	return every
}

// open opens the session on this worker, making it in the worker's
// store the first time a step of it lands here. The workflow holds the
// session's state; the worker's copy holds what the steps wrote.
func (a *Activities) open(ctx context.Context, id string, plan *spec.Plan) (*session.Session, error) {
	dir := a.StateDir
	if dir == "" {
		dir = filepath.Join(filepath.Dir(plan.File), ".pipeline")
	}
	st, err := store.Open(dir)
	if err != nil {
		return nil, err
	}
	if _, err := st.Find(id); errors.Is(err, store.ErrNotFound) {
		x, err := st.Create(store.Meta{ID: id, Pipeline: plan.Name.Value, File: plan.File, Spec: plan.Spec,
			Key: store.FleetKey(id), Created: time.Now(), Fleet: a.Fleet})
		if err != nil {
			return nil, err
		}
		x.Close()
	} else if err != nil {
		return nil, err
	}
	return session.Open(ctx, st, session.Options{ID: id, Plan: plan, Say: activity.GetLogger(ctx).Info})
}

// worker is what a step runs with on this worker.
type worker struct {
	a      *Activities
	sess   *session.Session
	runner *local.StepRunner
	fired  chan engine.TriggerFired
	tail   *tailBuffer
	mu     sync.Mutex
	phase  string
	marks  []engine.MemoryNote
}

func (a *Activities) worker(ctx context.Context, id string, src PlanSource) (*worker, error) {
	plan, err := src.Load()
	if err != nil {
		return nil, err
	}
	sess, err := a.open(ctx, id, plan)
	if err != nil {
		return nil, err
	}
	view := a.View
	if view == nil {
		view = logView{activity.GetLogger(ctx)}
	}
	w := &worker{a: a, sess: sess, fired: make(chan engine.TriggerFired, 1), tail: newTailBuffer()}
	w.runner = &local.StepRunner{Session: sess, Plan: sess.Plan, View: streamView{view, w.tail}, Clock: clock.Real{}, Grace: a.grace(),
		Executor: &steps.Executor{Clock: clock.Real{}, Tick: a.Tick},
		Markers: func(phase string) func(steps.Marker) {
			return func(m steps.Marker) {
				w.mu.Lock()
				defer w.mu.Unlock()
				w.phase = phase
				w.marks = append(w.marks, local.MarkerNote(m))
			}
		},
		Fired: func(ev engine.TriggerFired) {
			select {
			case w.fired <- ev:
			default: // the first firing stops the step; the rest change nothing
			}
		}}
	return w, nil
}

func (w *worker) markers() (string, []engine.MemoryNote) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.phase, append([]engine.MemoryNote(nil), w.marks...)
}

// StepTraced, when set, is told of each step a worker is about to run,
// with the activity's context, before the step's environment is built;
// what it returns is given the step's result. pipeline-temporal sets it
// to telemetry's: the step's span, under the activity's, is its
// TRACEPARENT.
var StepTraced func(ctx context.Context, s *session.Session, start engine.StartStep) (finished func(engine.StepResult))

// RunStep runs one step on this worker: the StartStep the workflow's
// decision asked for, through the same StepRunner as a local run, with
// the phase's pause_when triggers evaluated here, live. A trigger that
// fires stops the step, as Decide would have it (TriggerFired while a
// step runs always stops it); the workflow records the firing with the
// result. Cancelling the activity (pause) stops the step like Ctrl+C:
// its result, Stopped, is returned, not an error. It heartbeats with the
// markers so far.
func (a *Activities) RunStep(ctx context.Context, in StepInput) (StepOutput, error) {
	w, err := a.worker(ctx, in.SessionID, in.Plan)
	if err != nil {
		return StepOutput{}, err
	}
	defer w.sess.Close()
	traced := func(engine.StepResult) {}
	if StepTraced != nil {
		traced = StepTraced(ctx, w.sess, in.Start)
	}
	done := make(chan engine.StepResult, 1)
	current := w.runner.Start(context.WithoutCancel(ctx), in.Start, in.State, func(r engine.StepResult) { done <- r })
	out := StepOutput{Worker: workerName()}
	phase := w.runner.Plan.Phases[in.Start.Phase]
	out.Transcript = filepath.Join(w.sess.X.Dir, "transcripts", phase.Name)
	out.Result = awaitTurn(ctx, a, w, current, done, func(f engine.Firing) { out.Fired = &f })
	traced(out.Result)
	out.Phase, out.Markers = w.markers()
	out.Tail = w.tail.unsent(a.settle(activity.GetInfo(ctx).HeartbeatTimeout))
	return out, nil
}

// Compact runs a compaction turn on this worker (see local.StepRunner's
// Compact).
func (a *Activities) Compact(ctx context.Context, in CompactInput) (CompactOutput, error) {
	w, err := a.worker(ctx, in.SessionID, in.Plan)
	if err != nil {
		return CompactOutput{}, err
	}
	defer w.sess.Close()
	done := make(chan engine.Compacted, 1)
	current := w.runner.Compact(context.WithoutCancel(ctx), in.Compact, in.State, func(ev engine.Compacted) { done <- ev })
	out := CompactOutput{Compacted: awaitTurn(ctx, a, w, current, done, nil)}
	out.Phase, out.Markers = w.markers()
	out.Tail = w.tail.unsent(a.settle(activity.GetInfo(ctx).HeartbeatTimeout))
	return out, nil
}

// awaitTurn waits for the end of the turn current runs on this worker (a
// step or a compaction turn), heartbeating with the markers and the
// output so far, on the ticker and when output comes. The
// activity cancelled (a pause) stops the turn like Ctrl+C; so does the
// worker stopping (SIGINT, SIGTERM: the session then pauses with this
// reason rather than wait for a heartbeat timeout), or a live trigger
// firing. stoppedBy, when set, is told the first firing that stopped it.
func awaitTurn[T any](ctx context.Context, a *Activities, w *worker, current *local.StepRun, done <-chan T, stoppedBy func(engine.Firing)) T {
	hb := &heartbeats{ctx: ctx, w: w, started: time.Now(), settle: a.settle(activity.GetInfo(ctx).HeartbeatTimeout)}
	ticker := time.NewTicker(a.heartbeatEvery(ctx))
	defer ticker.Stop()
	defer hb.stop()
	stop := func() {
		if current != nil {
			current.Stop(false)
		}
	}
	stopped := false
	stopFor := func(f engine.Firing) {
		if stopped || current == nil {
			return
		}
		stopped = true
		if stoppedBy != nil {
			stoppedBy(f)
		}
		stop()
	}
	cancelled, stopping := ctx.Done(), activity.GetWorkerStopChannel(ctx)
	for {
		select {
		case r := <-done:
			// The runner tells a firing before the result of the step it
			// stopped; when both wait here, select may take the result
			// first, and the firing must still go with it (or the stop
			// would read as a failure, and be retried).
			select {
			case ev := <-w.fired:
				if !stopped && stoppedBy != nil {
					stoppedBy(ev.Firing)
				}
			default:
			}
			return r
		case <-stopping:
			stopping = nil
			stopFor(engine.Firing{Reason: ReasonWorkerStopped, At: time.Now(),
				Note: fmt.Sprintf("the worker %s running the step was stopped; resume runs the step again on a worker", workerName())})
		case ev := <-w.fired:
			stopFor(ev.Firing)
		case <-cancelled:
			cancelled = nil
			stop()
		case <-w.tail.arrived:
			hb.outputArrived()
		case <-hb.paced:
			hb.beat()
		case <-ticker.C:
			hb.beat()
		}
	}
}

// heartbeats sends a turn's heartbeats: on the ticker, and when output
// comes, no closer together than heartbeatGap (the SDK throttles them
// further, to the worker's HeartbeatThrottle), the first no sooner than
// heartbeatQuiet after the turn started.
type heartbeats struct {
	ctx     context.Context
	w       *worker
	started time.Time
	settle  time.Duration
	last    time.Time
	timer   *time.Timer
	// paced fires when output waits for the gap to pass.
	paced <-chan time.Time
}

func (h *heartbeats) outputArrived() {
	wait := heartbeatGap - time.Since(h.last)
	if h.last.IsZero() {
		wait = heartbeatQuiet - time.Since(h.started)
	}
	if wait > 0 {
		if h.paced == nil {
			h.timer = time.NewTimer(wait)
			h.paced = h.timer.C
		}
		return
	}
	h.beat()
}

func (h *heartbeats) beat() {
	h.stop()
	p := Progress{Elapsed: time.Since(h.started), Tail: h.w.tail.tail(0)}
	p.Phase, p.Markers = h.w.markers()
	activity.RecordHeartbeat(h.ctx, p)
	h.last = time.Now()
	h.w.tail.beaten(h.last, p.Tail.Written, h.settle)
}

func (h *heartbeats) stop() {
	if h.timer != nil {
		h.timer.Stop()
		h.timer, h.paced = nil, nil
	}
}

// logView shows a worker's steps in its log: the engine's lines, not the
// output (the transcript keeps that).
type logView struct {
	log interface{ Info(string, ...any) }
}

func (v logView) StepStarted(info local.StepInfo) {
	v.log.Info("step started", "phase", info.Phase, "step", info.Step, "attempt", info.Attempt)
}
func (logView) Output([]byte)           {}
func (logView) Progress(local.Progress) {}
func (v logView) StepFinished(info local.StepInfo, r engine.StepResult) {
	v.log.Info("step finished", "phase", info.Phase, "step", info.Step, "exit_code", r.ExitCode, "stopped", r.Stopped)
}
func (v logView) Say(format string, args ...any) { v.log.Info(fmt.Sprintf(format, args...)) }
func (logView) Close() error                     { return nil }

// workerName names this worker process in a step's output: host/pid.
func workerName() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d", host, os.Getpid())
}
