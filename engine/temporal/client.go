package temporal

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/fleet"
)

// The defaults of a Target.
const (
	DefaultAddress   = fleet.DefaultAddress
	DefaultNamespace = fleet.DefaultNamespace
	DefaultTaskQueue = fleet.DefaultTaskQueue
)

// WorkflowType is SessionWorkflow's name, as the server lists it.
const WorkflowType = "SessionWorkflow"

// Target is the Temporal server, namespace and task queue of a fleet; it
// lives in engine/temporal/target, which the local binary can import.
type Target = fleet.Target

// Interceptors, when set, are the client's interceptors: telemetry's
// tracing interceptor, which the workers made from the client inherit.
var Interceptors func() []interceptor.ClientInterceptor

// Dial connects to the target's server. logger nil: the SDK's own lines
// are dropped but for warnings and errors, on standard error.
func Dial(ctx context.Context, t Target, logger log.Logger) (client.Client, error) {
	t = t.WithDefaults()
	if logger == nil {
		logger = QuietLogger(nil)
	}
	options := client.Options{HostPort: t.Address, Namespace: t.Namespace, Logger: logger}
	if loopback(t.Address) {
		// The SDK gzips every request (and so the server its answer):
		// to a server on this machine that saves no network, and costs
		// a gzip writer's set-up per call on both sides.
		options.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	}
	if Interceptors != nil {
		options.Interceptors = Interceptors()
	}
	c, err := client.DialContext(ctx, options)
	if err != nil {
		return nil, fmt.Errorf("the Temporal server at %s (namespace %s) cannot be reached: %w", t.Address, t.Namespace, err)
	}
	return c, nil
}

// loopback tells whether address (HOST:PORT) is a server on this
// machine: a loopback IP, or localhost.
func loopback(address string) bool {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// QuietLogger logs warnings and errors only, to w (io.Discard when nil).
func QuietLogger(w io.Writer) log.Logger {
	if w == nil {
		w = io.Discard
	}
	return log.NewStructuredLogger(slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn})))
}

// Memo is what a session's workflow carries beside its input, for
// listing: the pipeline, its files, and the key of (pipeline, spec) by
// which a second live run is refused.
type Memo struct {
	Pipeline string `json:"pipeline"`
	File     string `json:"file"`
	Spec     string `json:"spec,omitempty"`
	Key      string `json:"key"`
}

// Key is the (pipeline, spec) key of a session on the fleet: the paths
// as the client sent them (absolute).
func Key(file, spec string) string {
	h := fnv.New64a()
	h.Write([]byte(file + "\x00" + spec))
	return strconv.FormatUint(h.Sum64(), 36)
}

// Client is the session commands' side of a fleet: start a session's
// workflow, signal it, ask it where it stands, list the sessions. It is
// safe for concurrent use.
type Client struct {
	C      client.Client
	Target Target
	// reports keeps each open session's last status answer (see Status).
	reports reportCache
	// watches are the sessions followed (see Watch).
	watchMu sync.Mutex
	watches map[string]*sessionWatch
	// keyMissing: the server refused KeyAttribute (see keyIndexed).
	keyMu      sync.Mutex
	keyMissing bool
	// started holds the run of each session this client started: a
	// Watch of it reads that run's history without asking the server
	// which run is current.
	started sync.Map // session id → run id
}

// NewClient dials the target.
func NewClient(ctx context.Context, t Target) (*Client, error) {
	t = t.WithDefaults()
	c, err := Dial(ctx, t, nil)
	if err != nil {
		return nil, err
	}
	return &Client{C: c, Target: t}, nil
}

// Close stops the watches and closes the connection.
func (c *Client) Close() {
	c.stopWatches()
	c.C.Close()
}

