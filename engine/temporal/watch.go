package temporal

// A follower of a session (run and resume until the session stops) asks
// where it stands every few hundred milliseconds. Asked of the workflow,
// each answer is a query the server routes to a worker, which answers
// between its workflow tasks: a hundred followers asking kept two
// workers and the server busy with little else, and under load the
// queries timed out and were asked again (see make bench's fleet
// figures). So the workflow publishes its Headline in its history as it
// changes (a marker), and a watch reads it from the history as the server pushes
// it (one long poll): while the session runs, following it asks no
// worker. Once it says it stopped, the full report is asked of the
// workflow, and asked again only after a workflow task completed since
// (its state changes only then); once the workflow closed, the report is
// the one its history holds, as the watch read it (no describe, no second
// reading). A watch of a session its client started reads the run that
// start made, without asking which run is current.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"

	"github.com/pipeline-dev/pipeline/engine"
)

// sessionWatch follows one session's history for the status answers of
// a Client (see Client.Watch).
type sessionWatch struct {
	c      *Client
	id     string
	cancel context.CancelFunc
	// done is closed when the reading stopped: the workflow closed, or
	// err; ready once the first events are read, or done.
	done  chan struct{}
	ready chan struct{}
	once  sync.Once

	mu sync.Mutex
	// decided counts the workflow tasks completed (over all runs) read
	// so far; read is whether the first page of history has been read.
	decided int
	read    bool
	closed  bool
	stopped bool
	err     error
	// headline is the last the workflow published, nil before the first
	// (or from a workflow that publishes none).
	headline *Headline
	// at is the last event read; pending, the activities scheduled and
	// not ended; subs, the output follows that take the events from here
	// on (see subscribe).
	at      runEvent
	pending map[runEvent]scheduledStep
	subs    []*subscription
	// answer is the last status answer, asked when decided was answered.
	answer   *engine.StatusReport
	answered int
	// ending reads the run being read for the report of the session
	// once its workflow closes; final is that report (nil when it could
	// not be had from the history read).
	ending *runReader
	final  *engine.StatusReport
}

