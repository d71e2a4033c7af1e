//go:build temporal

package temporal_test

import (
	"context"
	"testing"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/internal/temporaltest"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// A new session's workflow records one version marker, and so one
// upsert of the TemporalChangeVersion search attribute (a write of the
// server's visibility store), for all the changes it has, not one of
// each per change; it has them all: it publishes its headline in side
// effect markers (no memo upsert, another visibility write), and its
// checkpoint and memory intake run as local activities. Its history
// replays (kept in testdata as headline-marker.json with
// PIPELINE_TEMPORAL_RECORD_EFFECTS set); the histories recorded with a
// marker per change, and with the headline in the memo
// (one-version-marker.json), replay in TestReplayRecordedHistories.
func TestANewSessionRecordsOneVersionMarker(t *testing.T) {
	s := temporaltest.StartDevServer(t)
	f := startFleet(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Failsafe)
	defer cancel()
	id, _ := f.session(t, "version: 1\nphases:\n  - name: build\n    steps: [{name: one, run: \"echo one\"}]\n")
	run := f.client.C.GetWorkflow(ctx, id, "")
	var end engine.State
	if err := run.Get(ctx, &end); err != nil || end.Status != engine.StatusCompleted {
		t.Fatalf("the session ended %s (%v); want it completed", end.Status, err)
	}
	counts := map[string]int{}
	it := f.client.C.GetWorkflowHistory(ctx, id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
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
	if counts["Version"] != 1 || counts["search attributes upserted"] != 1 || counts["memo upserted"] != 0 || counts["SideEffect"] == 0 || counts["LocalActivity"] == 0 {
		t.Fatalf("the history has %v; want one version marker and one search attribute upsert, the headline in side effect markers (no memo upsert) and local activities", counts)
	}
	replayHistory(t, f.client.C, staticRun{id: id, runID: run.GetRunID()}, "headline-marker")
}

// staticRun names a workflow run, for replayHistory.
type staticRun struct {
	client.WorkflowRun
	id, runID string
}

func (r staticRun) GetID() string    { return r.id }
func (r staticRun) GetRunID() string { return r.runID }