// Start starts the workflow of a new session, id: its input and memo.
// A workflow of that id that exists already is an error.
func (c *Client) Start(ctx context.Context, in SessionInput, memo Memo) error {
	return c.startSession(ctx, client.StartWorkflowOptions{
		ID: in.SessionID, TaskQueue: c.Target.TaskQueue,
		Memo:                     map[string]any{"session": memo},
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		// A running workflow of the id is an error, not a handle on it.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}, memo.Key, in)
}

// SessionTaskTimeout is how long a worker has for one workflow task of a
// session, from the server's start of it to its answer (the server's
// default is 10s). It is what a task lost on its way costs: a busy
// server records a task started for a poll and, now and then, never
// delivers it (the poll went on to another task: the server's record
// of the start, written, answered it with an error); nothing but the
// timeout gives the task to another poll. With 100 short pipelines on
// two workers of a loaded 2-core machine, 2 rounds in 9 lost one to
// three tasks, 10s each on a pipeline of a few seconds. A worker that
// got its task answers within about a second even there (cmd/bench
// -fleet prints the longest task of each round: 0.5-1.2s in 25 rounds
// at load 4-16); one whose local activities (checkpoint, memory
// intake) run long is not cut off: the SDK answers for it at 80% of
// this and goes on with a new task. A continued-as-new run keeps its
// timeout.
const SessionTaskTimeout = 4 * time.Second

// startSession starts a session's workflow with the search attribute of
// its key when the namespace has it. A server that refuses the attribute
// (added a moment ago, not known to its frontend yet) is asked again
// without it: the session is then listed by its memo.
func (c *Client) startSession(ctx context.Context, o client.StartWorkflowOptions, key string, in SessionInput) error {
	o.TypedSearchAttributes = c.keyAttributes(key)
	o.WorkflowTaskTimeout = SessionTaskTimeout
	run, err := c.C.ExecuteWorkflow(ctx, o, SessionWorkflow, in)
	var invalid *serviceerror.InvalidArgument
	if errors.As(err, &invalid) && o.TypedSearchAttributes.Size() > 0 {
		c.keyRefused()
		o.TypedSearchAttributes = sdktemporal.SearchAttributes{}
		run, err = c.C.ExecuteWorkflow(ctx, o, SessionWorkflow, in)
	}
	if err == nil {
		c.started.Store(in.SessionID, run.GetRunID())
	}
	return err
}

// takeStartedRun is the run of session id this client started, "" when
// it started none; it is taken once (by the session's Watch).
func (c *Client) takeStartedRun(id string) string {
	run, _ := c.started.LoadAndDelete(id)
	s, _ := run.(string)
	return s
}

// Summary is one session's workflow as the server lists it.
type Summary struct {
	ID    string
	RunID string
	Memo
	// Open: the workflow has not closed (a paused session's is open).
	Open bool
	// Execution is the workflow's status on the server: Running,
	// Completed, Failed, Terminated, ...
	Execution string
	Started   time.Time
	Closed    time.Time
	TaskQueue string
}

// List lists the sessions' workflows of the namespace that query keeps
// (a visibility query: "" for all), newest first. The server's list is
// eventually consistent: a workflow started a moment ago may be missing.
func (c *Client) List(ctx context.Context, query string) ([]Summary, error) {
	q := fmt.Sprintf("WorkflowType = '%s'", WorkflowType)
	if query != "" {
		q += " AND " + query
	}
	var out []Summary
	var token []byte
	for {
		resp, err := c.C.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: c.Target.Namespace, Query: q, NextPageToken: token})
		if err != nil {
			return nil, err
		}
		for _, e := range resp.Executions {
			s := Summary{ID: e.GetExecution().GetWorkflowId(), RunID: e.GetExecution().GetRunId(),
				Open:      e.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
				Execution: executionStatus(e.GetStatus()), TaskQueue: e.GetTaskQueue()}
			if t := e.GetStartTime(); t != nil {
				s.Started = t.AsTime()
			}
			if t := e.GetCloseTime(); t != nil {
				s.Closed = t.AsTime()
			}
			if p, ok := e.GetMemo().GetFields()["session"]; ok {
				_ = converter.GetDefaultDataConverter().FromPayload(p, &s.Memo)
			}
			out = append(out, s)
		}
		if token = resp.NextPageToken; len(token) == 0 {
			break
		}
	}
	slices.SortStableFunc(out, func(a, b Summary) int { return b.Started.Compare(a.Started) })
	return out, nil
}