// Watch starts following session id's history for Progress (and
// AwaitEnd) until the workflow closes or the client closes; a second
// Watch of the same session shares the first.
func (c *Client) Watch(id string) {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	if _, ok := c.watches[id]; ok {
		return
	}
	if c.watches == nil {
		c.watches = map[string]*sessionWatch{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &sessionWatch{c: c, id: id, cancel: cancel, done: make(chan struct{}), ready: make(chan struct{})}
	c.watches[id] = w
	go w.follow(ctx)
}

// watchOf is the watch of session id, nil when none.
func (c *Client) watchOf(id string) *sessionWatch {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	return c.watches[id]
}

// stopWatches ends every watch and waits for their readers.
func (c *Client) stopWatches() {
	c.watchMu.Lock()
	watches := c.watches
	c.watches = nil
	c.watchMu.Unlock()
	for _, w := range watches {
		w.cancel()
		<-w.done
	}
}

// follow reads the history, along continue-as-new, until the workflow
// closes or ctx ends.
func (w *sessionWatch) follow(ctx context.Context) {
	defer close(w.done)
	defer w.once.Do(func() { close(w.ready) })
	run, err := w.currentRun(ctx)
	if err != nil {
		w.stop(err)
		return
	}
	events := make(chan historyEvent)
	readErr := make(chan error, 1)
	go func() { readErr <- w.c.readHistory(ctx, w.id, run, events) }()
	for e := range events {
		for _, sub := range w.take(e) {
			sub.send(e)
		}
		w.once.Do(func() { close(w.ready) })
	}
	err = <-readErr
	if err == nil {
		final := w.finalReport()
		w.mu.Lock()
		w.closed, w.final = true, final
		w.mu.Unlock()
	}
	w.stop(err)
}

// currentRun is the run whose history the watch reads first: the one
// this client started, else the current one, as the server describes it.
func (w *sessionWatch) currentRun(ctx context.Context) (string, error) {
	if run := w.c.takeStartedRun(w.id); run != "" {
		return run, nil
	}
	desc, err := w.c.describe(ctx, w.id)
	if err != nil {
		return "", err
	}
	return desc.GetWorkflowExecutionInfo().GetExecution().GetRunId(), nil
}

// readEnd keeps, of the run being read, what the session's report needs
// once the workflow closes: its input, the plans its resumes carried,
// how it closed (see History.Report).
func (w *sessionWatch) readEnd(ev *historypb.HistoryEvent) {
	switch {
	case ev.GetWorkflowExecutionStartedEventAttributes() != nil:
		w.ending = &runReader{h: &History{ID: w.id}, first: true, dc: converter.GetDefaultDataConverter()}
		if w.ending.take(ev) != nil {
			w.ending = nil
		}
	case ev.GetActivityTaskScheduledEventAttributes() != nil, ev.GetActivityTaskCompletedEventAttributes() != nil:
		// The steps: not in the report.
	case w.ending != nil:
		_ = w.ending.take(ev)
	}
}

// finalReport is the report of the workflow that closed, from its
// history as the watch read it; nil when that cannot be had (the caller
// then asks the server).
func (w *sessionWatch) finalReport() *engine.StatusReport {
	w.mu.Lock()
	r := w.ending
	w.mu.Unlock()
	if r == nil || !r.h.Closed {
		return nil
	}
	h := *r.h
	h.Input, h.Plan = r.input, r.input.Plan
	if len(r.plans) > 0 {
		h.Plan = r.plans[len(r.plans)-1]
	}
	report, err := h.Report()
	if err != nil {
		return nil
	}
	return &report
}

// take reads one event, and returns the subscriptions to send it to.
func (w *sessionWatch) take(e historyEvent) []*subscription {
	w.mu.Lock()
	defer w.mu.Unlock()
	ev := e.ev
	w.read = true
	w.at = runEvent{e.run, ev.GetEventId()}
	w.readEnd(ev)
	if w.pending == nil {
		w.pending = map[runEvent]scheduledStep{}
	}
	if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
		w.pending[w.at] = scheduledStep{activity: a.GetActivityId(), kind: a.GetActivityType().GetName(), seen: time.Now()}
	} else if scheduled, ended := endOf(ev); ended {
		delete(w.pending, runEvent{e.run, scheduled})
	}
	if ev.GetWorkflowTaskCompletedEventAttributes() != nil {
		w.decided++
	}
	if h := headlineIn(ev); h != nil {
		w.headline = h
	}
	return w.live()
}

// sideEffectMarker is the name of the SDK's SideEffect markers.
const sideEffectMarker = "SideEffect"

// headlineIn is the headline ev publishes, nil when none: a side effect
// marker of a HeadlineMarker, or (a run from before those) a memo upsert.
func headlineIn(ev *historypb.HistoryEvent) *Headline {
	dc := converter.GetDefaultDataConverter()
	if a := ev.GetMarkerRecordedEventAttributes(); a != nil && a.GetMarkerName() == sideEffectMarker {
		var m HeadlineMarker
		if decodeFirst(dc, a.GetDetails()["data"], &m) == nil {
			return m.Headline
		}
	}
	if a := ev.GetWorkflowPropertiesModifiedEventAttributes(); a != nil {
		if p, ok := a.GetUpsertedMemo().GetFields()[MemoHeadline]; ok {
			var h Headline
			if dc.FromPayload(p, &h) == nil {
				return &h
			}
		}
	}
	return nil
}

// live drops the subscriptions whose follow ended, and returns the rest.
func (w *sessionWatch) live() []*subscription {
	kept := w.subs[:0]
	for _, sub := range w.subs {
		if sub.ctx.Err() == nil {
			kept = append(kept, sub)
		}
	}
	w.subs = kept
	return append([]*subscription(nil), kept...)
}

// stop notes why the reading stopped, and ends the subscriptions.
func (w *sessionWatch) stop(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if err != nil && !errors.Is(err, context.Canceled) {
		w.err = err
	}
	for _, sub := range w.subs {
		sub.readErr <- err
		close(sub.events)
	}
	w.subs = nil
}

// subscription is an output follow's share of a watch: the events read
// after from, and the steps pending at from.
type subscription struct {
	ctx     context.Context
	events  chan historyEvent
	readErr chan error
	from    runEvent
	pending map[runEvent]scheduledStep
}

func (s *subscription) send(e historyEvent) {
	select {
	case s.events <- e:
	case <-s.ctx.Done():
	}
}

// subscribe shares the watch's reading with an output follow (until ctx
// ends), so that one run asks the server for its session's history
// once: the follow gets where the history is and the steps pending
// there, then every event after. ok false: the watch has stopped.
func (w *sessionWatch) subscribe(ctx context.Context) (sub *subscription, ok bool) {
	select {
	case <-w.ready:
	case <-ctx.Done():
		return nil, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || w.closed || w.err != nil || !w.read {
		return nil, false
	}
	sub = &subscription{ctx: ctx, events: make(chan historyEvent), readErr: make(chan error, 1), from: w.at,
		pending: make(map[runEvent]scheduledStep, len(w.pending))}
	for e, s := range w.pending {
		sub.pending[e] = s
	}
	w.subs = append(w.subs, sub)
	return sub, true
}

// unsubscribe ends sub's share: no event is sent to it after.
func (w *sessionWatch) unsubscribe(sub *subscription) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, s := range w.subs {
		if s == sub {
			w.subs = append(w.subs[:i], w.subs[i+1:]...)
			return
		}
	}
}

// status answers from the watch: while the headline says the session
// runs, a report of the headline's fields; else the last answer of the
// workflow while no workflow task completed since. A workflow no worker
// has taken up yet is not asked: its query would wait for a worker, and
// a follower that asks again would only add to the queue; it answers an
// error that says so, which a follower shows only if it lasts. ok false: the
// watch cannot tell (it failed, or the workflow closed), and the caller
// asks the server itself.
func (w *sessionWatch) status(ctx context.Context) (r engine.StatusReport, ok bool, err error) {
	select {
	case <-w.ready:
	case <-ctx.Done():
		return r, true, ctx.Err()
	}
	w.mu.Lock()
	if w.final != nil {
		// Closed: the report is the history's, as Status would read it
		// again from the server.
		r := *w.final
		w.mu.Unlock()
		return r, true, nil
	}
	usable, decided, answer := w.read && !w.closed && w.err == nil, w.decided, w.answer
	if h := w.headline; usable && h != nil && !Stopped(engine.StatusReport{Status: h.Status}) {
		w.mu.Unlock()
		return engine.StatusReport{ID: w.id, Status: h.Status, Phase: h.Phase, Step: h.Step, Attempt: h.Attempt}, true, nil
	}
	// A workflow that publishes its headline does so in its first task;
	// before that is read (a moment after the task completed), nothing
	// is asked. One that publishes none (a worker of an older version)
	// is asked from its second task on.
	if usable && w.headline == nil && decided < 2 {
		w.mu.Unlock()
		return r, true, fmt.Errorf("session %s: no worker has taken it up yet (is a pipeline worker polling task queue %s?)", w.id, w.c.Target.TaskQueue)
	}
	if usable && answer != nil && w.answered == decided {
		w.mu.Unlock()
		return *answer, true, nil
	}
	w.mu.Unlock()
	if !usable {
		return r, false, nil
	}
	if r, err = w.c.queryStatus(ctx, w.id); err != nil {
		return r, true, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// Taken at decided or later: it holds at least until the next
	// workflow task completes.
	if w.answer == nil || w.answered <= decided {
		w.answer, w.answered = &r, decided
	}
	return r, true, nil
}

// awaitClose returns once the watch stopped: nil when the workflow
// closed, else why it stopped following (then the caller asks the
// server itself).
func (w *sessionWatch) awaitClose(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-w.done:
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	if w.err != nil {
		return w.err
	}
	return context.Canceled
}

// Progress is where session id stands, for a follower that asks again
// and again until it stops: while it runs, a report of its Headline only
// (status, phase, step, attempt: nothing else is filled in), read from
// its Watch with no call to the server; once it stopped, or when there
// is no watch or it cannot tell yet, Status.
func (c *Client) Progress(ctx context.Context, id string) (engine.StatusReport, error) {
	if w := c.watchOf(id); w != nil {
		if r, ok, err := w.status(ctx); ok {
			return r, err
		}
	}
	return c.Status(ctx, id)
}
