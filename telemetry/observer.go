package telemetry

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
)

// traceFile, in a session's folder, keeps the traceparent of the root
// span of the session's first run: a later run of the session links its
// spans to it.
const traceFile = "telemetry-trace"

// Telemetry is this process's telemetry: the session observer that builds
// spans and metrics, and what exports them.
type Telemetry struct {
	// Getenv reads the configuration; Warn gets the one warning; Now is
	// the clock of spans.
	Getenv  Getenv
	Warn    io.Writer
	Now     func() time.Time
	Version string

	mu sync.Mutex
	// on: a session found telemetry configured, and cfg is it.
	on       bool
	cfg      Config
	sessions map[*session.Session]*trace
	// workerSteps are the steps a fleet worker runs (TemporalStep): only
	// their step span, the activity's span above it.
	workerSteps map[*session.Session]*trace
	ended       []*span
	meters      *meters
	warned      sync.Once
	ticker      *ticker
}

// trace is one session's spans in this process: the run, and the phase,
// attempt and step open in it.
type trace struct {
	pipeline                 string
	root, phase, attempt     *span
	step                     *span
	phaseIndex, attemptIndex int
	execution                int
	redact                   func(string) string
}

// installed is the Telemetry of the process, for the Temporal client's
// interceptor (TemporalInterceptors).
var installed atomic.Pointer[Telemetry]

// Install makes a Telemetry the observer of this process's sessions.
// Until a session records an event it does nothing; when that session's
// plan and the environment configure no endpoint, it stays so.
func Install(version string, warn io.Writer) *Telemetry {
	t := &Telemetry{Version: version, Warn: warn}
	session.SetObserver(t)
	installed.Store(t)
	return t
}

func (t *Telemetry) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// Recorded builds the session's spans and metrics from an event recorded.
func (t *Telemetry) Recorded(s *session.Session, ev engine.Event, before, after engine.State) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tr, known := t.sessions[s]
	if !known {
		tr = t.begin(s, ev, before)
		if t.sessions == nil {
			t.sessions = map[*session.Session]*trace{}
		}
		t.sessions[s] = tr
	}
	if tr != nil {
		t.follow(s, tr, ev, before, after)
	}
}

// StepEnv is TRACEPARENT of the step s is starting.
func (t *Telemetry) StepEnv(s *session.Session) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	tr := t.sessions[s]
	if tr == nil {
		tr = t.workerSteps[s]
	}
	if tr != nil && tr.step != nil {
		return []string{"TRACEPARENT=" + tr.step.ctx.Traceparent()}
	}
	return nil
}

// Closed ends the session's open spans: the run ends here.
func (t *Telemetry) Closed(s *session.Session) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tr := t.sessions[s]; tr != nil {
		t.endAll(tr, t.now())
	}
	delete(t.sessions, s)
}

// begin starts the spans of a session's run (or of the command that
// records its first event in this process, ev: complete, rewind), when
// telemetry is on for it; nil when it is off.
func (t *Telemetry) begin(s *session.Session, ev engine.Event, before engine.State) *trace {
	cfg, ok := Resolve(t.Getenv, s.Plan.Telemetry)
	if !ok {
		return nil
	}
	if !t.on {
		t.activate(cfg)
	}
	now := t.now()
	redactor := s.Redactor()
	tr := &trace{pipeline: s.X.Meta.Pipeline, phaseIndex: -1, execution: before.Execution, redact: redactor.String}
	invocation := "resume"
	switch {
	case s.Created:
		invocation = "run"
	case s.Crashed:
		invocation = "recover"
	case isEvent[engine.Completed](ev):
		invocation = "complete"
	case isEvent[engine.Rewound](ev):
		invocation = "rewind"
	}
	root := &span{ctx: SpanContext{Trace: newTraceID(), Span: newSpanID()}, name: "session " + tr.pipeline,
		kind: kindInternal, start: now}
	if parent, ok := ParseTraceparent(t.getenv("TRACEPARENT")); ok {
		// Started inside a trace (a CI job's, a script's): part of it.
		root.ctx.Trace, root.parent = parent.Trace, parent.Span
	}
	root.set("pipeline.name", tr.pipeline)
	root.set("pipeline.session.id", s.ID())
	root.set("pipeline.invocation", invocation)
	if spec := s.X.Meta.Spec; spec != "" {
		root.set("pipeline.spec", tr.redact(spec))
	}
	if first, err := s.X.ReadFile(traceFile); err == nil && first != nil {
		if link, ok := ParseTraceparent(string(first)); ok && link != root.ctx {
			root.links = append(root.links, link)
		}
	} else if err := s.X.WriteFile(traceFile, []byte(root.ctx.Traceparent()+"\n")); err != nil {
		t.warn(fmt.Sprintf("keeping the session's trace for its resumes: %v", err))
	}
	tr.root = root
	return tr
}