// QueueQuery is the visibility query of the workflows of one task queue.
func QueueQuery(queue string) string {
	return fmt.Sprintf("TaskQueue = '%s'", strings.ReplaceAll(queue, "'", ""))
}

// Live lists the open sessions of key, newest first.
func (c *Client) Live(ctx context.Context, key string) ([]Summary, error) {
	narrow := c.keyQuery(key)
	list, err := c.List(ctx, "ExecutionStatus = 'Running'"+narrow)
	var invalid *serviceerror.InvalidArgument
	if errors.As(err, &invalid) && narrow != "" {
		c.keyRefused()
		list, err = c.List(ctx, "ExecutionStatus = 'Running'")
	}
	if err != nil {
		return nil, err
	}
	var out []Summary
	for _, s := range list {
		if s.Key == key {
			out = append(out, s)
		}
	}
	return out, nil
}

func executionStatus(s enumspb.WorkflowExecutionStatus) string {
	name := strings.TrimPrefix(s.String(), "WORKFLOW_EXECUTION_STATUS_")
	if name == "" {
		return "unknown"
	}
	return strings.ToLower(strings.ReplaceAll(name, "_", "-"))
}

// ErrNoSession: no workflow of that id.
var ErrNoSession = errors.New("no such session on the Temporal server")

// Status is where session id stands: the workflow's status query while
// it is open (a worker answers it); from its history once it closed (its
// result, decided with its last plan), so that no worker is needed. A
// workflow that failed, was terminated or timed out is a failed session,
// with what the server says as the reason.
//
// The query is asked only when the history has grown since the last
// answer: the workflow's state changes only as it takes events, each of
// which lengthens its history, so an answer holds until then. A follower
// that asks every few hundred milliseconds costs the server a describe,
// and the workers nothing, while the session does nothing new (and
// Progress, with a Watch, not even the describe).
func (c *Client) Status(ctx context.Context, id string) (engine.StatusReport, error) {
	desc, err := c.C.DescribeWorkflow(ctx, id, "")
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return engine.StatusReport{}, fmt.Errorf("%w: %s (namespace %s at %s)", ErrNoSession, id, c.Target.Namespace, c.Target.Address)
	}
	if err != nil {
		return engine.StatusReport{}, err
	}
	info := desc.RawResponse.GetWorkflowExecutionInfo()
	if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		at := historyPoint{run: info.GetExecution().GetRunId(), length: info.GetHistoryLength()}
		if r, ok := c.reports.get(id, at); ok {
			return r, nil
		}
		r, err := c.queryStatus(ctx, id)
		if err != nil {
			return r, err
		}
		c.reports.put(id, at, r)
		return r, nil
	}
	c.reports.drop(id)
	h, err := c.History(ctx, id)
	if err != nil {
		return engine.StatusReport{}, err
	}
	return h.Report()
}

// queryStatus asks the open workflow of session id where it stands.
func (c *Client) queryStatus(ctx context.Context, id string) (engine.StatusReport, error) {
	var r engine.StatusReport
	v, err := c.C.QueryWorkflow(ctx, id, "", QueryStatus)
	if err != nil {
		return r, fmt.Errorf("session %s: the status query found no worker to answer it (is a pipeline worker polling task queue %s?): %w",
			id, c.Target.TaskQueue, err)
	}
	return r, v.Get(&r)
}

