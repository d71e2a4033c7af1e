package main

// The fleet's stalls: the workflow tasks and activities of a round that
// timed out. Each costs its pipeline the task's timeout (10 s for a
// workflow task, 30 s for a step's heartbeat), a round with one loses a
// fifth to a third of its pipelines/s, so every round says whether it had
// one and in which sessions; -fleet-stall-logs keeps what it takes to
// find out why.

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

var fleetStallLogs = flag.String("fleet-stall-logs", "", "a folder where each fleet round that had a timed-out task keeps its workers' logs and the histories of the sessions that had one")

// stalled is one session whose history has a task that timed out.
type stalled struct {
	session string
	events  []*historypb.HistoryEvent
}

// timedOut counts the tasks of a history that timed out or failed.
func timedOut(events []*historypb.HistoryEvent) int {
	n := 0
	for _, ev := range events {
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED, enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
			n++
		}
	}
	return n
}

// longestTask is the longest a workflow task of a history took from
// the server's start to its completion: the margin the task timeout
// (temporal.SessionTaskTimeout) leaves a worker that got its task.
func longestTask(events []*historypb.HistoryEvent) time.Duration {
	started := map[int64]time.Time{}
	var longest time.Duration
	for _, ev := range events {
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			started[ev.GetEventId()] = ev.GetEventTime().AsTime()
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			if at, ok := started[ev.GetWorkflowTaskCompletedEventAttributes().GetStartedEventId()]; ok {
				longest = max(longest, ev.GetEventTime().AsTime().Sub(at))
			}
		}
	}
	return longest
}

// stallLine says whether the round stalled: the timed-out tasks by kind
// and the sessions they were in.
func (f *historyFigures) stallLine() string {
	longest := fmt.Sprintf("; the longest workflow task, started → completed: %v", f.longestTask.Round(time.Millisecond))
	if len(f.stalled) == 0 {
		return "stalls: none (no workflow task or activity timed out)" + longest
	}
	kinds := make([]string, 0, len(f.timeouts))
	for kind, n := range f.timeouts {
		kinds = append(kinds, fmt.Sprintf("%d %s", n, strings.TrimPrefix(kind, "EVENT_TYPE_")))
	}
	slices.Sort(kinds)
	ids := make([]string, len(f.stalled))
	for i, s := range f.stalled {
		ids[i] = s.session
	}
	return fmt.Sprintf("stalls: %s, in sessions %s", strings.Join(kinds, ", "), strings.Join(ids, ", ")) + longest
}

// keepStalls copies the workers' logs of a round that stalled, the
// server's (its output), and the
// stalled sessions' histories (JSON, as temporal workflow show --output
// json prints them), from the round's folder dir to a folder of
// -fleet-stall-logs; it returns that folder ("" when nothing was kept).
func keepStalls(dir string, f historyFigures, server string) string {
	if *fleetStallLogs == "" || len(f.stalled) == 0 {
		return ""
	}
	keep := filepath.Join(*fleetStallLogs, filepath.Base(filepath.Dir(dir))+"-"+filepath.Base(dir))
	check(os.MkdirAll(keep, 0o755))
	logs, err := filepath.Glob(filepath.Join(dir, "worker-*.log"))
	check(err)
	for _, log := range logs {
		check(copyFile(log, filepath.Join(keep, filepath.Base(log))))
	}
	check(os.WriteFile(filepath.Join(keep, "server.log"), []byte(server), 0o644))
	for _, s := range f.stalled {
		history, err := protojson.MarshalOptions{Multiline: true}.Marshal(&historypb.History{Events: s.events})
		check(err)
		check(os.WriteFile(filepath.Join(keep, s.session+".json"), history, 0o644))
	}
	return keep
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
