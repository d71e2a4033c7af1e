package temporal

// A fleet run shows what its steps print as a local run does, though the
// steps run on workers: each running step keeps the end of its output
// (OutputTail) in its activity's heartbeat details, and a follower reads
// the pending activities' last details from the server and writes the
// bytes it has not written yet, by offset. Heartbeats add no history
// events; the step's end, and the output its last heartbeats may not have
// carried, come with its result in the history.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
	sdkworker "go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/proto"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
)

// OutputTailSize bounds the output a heartbeat carries: the last 64 KiB
// of the step's output (base64 in the details' JSON: about 87 KiB).
const OutputTailSize = 64 << 10

// DefaultHeartbeatThrottle is how often, at most, a worker sends a
// running step's heartbeat to the server when Activities.HeartbeatThrottle
// is 0: about the delay before a follower sees a line the step printed.
const DefaultHeartbeatThrottle = time.Second

// heartbeatQuiet is how long a step runs before its output is sent in
// heartbeats, and before a follower asks the server for them: the
// output of a step that ends sooner comes with its result, in the
// history, at no cost more; each heartbeat is a write on the server,
// and each look a describe.
const heartbeatQuiet = time.Second

// heartbeatGap is the least time between two heartbeats the activity
// hands the SDK on new output: each one encodes up to OutputTailSize, and
// a step printing all the time would otherwise encode it for every chunk.
const heartbeatGap = 100 * time.Millisecond

// followPoll is how often FollowOutput looks at a session: a
// DescribeWorkflowExecution for the running steps' last heartbeats, and,
// no more than once a second (statusPoll), a status query while no step
// runs. A line reaches the follower about the worker's heartbeat throttle
// plus this after the step printed it.
const (
	followPoll = 250 * time.Millisecond
	statusPoll = time.Second
)

// OutputTail is the end of a step's output, as a heartbeat or the step's
// result carries it: the step, where it runs, and its last bytes.
type OutputTail struct {
	Phase      string    `json:"phase,omitempty"`
	PhaseIndex int       `json:"phase_index"`
	Phases     int       `json:"phases,omitempty"`
	Step       string    `json:"step,omitempty"`
	Attempt    int       `json:"attempt,omitempty"`
	What       string    `json:"what,omitempty"`
	Worker     string    `json:"worker,omitempty"`
	Started    time.Time `json:"started,omitzero"`
	// Written is how many bytes the step printed so far; Bytes are the
	// last of them (at most OutputTailSize), from offset Written-len(Bytes).
	Written int64  `json:"written"`
	Bytes   []byte `json:"bytes,omitempty"`
}

// Offset is where Bytes start in the step's output.
func (t *OutputTail) Offset() int64 { return t.Written - int64(len(t.Bytes)) }

// WorkerOptions is o with the heartbeat throttle the steps of a stream
// their output at (a.HeartbeatThrottle): without it the SDK sends a
// heartbeat every 0.8 × the heartbeat timeout (24s by default), and a
// follower would see a step's lines that late. Build the worker that
// runs a with it. (A function, not a method: every exported method of
// Activities is registered as an activity.)
func WorkerOptions(a *Activities, o sdkworker.Options) sdkworker.Options {
	o.DefaultHeartbeatThrottleInterval = a.heartbeatThrottle()
	o.MaxHeartbeatThrottleInterval = a.heartbeatThrottle()
	return o
}

func (a *Activities) heartbeatThrottle() time.Duration {
	if a.HeartbeatThrottle > 0 {
		return a.HeartbeatThrottle
	}
	return DefaultHeartbeatThrottle
}

// settle is how long after the activity handed the SDK a heartbeat it is
// sure to have reached the server: the SDK holds one back for at most its
// throttle (0.8 × the heartbeat timeout, at most the worker's setting),
// and the call gets time of its own. Output after the last settled
// heartbeat goes with the step's result.
func (a *Activities) settle(timeout time.Duration) time.Duration {
	throttle := a.heartbeatThrottle()
	if timeout > 0 {
		throttle = min(throttle, timeout*4/5)
	}
	return throttle + 2*time.Second
}