// AwaitEnd returns once session id's workflow has closed (failed or
// completed), long-polled from the server with no worker asked, or ctx
// ends: from its Watch when there is one.
func (c *Client) AwaitEnd(ctx context.Context, id string) error {
	if w := c.watchOf(id); w != nil {
		err := w.awaitClose(ctx)
		if err == nil || ctx.Err() != nil {
			return err
		}
	}
	return c.C.GetWorkflow(ctx, id, "").Get(ctx, nil)
}

// historyPoint is how far a workflow's history went: its run and length.
type historyPoint struct {
	run    string
	length int64
}

// reportCache keeps the last status answer of each open session, and
// the point of its history it was asked at.
type reportCache struct {
	mu   sync.Mutex
	last map[string]cachedReport
}

type cachedReport struct {
	at     historyPoint
	report engine.StatusReport
}

// get returns the answer asked at the point at of the history: it
// holds until the history grows.
func (c *reportCache) get(id string, at historyPoint) (engine.StatusReport, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.last[id]
	if !ok || r.at != at {
		return engine.StatusReport{}, false
	}
	return r.report, true
}

func (c *reportCache) put(id string, at historyPoint, r engine.StatusReport) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		c.last = map[string]cachedReport{}
	}
	c.last[id] = cachedReport{at: at, report: r}
}

func (c *reportCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.last, id)
}

// Pause signals the session to pause, with notes and the reason (""
// for a human's pause).
func (c *Client) Pause(ctx context.Context, id, notes, reason string) error {
	return c.C.SignalWorkflow(ctx, id, "", SignalPause, PauseSignal{Notes: notes, Reason: reason})
}

// State is the session's state: asked of its workflow while it runs,
// read from its history once it closed.
func (c *Client) State(ctx context.Context, id string) (engine.State, error) {
	desc, err := c.C.DescribeWorkflow(ctx, id, "")
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return engine.State{}, fmt.Errorf("%w: %s (namespace %s at %s)", ErrNoSession, id, c.Target.Namespace, c.Target.Address)
	}
	if err != nil {
		return engine.State{}, err
	}
	if desc.RawResponse.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		v, err := c.C.QueryWorkflow(ctx, id, "", QueryState)
		if err != nil {
			return engine.State{}, err
		}
		var s engine.State
		return s, v.Get(&s)
	}
	h, err := c.History(ctx, id)
	if err != nil {
		return engine.State{}, err
	}
	if h.Result != nil {
		return *h.Result, nil
	}
	return h.Input.State, nil
}

// Remember signals a human's change to the session's working set.
func (c *Client) Remember(ctx context.Context, id string, notes []engine.MemoryNote) error {
	return c.C.SignalWorkflow(ctx, id, "", SignalRemember, RememberSignal{Notes: notes})
}

// Resume signals the session to resume.
func (c *Client) Resume(ctx context.Context, id string, r ResumeSignal) error {
	return c.C.SignalWorkflow(ctx, id, "", SignalResume, r)
}

// Stopped tells whether a report is of a session that stopped: paused,
// completed or failed.
func Stopped(r engine.StatusReport) bool {
	switch engine.Status(r.Status) {
	case engine.StatusPaused, engine.StatusCompleted, engine.StatusFailed:
		return true
	}
	return false
}

// Interventions counts the human interventions of a report (each resume
// and each pause request is one): a resume is known to be taken when it
// grows.
func Interventions(r engine.StatusReport) int {
	n := 0
	for _, p := range r.Phases {
		n += p.Human
	}
	return n
}

// StepRecord is one step a worker ran, as the history keeps its end.
type StepRecord struct {
	Phase      string
	Transcript string
	Worker     string
	ExitCode   int
	Stopped    bool
}

// History is what a session's workflow history holds that the commands
// read: its input (of its first run), the plan it decides with now, its
// result, and the steps the workers ran, over all its runs.
type History struct {
	ID     string
	Input  SessionInput
	Plan   PlanSource
	Closed bool
	Result *engine.State
	// Failure is why the workflow closed other than completed.
	Failure string
	Steps   []StepRecord
}