func isEvent[E engine.Event](ev engine.Event) bool {
	_, ok := ev.(E)
	return ok
}

func (t *Telemetry) getenv(name string) string {
	if t.Getenv != nil {
		return t.Getenv(name)
	}
	return os.Getenv(name)
}

// activate sets telemetry up for the process, from the first session
// that has it on.
func (t *Telemetry) activate(cfg Config) {
	t.on, t.cfg = true, cfg
	t.meters = newMeters(t.now())
	for _, w := range cfg.Warnings {
		fmt.Fprintf(t.warnWriter(), "pipeline: telemetry: %s\n", w)
	}
	t.ticker = t.startTicker(cfg.MetricInterval)
}

func (t *Telemetry) warnWriter() io.Writer {
	if t.Warn == nil {
		return os.Stderr
	}
	return t.Warn
}

// warn says one thing that went wrong with the telemetry, once per
// process: a collector that cannot be reached says so at every export.
func (t *Telemetry) warn(message string) {
	t.warned.Do(func() {
		fmt.Fprintf(t.warnWriter(), "pipeline: telemetry: %s (the sessions are not affected)\n", message)
	})
}

// follow turns one recorded event into span changes and metrics.
func (t *Telemetry) follow(s *session.Session, tr *trace, ev engine.Event, before, after engine.State) {
	now := t.now()
	switch e := ev.(type) {
	case engine.StepFinished:
		if tr.step != nil && (e.Execution == 0 || e.Execution == tr.execution) {
			t.endStep(s, tr, e.Result, now)
		}
	case engine.TriggerFired:
		if sp := tr.innermost(); sp != nil {
			sp.addEvent("trigger", now, attr{"pipeline.trigger", e.Firing.Reason},
				attr{"pipeline.trigger.expression", tr.redact(e.Firing.Expression)})
			if tr.step != nil {
				tr.step.set("pipeline.trigger", e.Firing.Reason)
			}
		}
	case engine.Checkpointed:
		sp := tr.root
		if tr.phase != nil {
			sp = tr.phase
		}
		sp.addEvent("checkpoint", now, attr{"pipeline.checkpoint.kind", e.Kind}, attr{"pipeline.checkpoint.commit", e.Commit})
	case engine.Compacted:
		if sp := tr.innermost(); sp != nil {
			sp.addEvent("compaction", now)
		}
	}
	t.followPhases(s, tr, before, after, now)
	if after.Waiting && !before.Waiting && tr.attempt != nil {
		tr.attempt.addEvent("retry scheduled", now, attr{"pipeline.attempt", int64(after.Attempt)})
		t.meters.add(MetricRetries, 1, true, attr{"pipeline.name", tr.pipeline}, attr{"pipeline.phase", phaseName(s, after.Phase)})
	}
	if after.Execution != tr.execution {
		tr.execution = after.Execution
		if after.Compaction != nil {
			if sp := tr.innermost(); sp != nil {
				sp.addEvent("compaction started", now)
			}
		} else if after.StepRunning {
			t.startStep(s, tr, after, now)
		}
	}
	t.followEnd(s, tr, before, after, now)
}

// innermost is the span open deepest: the step, the attempt, the phase
// or the run.
func (tr *trace) innermost() *span {
	for _, sp := range []*span{tr.step, tr.attempt, tr.phase} {
		if sp != nil {
			return sp
		}
	}
	return tr.root
}

func phaseName(s *session.Session, i int) string {
	if i >= 0 && i < len(s.Plan.Phases) {
		return s.Plan.Phases[i].Name
	}
	return ""
}