// tailBuffer keeps the end of the running step's output for the
// heartbeats, and when each heartbeat was handed to the SDK.
type tailBuffer struct {
	mu    sync.Mutex
	info  OutputTail // all but Bytes
	buf   []byte
	beats []beat
	// arrived has a value when output came since the last look.
	arrived chan struct{}
}

type beat struct {
	at      time.Time
	written int64
}

func newTailBuffer() *tailBuffer {
	return &tailBuffer{info: OutputTail{Worker: workerName()}, arrived: make(chan struct{}, 1)}
}

func (b *tailBuffer) start(info local.StepInfo) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.info = OutputTail{Phase: info.Phase, PhaseIndex: info.PhaseIndex, Phases: info.Phases, Step: info.Step,
		Attempt: info.Attempt, What: info.What, Worker: b.info.Worker, Started: time.Now()}
	b.buf, b.beats = b.buf[:0], nil
}

func (b *tailBuffer) write(chunk []byte) {
	b.mu.Lock()
	b.info.Written += int64(len(chunk))
	if len(chunk) >= OutputTailSize {
		b.buf = append(b.buf[:0], chunk[len(chunk)-OutputTailSize:]...)
	} else {
		if len(b.buf)+len(chunk) > 2*OutputTailSize {
			// Moving the kept end to the front once per OutputTailSize
			// written keeps the copying linear in the output.
			b.buf = append(b.buf[:0], b.buf[len(b.buf)-(OutputTailSize-len(chunk)):]...)
		}
		b.buf = append(b.buf, chunk...)
	}
	b.mu.Unlock()
	select {
	case b.arrived <- struct{}{}:
	default:
	}
}

// tail is the end of the output from offset from (the last
// OutputTailSize bytes at most).
func (b *tailBuffer) tail(from int64) *OutputTail {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.info
	kept := b.buf[max(0, len(b.buf)-OutputTailSize):]
	if n := t.Written - from; n >= 0 && n < int64(len(kept)) {
		kept = kept[int64(len(kept))-n:]
	}
	t.Bytes = append([]byte(nil), kept...)
	return &t
}

// beaten notes that a heartbeat with the output up to written was handed
// to the SDK at at; beats that settled before the last settled one are
// dropped.
func (b *tailBuffer) beaten(at time.Time, written int64, settle time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.beats = append(b.beats, beat{at: at, written: written})
	if i := b.lastSettled(at.Add(-settle)); i > 0 {
		b.beats = b.beats[i:]
	}
}

func (b *tailBuffer) lastSettled(cutoff time.Time) int {
	i := -1
	for j, h := range b.beats {
		if !h.at.After(cutoff) {
			i = j
		}
	}
	return i
}

// unsent is the output after the last heartbeat sure to have reached the
// server by now (see Activities.settle), for the step's result.
func (b *tailBuffer) unsent(settle time.Duration) *OutputTail {
	b.mu.Lock()
	from := int64(0)
	if i := b.lastSettled(time.Now().Add(-settle)); i >= 0 {
		from = b.beats[i].written
	}
	b.mu.Unlock()
	return b.tail(from)
}

// streamView is the worker's view of a step with the output kept for
// the heartbeats.
type streamView struct {
	local.View
	tail *tailBuffer
}

func (v streamView) StepStarted(info local.StepInfo) {
	v.tail.start(info)
	v.View.StepStarted(info)
}

func (v streamView) Output(chunk []byte) {
	v.tail.write(chunk)
	v.View.Output(chunk)
}