// History reads the histories of session id's runs, the newest first
// back along continue-as-new.
func (c *Client) History(ctx context.Context, id string) (*History, error) {
	h := &History{ID: id}
	runID := ""
	var runs [][]StepRecord
	for first := true; ; first = false {
		r := &runReader{h: h, first: first, scheduled: map[int64]string{}, dc: converter.GetDefaultDataConverter()}
		it := c.C.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			var notFound *serviceerror.NotFound
			if errors.As(err, &notFound) {
				return nil, fmt.Errorf("%w: %s (namespace %s at %s)", ErrNoSession, id, c.Target.Namespace, c.Target.Address)
			}
			if err != nil {
				return nil, err
			}
			if err := r.take(ev); err != nil {
				return nil, err
			}
		}
		if first {
			h.Plan = r.input.Plan
			if len(r.plans) > 0 {
				h.Plan = r.plans[len(r.plans)-1]
			}
		}
		h.Input = r.input
		runs = append(runs, r.steps)
		if r.continued == "" {
			break
		}
		runID = r.continued
	}
	for i := len(runs) - 1; i >= 0; i-- {
		h.Steps = append(h.Steps, runs[i]...)
	}
	return h, nil
}

// runReader reads the history of one run of a session's workflow: its
// input, the plans its resumes carried, the steps its workers ran and,
// for the newest run (first), how it closed.
type runReader struct {
	h         *History
	first     bool
	dc        converter.DataConverter
	scheduled map[int64]string
	input     SessionInput
	continued string
	plans     []PlanSource
	steps     []StepRecord
}

// take reads one event of the run.
func (r *runReader) take(ev *historypb.HistoryEvent) error {
	switch {
	case ev.GetWorkflowExecutionStartedEventAttributes() != nil:
		a := ev.GetWorkflowExecutionStartedEventAttributes()
		if err := decodeFirst(r.dc, a.GetInput(), &r.input); err != nil {
			return fmt.Errorf("session %s: its input: %w", r.h.ID, err)
		}
		if r.input.Created.IsZero() && ev.GetEventTime() != nil {
			r.input.Created = ev.GetEventTime().AsTime()
		}
		r.continued = a.GetContinuedExecutionRunId()
	case ev.GetWorkflowExecutionSignaledEventAttributes() != nil:
		a := ev.GetWorkflowExecutionSignaledEventAttributes()
		var sig ResumeSignal
		if a.GetSignalName() == SignalResume && decodeFirst(r.dc, a.GetInput(), &sig) == nil && sig.Plan != nil {
			r.plans = append(r.plans, *sig.Plan)
		}
	case ev.GetActivityTaskScheduledEventAttributes() != nil:
		r.scheduled[ev.GetEventId()] = ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
	case ev.GetActivityTaskCompletedEventAttributes() != nil:
		a := ev.GetActivityTaskCompletedEventAttributes()
		var out StepOutput
		if r.scheduled[a.GetScheduledEventId()] == ActivityRunStep && decodeFirst(r.dc, a.GetResult(), &out) == nil {
			r.steps = append(r.steps, StepRecord{Phase: out.Phase, Transcript: out.Transcript, Worker: out.Worker,
				ExitCode: out.Result.ExitCode, Stopped: out.Result.Stopped})
		}
	case r.first:
		r.closed(ev)
	}
	return nil
}

