package temporal

import (
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// TestQuietTillWaitsForTheSoonestHeartbeat: a follower asks the server
// for a step's heartbeats no sooner than the step can have sent one: a
// step waiting for a worker heartbeatQuiet from now, a started one
// heartbeatQuiet after its start (a server clock ahead of this one counts
// as now), one that has sent heartbeats at once; the soonest step
// decides, and activities that are not steps (hooks) do not count.
func TestQuietTillWaitsForTheSoonestHeartbeat(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	step := func(state enumspb.PendingActivityState, started time.Duration, beat bool) *workflowpb.PendingActivityInfo {
		pa := &workflowpb.PendingActivityInfo{ActivityType: &commonpb.ActivityType{Name: ActivityRunStep}, State: state}
		if state == enumspb.PENDING_ACTIVITY_STATE_STARTED {
			pa.LastStartedTime = timestamppb.New(now.Add(started))
		}
		if beat {
			pa.HeartbeatDetails = &commonpb.Payloads{Payloads: []*commonpb.Payload{{Data: []byte("{}")}}}
		}
		return pa
	}
	scheduled := step(enumspb.PENDING_ACTIVITY_STATE_SCHEDULED, 0, false)
	hooks := &workflowpb.PendingActivityInfo{ActivityType: &commonpb.ActivityType{Name: ActivityRunHooks}, State: enumspb.PENDING_ACTIVITY_STATE_STARTED,
		LastStartedTime: timestamppb.New(now)}
	for _, tc := range []struct {
		name    string
		pending []*workflowpb.PendingActivityInfo
		want    time.Time
	}{
		{"no step", []*workflowpb.PendingActivityInfo{hooks}, time.Time{}},
		{"waiting for a worker", []*workflowpb.PendingActivityInfo{scheduled, hooks}, now.Add(heartbeatQuiet)},
		{"started a moment ago", []*workflowpb.PendingActivityInfo{step(enumspb.PENDING_ACTIVITY_STATE_STARTED, -300*time.Millisecond, false)}, now.Add(heartbeatQuiet - 300*time.Millisecond)},
		{"started long ago", []*workflowpb.PendingActivityInfo{step(enumspb.PENDING_ACTIVITY_STATE_STARTED, -time.Hour, false)}, now.Add(heartbeatQuiet - time.Hour)},
		{"started by a clock ahead", []*workflowpb.PendingActivityInfo{step(enumspb.PENDING_ACTIVITY_STATE_STARTED, time.Hour, false)}, now.Add(heartbeatQuiet)},
		{"heartbeating", []*workflowpb.PendingActivityInfo{scheduled, step(enumspb.PENDING_ACTIVITY_STATE_STARTED, 0, true)}, now},
	} {
		if got := quietTill(now, tc.pending); !got.Equal(tc.want) {
			t.Errorf("%s: quiet till %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestLoopbackAddresses: the addresses of a server on this machine (no
// gzip to it) and of one elsewhere.
func TestLoopbackAddresses(t *testing.T) {
	for address, want := range map[string]bool{
		"127.0.0.1:7233": true, "localhost:7233": true, "[::1]:7233": true, "127.0.0.2:7233": true,
		"10.0.0.5:7233": false, "temporal.internal:7233": false, "127.0.0.1": false, "": false,
	} {
		if got := loopback(address); got != want {
			t.Errorf("loopback(%q) = %v, want %v", address, got, want)
		}
	}
}

// TestHistoryGapGrowsWithTheReadingsAge: a reading just begun polls
// historyGapMin apart, one of a few seconds a tenth of its age apart, a
// long one historyGapMax apart.
func TestHistoryGapGrowsWithTheReadingsAge(t *testing.T) {
	now := time.Now()
	if got := historyGap(now); got != historyGapMin {
		t.Errorf("a reading just begun: gap %v, want %v", got, historyGapMin)
	}
	if got := historyGap(now.Add(-3 * time.Second)); got < 300*time.Millisecond || got > 400*time.Millisecond {
		t.Errorf("a reading of 3 s: gap %v, want a tenth of its age (300 ms, a little more as the test runs)", got)
	}
	if got := historyGap(now.Add(-time.Hour)); got != historyGapMax {
		t.Errorf("a reading of an hour: gap %v, want %v", got, historyGapMax)
	}
}