// followPhases ends the span of a phase that completed, failed or was
// skipped, and records its duration.
func (t *Telemetry) followPhases(s *session.Session, tr *trace, before, after engine.State, now time.Time) {
	for i, rec := range after.Phases {
		was := engine.Status("")
		if i < len(before.Phases) {
			was = before.Phases[i].Status
		}
		if rec.Status == was || (rec.Status != engine.StatusCompleted && rec.Status != engine.StatusFailed && rec.Status != engine.StatusSkipped) {
			continue
		}
		if tr.phaseIndex != i || tr.phase == nil {
			t.endPhase(tr, now)
			tr.phase, tr.phaseIndex = tr.root.child("phase "+rec.Name, now), i
			tr.phase.set("pipeline.phase", rec.Name)
		}
		tr.phase.set("pipeline.phase.status", string(rec.Status))
		tr.phase.set("pipeline.phase.attempts", int64(rec.Attempts))
		if rec.Status == engine.StatusFailed {
			tr.phase.status, tr.phase.statusText = statusError, "phase failed"
		}
		if rec.Status != engine.StatusSkipped {
			t.meters.record(MetricPhaseDuration, rec.Duration.Seconds(), attr{"pipeline.name", tr.pipeline},
				attr{"pipeline.phase", rec.Name}, attr{"pipeline.phase.status", string(rec.Status)})
		}
		t.endPhase(tr, now)
	}
}

// followEnd marks how the run stopped: paused (its reason), completed or
// failed.
func (t *Telemetry) followEnd(s *session.Session, tr *trace, before, after engine.State, now time.Time) {
	if after.Status == before.Status {
		return
	}
	tr.root.set("pipeline.status", string(after.Status))
	switch after.Status {
	case engine.StatusPaused:
		reason := ""
		if after.Pause != nil {
			reason = after.Pause.Reason
		}
		tr.root.set("pipeline.pause.reason", reason)
		if tr.phase != nil {
			tr.phase.set("pipeline.pause.reason", reason)
			tr.phase.set("pipeline.phase.status", string(engine.StatusPaused))
		}
		tr.root.addEvent("paused", now, attr{"pipeline.pause.reason", reason})
		t.meters.add(MetricPauses, 1, true, attr{"pipeline.name", tr.pipeline}, attr{"pipeline.pause.reason", reason})
	case engine.StatusFailed:
		tr.root.status, tr.root.statusText = statusError, tr.redact(after.FailReason)
	case engine.StatusCompleted:
		tr.root.status = statusOK
	}
}

// endPhase ends the phase span open, and its attempt's.
func (t *Telemetry) endPhase(tr *trace, now time.Time) {
	t.endAttempt(tr, now)
	if tr.phase != nil {
		t.end(tr.phase, now)
		tr.phase, tr.phaseIndex = nil, -1
	}
}

func (t *Telemetry) endAttempt(tr *trace, now time.Time) {
	if tr.attempt != nil {
		t.end(tr.attempt, now)
		tr.attempt = nil
	}
}

func (t *Telemetry) end(sp *span, now time.Time) {
	sp.end = now
	t.ended = append(t.ended, sp)
}

// endAll ends every span of the run still open.
func (t *Telemetry) endAll(tr *trace, now time.Time) {
	t.endUnfinished(tr, now)
	t.endPhase(tr, now)
	t.end(tr.root, now)
}

// endUnfinished ends the span of a step that has not finished: the
// process ends first.
func (t *Telemetry) endUnfinished(tr *trace, now time.Time) {
	if tr.step != nil {
		tr.step.set("pipeline.step.unfinished", true)
		t.end(tr.step, now)
		tr.step = nil
	}
}

// Names of GenAI systems (gen_ai.system) by agent kind.
func genAISystem(kind string) string {
	switch kind {
	case "claude":
		return "anthropic"
	case "codex":
		return "openai"
	case "gemini":
		return "gcp.gemini"
	}
	return kind
}

// startStep opens the spans of the step after starts: its phase's and
// attempt's first, when they are not open.
func (t *Telemetry) startStep(s *session.Session, tr *trace, after engine.State, now time.Time) {
	if after.Phase >= len(s.Plan.Phases) || after.Step >= len(s.Plan.Phases[after.Phase].Steps) {
		return
	}
	phase := &s.Plan.Phases[after.Phase]
	step := &phase.Steps[after.Step]
	if tr.phase == nil || tr.phaseIndex != after.Phase {
		t.endPhase(tr, now)
		tr.phase, tr.phaseIndex = tr.root.child("phase "+phase.Name, now), after.Phase
		tr.phase.set("pipeline.phase", phase.Name)
		tr.phase.set("pipeline.phase.index", int64(after.Phase))
	}
	if tr.attempt == nil || tr.attemptIndex != after.Attempt {
		t.endAttempt(tr, now)
		tr.attempt, tr.attemptIndex = tr.phase.child(fmt.Sprintf("attempt %d", after.Attempt), now), after.Attempt
		tr.attempt.set("pipeline.phase", phase.Name)
		tr.attempt.set("pipeline.attempt", int64(after.Attempt))
	}
	tr.step = stepSpan(tr.attempt, s, phase, step, after.Attempt, tr.redact, now)
}

