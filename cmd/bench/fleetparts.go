package main

// The fleet's figures per part: where each pipeline's seconds went, from
// its workflow's history (each event's time, on the server's clock, which
// is this machine's) and the bench's own clock around pipeline run; and
// the CPU time of the dev server, the workers and the clients.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/pipeline-dev/pipeline/engine/temporal"
)

// The parts of one fleet pipeline's life, in the order they come.
const (
	partClientStart = iota // exec of pipeline run → its workflow started
	partTaskWait           // workflow tasks: scheduled → a worker took it
	partTaskRun            // workflow tasks: taken → completed (deciding, local activities)
	partActWait            // activities: scheduled → a worker took it
	partActRun             // activities: taken → completed (the step)
	partOther              // the rest of the workflow's life
	partClientEnd          // the workflow closed → pipeline run exited
	nParts
)

var partNames = [nParts]string{
	"client: exec → workflow started",
	"workflow tasks: scheduled → taken",
	"workflow tasks: taken → completed",
	"activities: scheduled → taken",
	"activities: taken → completed",
	"workflow: the rest, start to close",
	"client: workflow closed → exit",
}

// historyFigures is what the histories of the fleet's sessions say.
type historyFigures struct {
	workflows []time.Duration // start to close
	parts     [nParts][]time.Duration
	counts    [5][]int // workflow tasks, activities, markers, memo upserts, events
	// timeouts counts the workflow tasks and activities that timed out,
	// by event type: each is seconds of a pipeline's wall time.
	timeouts map[string]int
	// firstTimeout says what the first of them was.
	firstTimeout string
	// stalled are the sessions that had them.
	stalled []stalled
	// longestTask is the longest workflow task of them all (longestTask).
	longestTask time.Duration
}

// describeTimeout says what timed out: the event, its failure, and the
// events of the task it ends (when, and which worker took it).
func describeTimeout(ev *historypb.HistoryEvent, events []*historypb.HistoryEvent) string {
	out := fmt.Sprintf("%v at %s", ev.GetEventType(), ev.GetEventTime().AsTime().Format("15:04:05.000"))
	var scheduled, started int64
	if a := ev.GetActivityTaskTimedOutEventAttributes(); a != nil {
		out += ": " + a.GetFailure().GetMessage()
		scheduled, started = a.GetScheduledEventId(), a.GetStartedEventId()
	}
	if a := ev.GetWorkflowTaskTimedOutEventAttributes(); a != nil {
		out += ": " + a.GetTimeoutType().String()
		scheduled, started = a.GetScheduledEventId(), a.GetStartedEventId()
	}
	for _, e := range events {
		if id := e.GetEventId(); id == scheduled || id == started {
			identity := e.GetActivityTaskStartedEventAttributes().GetIdentity() + e.GetWorkflowTaskStartedEventAttributes().GetIdentity()
			out += fmt.Sprintf("; %v at %s %s", e.GetEventType(), e.GetEventTime().AsTime().Format("15:04:05.000"), identity)
		}
	}
	return out
}

// workflowTimes reads the history of each run's session.
func workflowTimes(address string, runs []pipelineRun) historyFigures {
	var f historyFigures
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := temporal.NewClient(ctx, temporal.Target{Address: address})
	if err != nil {
		return f
	}
	defer c.Close()
	for _, r := range runs {
		id := sessionOf(r.out)
		if id == "" {
			continue
		}
		events, err := historyEvents(ctx, c, id)
		if err != nil || len(events) == 0 {
			continue
		}
		f.take(r, events)
		f.longestTask = max(f.longestTask, longestTask(events))
		if timedOut(events) > 0 {
			f.stalled = append(f.stalled, stalled{session: id, events: events})
		}
	}
	return f
}