// FollowOutput writes to w what the session's running steps print from now on, as the workers report it (a bounded tail per heartbeat), and a line "exited N after T" at each step's end, until ctx ends or the session stops running (paused, completed, failed).
//
// Each byte is written once, in order: a step's output is tracked by
// offset. A step already running when the follow starts is shown from
// what its worker still holds (its last OutputTailSize bytes). Where the
// follower fell more than that behind, one line says how many bytes were
// skipped; the transcript on the worker has them (pipeline logs there).
// Each step starts with a header line and ends with its result, as in the
// plain local view. It returns nil when the session stopped running or
// ctx ended, and an error when the session cannot be found or read.
func (c *Client) FollowOutput(ctx context.Context, id string, w io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if sw := c.watchOf(id); sw != nil {
		if sub, ok := sw.subscribe(ctx); ok {
			// The watch reads the history for both.
			defer sw.unsubscribe(sub)
			f := newFollower(c, id, w, sub.from)
			f.scheduled = sub.pending
			f.seen[sub.from.run] = sub.from.event
			return f.loop(ctx, sub.events, sub.readErr)
		}
	}
	desc, err := c.describe(ctx, id)
	if err != nil {
		return err
	}
	run := desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	f := newFollower(c, id, w, runEvent{run: run, event: desc.GetWorkflowExecutionInfo().GetHistoryLength()})
	events := make(chan historyEvent)
	readErr := make(chan error, 1)
	go func() { readErr <- c.readHistory(ctx, id, run, events) }()
	defer func() {
		cancel()
		for range events {
		}
	}()
	return f.loop(ctx, events, readErr)
}

func newFollower(c *Client, id string, w io.Writer, from runEvent) *follower {
	return &follower{c: c, id: id, w: w, atLineStart: true, steps: map[stepKey]*followedStep{},
		scheduled: map[runEvent]scheduledStep{}, seen: map[string]int64{}, from: from}
}

// stepKey names one step's activity: its run and activity id.
type stepKey struct{ run, activity string }

// runEvent names an event of one run.
type runEvent struct {
	run   string
	event int64
}

// historyEvent is an event of a run's history.
type historyEvent struct {
	run string
	ev  *historypb.HistoryEvent
}

type scheduledStep struct {
	activity, kind string
	// seen is when the follower read that it was scheduled.
	seen time.Time
}

// followedStep is what was written of one step.
type followedStep struct {
	header bool
	ended  bool
	wrote  int64
	info   OutputTail // the last heartbeat's, but Bytes
}

// follower is one FollowOutput's state.
type follower struct {
	c           *Client
	id          string
	w           io.Writer
	atLineStart bool
	err         error
	// from is the history's end when the follow started: steps that
	// ended before are not shown.
	from      runEvent
	steps     map[stepKey]*followedStep
	scheduled map[runEvent]scheduledStep
	// seen is the last event read of each run.
	seen      map[string]int64
	lastQuery time.Time
	// quietUntil: no running step can have sent a heartbeat before then
	// (see quietTill); the server is not asked for them till then.
	quietUntil time.Time
}

// loop takes the history's events as they come and looks at the running
// steps every followPoll, until the session stops running.
func (f *follower) loop(ctx context.Context, events <-chan historyEvent, readErr <-chan error) error {
	ticker := time.NewTicker(followPoll)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-events:
			if !ok {
				// The history ended: the workflow closed.
				return f.result(<-readErr)
			}
			f.event(e)
		case <-ticker.C:
			until, stopped, err := f.look(ctx)
			if err != nil && Transient(err) && ctx.Err() == nil {
				continue // the next look may find the server back
			}
			if err != nil {
				return f.result(err)
			}
			if stopped {
				return f.result(f.drain(ctx, events, until))
			}
		}
		if f.err != nil {
			return f.err
		}
	}
}

func (f *follower) result(err error) error {
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return errors.Join(err, f.err)
}

// drain takes the history's events up to until: the ends of the steps
// before the session stopped.
func (f *follower) drain(ctx context.Context, events <-chan historyEvent, until runEvent) error {
	for f.seen[until.run] < until.event {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-events:
			if !ok {
				return nil
			}
			f.event(e)
		}
	}
	return nil
}

