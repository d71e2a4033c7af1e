//go:build temporal

package temporal_test

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/temporal"
	"github.com/pipeline-dev/pipeline/internal/temporaltest"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// A session whose client asks for the workflow's changes in its input
// (SessionInput.Changes, as run does) records no version marker, and so
// no upsert of the TemporalChangeVersion search attribute (a write of
// the server's visibility store): the input holds its version. It has
// the changes all the same: its headline in side effect markers (no
// memo upsert, another visibility write), its checkpoint and memory
// intake as local activities. Its history replays (kept in testdata as
// changes-in-input.json with PIPELINE_TEMPORAL_RECORD_EFFECTS set). A
// session started without Changes (by an older client) records one
// version marker and one upsert for all the changes it has, not one of
// each per change; that history replays too (headline-marker.json), and
// so do those recorded with a marker per change, and with the headline
// in the memo, in TestReplayRecordedHistories; there too,
// changes-asked-of-an-older-worker.json, one-version-marker.json with
// Changes 2 in its input: a worker that read no Changes recorded version
// 1, and a replay takes the marker over the input; and
// changes-asked-of-a-worker-before-them.json, three-version-markers.json
// with Changes 2: a worker from before the one marker for all the
// changes recorded one per change, which a replay takes.
func TestANewSessionRecordsItsVersionOnce(t *testing.T) {
	s := temporaltest.StartDevServer(t)
	f := startFleet(t, s)
	for _, c := range []struct {
		name            string
		changes         workflow.Version
		markers, upsert int
	}{
		{"changes-in-input", temporal.SessionChanges, 0, 0},
		{"headline-marker", 0, 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testwait.Failsafe)
			defer cancel()
			id, run := f.sessionAsking(t, "version: 1\nphases:\n  - name: build\n    steps: [{name: one, run: \"echo one\"}]\n", c.changes)
			var end engine.State
			if err := run.Get(ctx, &end); err != nil || end.Status != engine.StatusCompleted {
				t.Fatalf("the session ended %s (%v); want it completed", end.Status, err)
			}
			counts := historyCounts(ctx, t, f.client.C, id)
			if counts["Version"] != c.markers || counts["search attributes upserted"] != c.upsert || counts["memo upserted"] != 0 || counts["SideEffect"] == 0 || counts["LocalActivity"] == 0 {
				t.Fatalf("the history has %v; want %d version markers and %d search attribute upserts, the headline in side effect markers (no memo upsert) and local activities", counts, c.markers, c.upsert)
			}
			replayHistory(t, f.client.C, staticRun{id: id, runID: run.GetRunID()}, c.name)
		})
	}
}

// sessionAsking starts a session of yamlText whose input asks for the
// changes of version changes (0: none asked).
func (f *fleet) sessionAsking(t *testing.T, yamlText string, changes workflow.Version) (string, client.WorkflowRun) {
	t.Helper()
	src := sourceIn(t, yamlText)
	now := time.Now()
	id := session.NewSessionID(now)
	in := temporal.SessionInput{SessionID: id, Plan: src, Created: now, Changes: changes,
		Events: []temporal.EventRecord{temporal.MustRecord(engine.Started{At: now})}}
	if err := f.client.Start(context.Background(), in, temporal.Memo{File: src.File, Key: temporal.Key(src.File, "")}); err != nil {
		t.Fatal(err)
	}
	return id, f.client.C.GetWorkflow(context.Background(), id, "")
}

// historyCounts counts the markers of session id's history by name, and
// its search attribute and memo upserts.
func historyCounts(ctx context.Context, t *testing.T, c client.Client, id string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	it := c.GetWorkflowHistory(ctx, id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		switch ev.GetEventType() {
		case enums.EVENT_TYPE_MARKER_RECORDED:
			counts[ev.GetMarkerRecordedEventAttributes().GetMarkerName()]++
		case enums.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			counts["search attributes upserted"]++
		case enums.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
			counts["memo upserted"]++
		}
	}
	return counts
}

// staticRun names a workflow run, for replayHistory.
type staticRun struct {
	client.WorkflowRun
	id, runID string
}

func (r staticRun) GetID() string    { return r.id }
func (r staticRun) GetRunID() string { return r.runID }