func historyEvents(ctx context.Context, c *temporal.Client, id string) ([]*historypb.HistoryEvent, error) {
	var out []*historypb.HistoryEvent
	it := c.C.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// take adds one pipeline's run and the events of its workflow.
func (f *historyFigures) take(r pipelineRun, events []*historypb.HistoryEvent) {
	var n [5]int
	var p [nParts]time.Duration
	at := map[int64]time.Time{} // scheduled and started events, by id
	for _, ev := range events {
		t := ev.GetEventTime().AsTime()
		at[ev.GetEventId()] = t
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			p[partTaskWait] += t.Sub(at[ev.GetWorkflowTaskStartedEventAttributes().GetScheduledEventId()])
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			n[0]++
			p[partTaskRun] += t.Sub(at[ev.GetWorkflowTaskCompletedEventAttributes().GetStartedEventId()])
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			n[1]++
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			p[partActWait] += t.Sub(at[ev.GetActivityTaskStartedEventAttributes().GetScheduledEventId()])
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			p[partActRun] += t.Sub(at[ev.GetActivityTaskCompletedEventAttributes().GetStartedEventId()])
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			n[2]++
		case enumspb.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
			n[3]++
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED, enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
			if f.timeouts == nil {
				f.timeouts = map[string]int{}
			}
			f.timeouts[ev.GetEventType().String()]++
			if f.firstTimeout == "" {
				f.firstTimeout = describeTimeout(ev, events)
			}
		}
	}
	n[4] = len(events)
	started, closed := events[0].GetEventTime().AsTime(), events[len(events)-1].GetEventTime().AsTime()
	if !isClose(events[len(events)-1].GetEventType()) {
		return
	}
	life := closed.Sub(started)
	f.workflows = append(f.workflows, life)
	p[partClientStart] = started.Sub(r.start)
	p[partClientEnd] = r.start.Add(r.took).Sub(closed)
	p[partOther] = life - p[partTaskWait] - p[partTaskRun] - p[partActWait] - p[partActRun]
	for i := range p {
		f.parts[i] = append(f.parts[i], p[i])
	}
	for i := range n {
		f.counts[i] = append(f.counts[i], n[i])
	}
}

func isClose(t enumspb.EventType) bool {
	switch t {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
		return true
	}
	return false
}

// countsLine is the median of each count of the histories.
func (f *historyFigures) countsLine() string {
	if len(f.counts[4]) == 0 {
		return ""
	}
	median := func(v []int) int { v = slices.Clone(v); slices.Sort(v); return v[len(v)/2] }
	line := fmt.Sprintf("%d workflow tasks, %d activities, %d markers (local activities, versions, headlines), %d memo upserts, %d events",
		median(f.counts[0]), median(f.counts[1]), median(f.counts[2]), median(f.counts[3]), median(f.counts[4]))
	if len(f.timeouts) > 0 {
		line += fmt.Sprintf("; in all the histories: %v, the first: %s", f.timeouts, f.firstTimeout)
	}
	return line
}

// printParts prints where a pipeline's time went, part by part: the
// median and p99 over the pipelines, and the part's share of the sum of
// their wall times.
func (f *historyFigures) printParts(runs []pipelineRun) {
	if len(f.parts[0]) == 0 {
		return
	}
	var total time.Duration
	for _, r := range runs {
		total += r.took
	}
	fmt.Printf("\nper part, over the pipelines (the sum of each part is a share of the sum of the wall times):\n")
	fmt.Printf("   %-40s %9s %9s %7s\n", "", "p50", "p99", "share")
	for i, name := range partNames {
		var sum time.Duration
		for _, d := range f.parts[i] {
			sum += d
		}
		s := sorted(f.parts[i])
		fmt.Printf("   %-40s %9s %9s %6.1f%%\n", name, ms(pct(s, 50)), ms(pct(s, 99)), 100*sum.Seconds()/total.Seconds())
	}
}

// cpuTime is the user and system time process pid has used so far, its
// waited-for children's included, from /proc.
func cpuTime(pid int) time.Duration {
	content, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The fields after the command's name, which is in parentheses.
	fields := strings.Fields(string(content[strings.LastIndexByte(string(content), ')')+1:]))
	var ticks int64
	for _, i := range []int{11, 12, 13, 14} { // utime stime cutime cstime
		if i < len(fields) {
			v, _ := strconv.ParseInt(fields[i], 10, 64)
			ticks += v
		}
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}