// look writes what the running steps' last heartbeats carry that was not
// written yet. stopped: the session stopped running, its history ending
// at until. The server is asked for the heartbeats only while the
// history shows a step scheduled and not ended for heartbeatQuiet (one
// that ends sooner has its output in its result); else, no more than
// once a statusPoll, whether the session stopped.
func (f *follower) look(ctx context.Context) (until runEvent, stopped bool, err error) {
	said := false // the session said it stopped
	pending, heartbeating := f.stepPending()
	if pending && (!heartbeating || time.Now().Before(f.quietUntil)) {
		return runEvent{}, false, nil
	}
	if !pending {
		if time.Since(f.lastQuery) < statusPoll {
			return runEvent{}, false, nil
		}
		f.lastQuery = time.Now()
		if said = f.stoppedNow(ctx); !said {
			return runEvent{}, false, nil
		}
	}
	desc, err := f.c.describe(ctx, f.id)
	if err != nil {
		return runEvent{}, false, err
	}
	info := desc.GetWorkflowExecutionInfo()
	until = runEvent{run: info.GetExecution().GetRunId(), event: info.GetHistoryLength()}
	if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return until, true, nil
	}
	running := false
	f.quietUntil = quietTill(time.Now(), desc.GetPendingActivities())
	for _, pa := range desc.GetPendingActivities() {
		if kind := pa.GetActivityType().GetName(); kind != ActivityRunStep && kind != ActivityCompact {
			continue
		}
		running = true
		var p Progress
		if pa.GetHeartbeatDetails() == nil || decodeFirst(converter.GetDefaultDataConverter(), pa.GetHeartbeatDetails(), &p) != nil || p.Tail == nil {
			continue
		}
		f.show(stepKey{until.run, pa.GetActivityId()}, p.Tail)
	}
	// A session that said it stopped and runs no step: the history as it
	// stands after the answer holds every step's end before it stopped.
	return until, said && !running, nil
}

// quietTill is the soonest a heartbeat may come from the steps pending
// at now, as a describe shows them: a step sends none before it has run
// for heartbeatQuiet, so one still waiting for a worker sends none before
// now+heartbeatQuiet, one started at T none before T+heartbeatQuiet. On
// a busy fleet a step waits for a worker for seconds, and its follower
// described the workflow every followPoll meanwhile: a hundred runs at
// once made those describes a tenth of the server's work.
func quietTill(now time.Time, pending []*workflowpb.PendingActivityInfo) time.Time {
	var till time.Time
	for _, pa := range pending {
		if kind := pa.GetActivityType().GetName(); kind != ActivityRunStep && kind != ActivityCompact {
			continue
		}
		soonest := now
		switch {
		case pa.GetHeartbeatDetails() != nil:
		case pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_SCHEDULED:
			soonest = now.Add(heartbeatQuiet)
		case pa.GetLastStartedTime() != nil:
			// The server's clock: one ahead of this one delays no more
			// than a step waiting for a worker does.
			started := pa.GetLastStartedTime().AsTime()
			if started.After(now) {
				started = now
			}
			soonest = started.Add(heartbeatQuiet)
		}
		if till.IsZero() || soonest.Before(till) {
			till = soonest
		}
	}
	return till
}

// stepPending tells whether the history read so far shows a step (or a
// compaction turn) scheduled and not ended; heartbeating, whether one of
// them was so for heartbeatQuiet.
func (f *follower) stepPending() (pending, heartbeating bool) {
	for _, s := range f.scheduled {
		if s.kind == ActivityRunStep || s.kind == ActivityCompact {
			pending = true
			heartbeating = heartbeating || time.Since(s.seen) >= heartbeatQuiet
		}
	}
	return pending, heartbeating
}

// stoppedNow asks whether the session is paused, completed or failed
// (Progress: the workflow is queried only when it may have changed since
// the last answer). No answer (no worker polls the queue) is not an answer:
// the follow goes on.
func (f *follower) stoppedNow(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r, err := f.c.Progress(ctx, f.id)
	return err == nil && Stopped(r)
}

// describe describes the session's workflow (its current run).
func (c *Client) describe(ctx context.Context, id string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	desc, err := c.C.DescribeWorkflow(ctx, id, "")
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return nil, fmt.Errorf("%w: %s (namespace %s at %s)", ErrNoSession, id, c.Target.Namespace, c.Target.Address)
	}
	if err != nil {
		return nil, err
	}
	return desc.RawResponse, nil
}