// stepSpan starts the span of a step under parent: its attributes say
// which step of which phase and attempt, and the agent it invokes.
func stepSpan(parent *span, s *session.Session, phase *spec.PhasePlan, step *spec.StepPlan, attempt int,
	redact func(string) string, now time.Time) *span {
	sp := parent.child("step "+step.Name, now)
	sp.set("pipeline.phase", phase.Name)
	sp.set("pipeline.step", step.Name)
	sp.set("pipeline.attempt", int64(attempt))
	sp.set("pipeline.session.id", s.ID())
	if step.Agent != nil {
		agent := step.Agent.Value
		sp.kind = kindClient
		sp.set("gen_ai.operation.name", "invoke_agent")
		sp.set("gen_ai.system", genAISystem(agent.Kind))
		sp.set("pipeline.agent.kind", agent.Kind)
		if agent.Model != "" {
			sp.set("gen_ai.request.model", agent.Model)
		}
	} else {
		sp.set("pipeline.step.run", redact(step.Run))
	}
	return sp
}

// endStep ends the step's span with what it left, and counts it.
func (t *Telemetry) endStep(s *session.Session, tr *trace, res engine.StepResult, now time.Time) {
	sp := tr.step
	tr.step = nil
	sp.set("process.exit.code", int64(res.ExitCode))
	if sp.get("gen_ai.operation.name") != nil {
		sp.set("gen_ai.usage.input_tokens", int64(res.InputTokens))
		sp.set("gen_ai.usage.output_tokens", int64(res.OutputTokens))
	}
	sp.set("pipeline.tokens", int64(res.Tokens))
	sp.set("pipeline.cost_usd", res.CostUSD)
	sp.set("pipeline.files_changed", int64(res.FilesChanged))
	sp.set("pipeline.duration_s", res.Elapsed.Seconds())
	if res.Agent != "" {
		sp.set("pipeline.agent", res.Agent)
	}
	if res.Checkpoint {
		sp.addEvent("checkpoint marker", now, attr{"pipeline.checkpoint.note", tr.redact(res.CheckpointNote)})
	}
	outcome := "ok"
	switch {
	case res.TimedOut:
		outcome = "timed_out"
	case res.Stopped:
		outcome = "stopped"
	case res.ExitCode != 0:
		outcome = "failed"
	}
	sp.set("pipeline.step.outcome", outcome)
	if outcome != "ok" {
		msg := res.Error
		if msg == "" {
			msg = fmt.Sprintf("exit code %d", res.ExitCode)
		}
		sp.status, sp.statusText = statusError, tr.redact(strings.TrimSpace(msg))
	}
	t.end(sp, now)
	phase, _ := sp.get("pipeline.phase").(string)
	kind, _ := sp.get("pipeline.agent.kind").(string)
	if kind == "" {
		kind = "run"
	}
	model, _ := sp.get("gen_ai.request.model").(string)
	base := []attr{{"pipeline.name", tr.pipeline}, {"pipeline.phase", phase}}
	t.meters.add(MetricSteps, 1, true, append(base[:2:2], attr{"pipeline.agent.kind", kind}, attr{"pipeline.step.outcome", outcome})...)
	t.meters.add(MetricTokens, float64(res.InputTokens), true, append(base[:2:2], attr{"gen_ai.token.type", "input"}, attr{"gen_ai.request.model", model})...)
	t.meters.add(MetricTokens, float64(res.OutputTokens), true, append(base[:2:2], attr{"gen_ai.token.type", "output"}, attr{"gen_ai.request.model", model})...)
	t.meters.add(MetricCost, res.CostUSD, false, append(base[:2:2], attr{"gen_ai.request.model", model})...)
	t.meters.record(MetricStepDuration, res.Elapsed.Seconds(), append(base[:2:2], attr{"pipeline.agent.kind", kind})...)
}