// closed reads how the newest run closed, when ev says it did.
func (r *runReader) closed(ev *historypb.HistoryEvent) {
	h := r.h
	switch {
	case ev.GetWorkflowExecutionCompletedEventAttributes() != nil:
		var s engine.State
		if err := decodeFirst(r.dc, ev.GetWorkflowExecutionCompletedEventAttributes().GetResult(), &s); err == nil {
			h.Result, h.Closed = &s, true
		}
	case ev.GetWorkflowExecutionFailedEventAttributes() != nil:
		h.Closed, h.Failure = true, "the workflow failed: "+ev.GetWorkflowExecutionFailedEventAttributes().GetFailure().GetMessage()
	case ev.GetWorkflowExecutionTerminatedEventAttributes() != nil:
		h.Closed, h.Failure = true, "the workflow was terminated: "+ev.GetWorkflowExecutionTerminatedEventAttributes().GetReason()
	case ev.GetWorkflowExecutionCanceledEventAttributes() != nil:
		h.Closed, h.Failure = true, "the workflow was cancelled"
	case ev.GetWorkflowExecutionTimedOutEventAttributes() != nil:
		h.Closed, h.Failure = true, "the workflow timed out"
	}
}

func decodeFirst(dc converter.DataConverter, p *commonpb.Payloads, v any) error {
	if p == nil || len(p.Payloads) == 0 {
		return errors.New("no payload")
	}
	return dc.FromPayload(p.Payloads[0], v)
}

// Report is the closed session's status, as the status query answered
// it: its result decided with its last plan; a workflow that closed with
// no result is a failed session, with the server's reason.
func (h *History) Report() (engine.StatusReport, error) {
	plan, err := h.Plan.Load()
	if err != nil {
		return engine.StatusReport{}, fmt.Errorf("session %s: its plan: %w", h.ID, err)
	}
	s := h.Input.State
	if h.Result != nil {
		s = *h.Result
	} else if h.Closed {
		s.Status, s.FailReason = engine.StatusFailed, h.Failure
	}
	r := engine.Report(plan, s)
	r.ID, r.Pipeline, r.File, r.Spec, r.Created = h.ID, plan.Name.Value, plan.File, plan.Spec, h.Input.Created
	return r, nil
}

// TranscriptDirs are the session folders the steps' transcripts were
// written in (each worker's store, or one shared), with the workers that
// wrote there, in the order the steps ran.
func (h *History) TranscriptDirs() (dirs []string, workers map[string][]string) {
	workers = map[string][]string{}
	for _, s := range h.Steps {
		if s.Transcript == "" {
			continue
		}
		dir := filepath.Dir(filepath.Dir(s.Transcript)) // <session>/transcripts/<phase>
		if _, ok := workers[dir]; !ok {
			dirs = append(dirs, dir)
		}
		if !slices.Contains(workers[dir], s.Worker) {
			workers[dir] = append(workers[dir], s.Worker)
		}
	}
	return dirs, workers
}

// Restart continues a session whose workflow closed as failed: a new run
// of the workflow of the same id, from the state it ended with, whose
// first event is the resume (notes, phase), deciding with plan.
func (c *Client) Restart(ctx context.Context, h *History, plan PlanSource, notes, phase string, now time.Time) error {
	if h.Result == nil {
		return fmt.Errorf("session %s has no state to resume from (%s)", h.ID, h.Failure)
	}
	p, err := plan.Load()
	if err != nil {
		return err
	}
	// Changes, as a new session's: a worker that knows them records no
	// version marker for the new run.
	in := SessionInput{SessionID: h.ID, Plan: plan, State: *h.Result, Created: h.Input.Created, Options: h.Input.Options,
		Changes: SessionChanges,
		Events:  []EventRecord{MustRecord(engine.Resumed{At: now.UTC(), Notes: notes, Phase: phase, Plan: p.Digest})}}
	if h.Result.PlanDigest != p.Digest {
		in.Events = append([]EventRecord{MustRecord(engine.PlanChanged{At: now.UTC(), Plan: p.Digest})}, in.Events...)
	}
	memo := Memo{File: plan.File, Spec: plan.Spec, Pipeline: p.Name.Value, Key: Key(plan.File, plan.Spec)}
	return c.startSession(ctx, client.StartWorkflowOptions{
		ID: h.ID, TaskQueue: c.Target.TaskQueue, Memo: map[string]any{"session": memo},
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		// A running workflow of the id is an error, not a handle on it.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}, memo.Key, in)
}