// readHistory reads session id's history from run on, waiting for new
// events, along continue-as-new, until the workflow closes or ctx ends:
// each event goes to events (closed at the end). A server away for a
// while (restarted) is waited for.
func (c *Client) readHistory(ctx context.Context, id, run string, events chan<- historyEvent) error {
	defer close(events)
	last, began := int64(0), time.Now()
	for run != "" {
		next, err := c.readRun(ctx, id, run, &last, began, events)
		if err != nil && !(Transient(err) && ctx.Err() == nil) {
			return err
		}
		if err != nil {
			select {
			case <-time.After(followPoll):
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		run, last = next, 0
	}
	return nil
}

// readRun reads the events of one run after *last, counting them in
// *last; next is the run it continued as, if any. Each long poll
// answers as soon as the run has any new event, and the events of a
// workflow task come in bursts (the task taken, then its commands a few
// milliseconds later, or, on a busy fleet, a second or so later): a poll
// begins no sooner than the reading's gap (historyGap) after the answer
// before it came, so that a burst comes in one answer rather than one
// each. The close of the run is read at most that gap after it.
func (c *Client) readRun(ctx context.Context, id, run string, last *int64, began time.Time, events chan<- historyEvent) (next string, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	closing := c.awaitRunClose(ctx, id, run)
	var token []byte
	var polled time.Time
	for {
		if err := pace(ctx, polled, began, closing); err != nil {
			return "", err
		}
		resp, err := c.pollHistory(ctx, id, run, token)
		if err != nil {
			return "", err
		}
		polled = time.Now()
		for _, ev := range resp.GetHistory().GetEvents() {
			if a := ev.GetWorkflowExecutionContinuedAsNewEventAttributes(); a != nil {
				next = a.GetNewExecutionRunId()
			}
			if ev.GetEventId() <= *last {
				continue // read before the server went away
			}
			select {
			case events <- historyEvent{run, ev}:
				*last = ev.GetEventId()
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		// The run closed and every event of it is read: no token.
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return next, nil
		}
	}
}

// The least time between an answer of a long poll of a run's history
// and the next poll grows with the time the reading has gone on: a tenth of it,
// from historyGapMin to historyGapMax (the run's close, too, is read that
// much later at most: a hundred runs of 10 to 15 s each waited 0.6 s more
// for it with a gap of up to a second). A burst of events (a workflow
// task taken, then its commands) reaches a follower at most that much
// later, in one answer rather than one each; a hundred runs at once asked
// the server for their histories nearly twelve times a pipeline of three
// steps, a third of its requests, each a read of the history and, on the
// dev server, of its search attributes. A session of a second or two is
// followed within historyGapMin; one of five seconds or more, within
// historyGapMax.
const (
	historyGapMin = 150 * time.Millisecond
	historyGapMax = 500 * time.Millisecond
)

// historyGap is the gap between polls of a reading that began at began.
func historyGap(began time.Time) time.Duration {
	return min(max(time.Since(began)/10, historyGapMin), historyGapMax)
}

// historyPollTimeout bounds one long poll: the server answers one with
// no event after about 20 seconds.
const historyPollTimeout = 70 * time.Second

// pace waits until the gap of a reading that began at began has passed
// since polled (the last answer; none when zero), the run closed
// (closing), or ctx ends.
func pace(ctx context.Context, polled, began time.Time, closing <-chan struct{}) error {
	wait := historyGap(began) - time.Since(polled)
	if polled.IsZero() || wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-closing:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// awaitRunClose is closed once session id's run has closed (completed,
// failed, continued as new …), as one long poll of the server for its
// close event says (asked again after the server's long-poll time), or
// never, when that cannot be asked; it stops asking when ctx ends. The
// reading of the history then asks for the last events without the gap:
// a follower learns the session ended at once, for one request more.
func (c *Client) awaitRunClose(ctx context.Context, id, run string) <-chan struct{} {
	closed := make(chan struct{})
	go func() {
		it := c.C.GetWorkflowHistory(ctx, id, run, true, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
		if it.HasNext() {
			if _, err := it.Next(); err == nil {
				close(closed)
			}
		}
	}()
	return closed
}

// pollHistory long-polls the history of session id's run after token:
// the events the server has after it, as soon as there are any (or none
// after its long-poll time), and the token to ask for the next ones (none
// once the run closed and every event of it was answered).
func (c *Client) pollHistory(ctx context.Context, id, run string, token []byte) (*workflowservice.GetWorkflowExecutionHistoryResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, historyPollTimeout)
	defer cancel()
	resp, err := c.C.WorkflowService().GetWorkflowExecutionHistory(ctx, &workflowservice.GetWorkflowExecutionHistoryRequest{
		Namespace: c.Target.WithDefaults().Namespace, Execution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: run},
		NextPageToken: token, WaitNewEvent: true, SkipArchival: true,
		HistoryEventFilterType: enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT})
	if err != nil || len(resp.GetRawHistory()) == 0 {
		return resp, err
	}
	// A server that sends histories raw (frontend.sendRawWorkflowHistory):
	// batches of events, each encoded as the server stores it.
	resp.History = &historypb.History{}
	for _, blob := range resp.GetRawHistory() {
		if blob.GetEncodingType() != enumspb.ENCODING_TYPE_PROTO3 {
			return nil, fmt.Errorf("session %s: the server sent its history encoded as %v, which this client does not read", id, blob.GetEncodingType())
		}
		var batch historypb.History
		if err := proto.Unmarshal(blob.GetData(), &batch); err != nil {
			return nil, fmt.Errorf("session %s: its history as the server sent it: %w", id, err)
		}
		resp.History.Events = append(resp.History.Events, batch.GetEvents()...)
	}
	return resp, nil
}

// Transient tells whether err is the server away or busy for a while (a
// restart, a loaded frontend): the caller may try again.
func Transient(err error) bool {
	var unavailable *serviceerror.Unavailable
	var deadline *serviceerror.DeadlineExceeded
	var exhausted *serviceerror.ResourceExhausted
	return errors.As(err, &unavailable) || errors.As(err, &deadline) || errors.As(err, &exhausted) ||
		errors.Is(err, context.DeadlineExceeded)
}

// event takes one event of the history: a step scheduled, or its end.
func (f *follower) event(h historyEvent) {
	ev := h.ev
	e := runEvent{h.run, ev.GetEventId()}
	f.seen[e.run] = e.event
	if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
		f.scheduled[e] = scheduledStep{activity: a.GetActivityId(), kind: a.GetActivityType().GetName(), seen: time.Now()}
		return
	}
	scheduledID, ended := endOf(ev)
	if !ended {
		return
	}
	s, ok := f.scheduled[runEvent{e.run, scheduledID}]
	delete(f.scheduled, runEvent{e.run, scheduledID})
	if !ok || (s.kind != ActivityRunStep && s.kind != ActivityCompact) {
		return
	}
	if e.run == f.from.run && e.event <= f.from.event {
		return // ended before the follow started
	}
	f.ended(stepKey{e.run, s.activity}, s.kind, ev)
}

// endOf tells whether ev ends an activity, and which (its scheduled
// event).
func endOf(ev *historypb.HistoryEvent) (int64, bool) {
	switch {
	case ev.GetActivityTaskCompletedEventAttributes() != nil:
		return ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId(), true
	case ev.GetActivityTaskFailedEventAttributes() != nil:
		return ev.GetActivityTaskFailedEventAttributes().GetScheduledEventId(), true
	case ev.GetActivityTaskTimedOutEventAttributes() != nil:
		return ev.GetActivityTaskTimedOutEventAttributes().GetScheduledEventId(), true
	case ev.GetActivityTaskCanceledEventAttributes() != nil:
		return ev.GetActivityTaskCanceledEventAttributes().GetScheduledEventId(), true
	}
	return 0, false
}

// ended writes the rest of a step's output, as its result carries it,
// and how it ended.
func (f *follower) ended(key stepKey, kind string, ev *historypb.HistoryEvent) {
	s := f.step(key)
	if s.ended {
		return
	}
	a := ev.GetActivityTaskCompletedEventAttributes()
	switch {
	case a == nil:
		f.line("== " + describeGone(s.info, ev))
	case kind == ActivityCompact:
		var out CompactOutput
		if decodeFirst(converter.GetDefaultDataConverter(), a.GetResult(), &out) == nil && out.Tail != nil {
			f.show(key, out.Tail)
		}
		f.line("== compaction turn ended")
	default:
		var out StepOutput
		if err := decodeFirst(converter.GetDefaultDataConverter(), a.GetResult(), &out); err != nil {
			f.line("== a step ended; its result cannot be read: " + err.Error())
			break
		}
		if out.Tail != nil {
			f.show(key, out.Tail)
		}
		f.line("== " + describeEnd(s.info.Step, out.Result))
	}
	s.ended = true
}

func (f *follower) step(key stepKey) *followedStep {
	s, ok := f.steps[key]
	if !ok {
		s = &followedStep{}
		f.steps[key] = s
	}
	return s
}

// show writes what tail holds of the step's output that was not written
// yet, after its header the first time.
func (f *follower) show(key stepKey, tail *OutputTail) {
	s := f.step(key)
	if s.ended {
		return
	}
	s.info = *tail
	s.info.Bytes = nil
	if !s.header {
		s.header = true
		f.line("== " + describeStart(tail))
	}
	if start := tail.Offset(); start > s.wrote {
		f.line(fmt.Sprintf("== %d bytes of the output skipped here (more than the last %d KiB the worker holds came since the follow last looked, "+
			"or before it started); pipeline logs on the worker %s has them", start-s.wrote, OutputTailSize>>10, tail.Worker))
		s.wrote = start
	}
	if tail.Written > s.wrote {
		f.write(tail.Bytes[s.wrote-tail.Offset():])
		s.wrote = tail.Written
	}
}

// line writes a line of the follower's own, on a line of its own.
func (f *follower) line(text string) {
	if !f.atLineStart {
		f.write([]byte{'\n'})
	}
	f.write([]byte(text + "\n"))
}

func (f *follower) write(b []byte) {
	if len(b) == 0 || f.err != nil {
		return
	}
	if _, err := f.w.Write(b); err != nil {
		f.err = err
	}
	f.atLineStart = b[len(b)-1] == '\n'
}

// describeStart is a step's header line, as the plain local view has it,
// with the worker.
func describeStart(t *OutputTail) string {
	what := ""
	if t.What != "" {
		what = " · " + t.What
	}
	if t.Step == "" {
		return fmt.Sprintf("compaction turn · on %s", t.Worker)
	}
	return fmt.Sprintf("phase %d/%d %s · step %s · attempt %d%s · on %s", t.PhaseIndex+1, t.Phases, t.Phase, t.Step, t.Attempt, what, t.Worker)
}

// describeEnd is a step's end line, as the plain local view has it.
func describeEnd(step string, r engine.StepResult) string {
	var how string
	switch {
	case r.Stopped:
		how = "stopped"
	case r.TimedOut:
		how = "timed out"
	default:
		how = fmt.Sprintf("exited %d", r.ExitCode)
	}
	name := "step " + step
	if step == "" {
		name = "the step"
	}
	line := fmt.Sprintf("%s %s after %s", name, how, r.Elapsed.Round(time.Millisecond))
	if r.Tokens > 0 {
		line += fmt.Sprintf(" · %d tokens", r.Tokens)
	}
	if r.CostUSD > 0 {
		line += fmt.Sprintf(" · $%.4f", r.CostUSD)
	}
	return line
}

// describeGone says how a step's activity ended without a result.
func describeGone(t OutputTail, ev *historypb.HistoryEvent) string {
	name := "step " + t.Step
	if t.Step == "" {
		name = "the step"
	}
	switch {
	case ev.GetActivityTaskTimedOutEventAttributes() != nil:
		return fmt.Sprintf("%s: its worker %s stopped answering (%s); the session runs it again or pauses", name, t.Worker,
			ev.GetActivityTaskTimedOutEventAttributes().GetFailure().GetMessage())
	case ev.GetActivityTaskFailedEventAttributes() != nil:
		return fmt.Sprintf("%s: the worker could not run it: %s", name, ev.GetActivityTaskFailedEventAttributes().GetFailure().GetMessage())
	}
	return name + " was cancelled before it ended"
}
