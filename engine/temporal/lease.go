package temporal

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

// A run that starts a session of a pipeline and spec on the fleet first
// takes the run lease of that (pipeline, spec): a workflow whose id is
// the pair's key, started with the conflict policy FAIL, so that the
// server itself lets one run start a session of the pair at a time; two
// runs in the same second cannot both start one. The lease closes by
// itself after RunLeaseTime, by the server's timer (no worker is needed
// for that): by then the list of open workflows, which the server
// answers eventually, shows the session, and a later run finds it there.
// A lease whose session has stopped is taken over at once.
//
// The lease's first workflow task is delayed past its timeout
// (StartDelay), so no worker ever takes one: a lease costs the server a
// workflow started and timed out, and the workers nothing. (Before, each
// lease was a workflow task that set a timer, on the same workers and
// task queue as the sessions: a hundred runs at once were a hundred tasks
// more for them; a worker still registers RunLeaseWorkflow for the
// leases of such older clients.)

// RunLeaseType is the lease workflow's type, as workers register it.
const RunLeaseType = "RunLease"

// RunLeaseTime is how long a lease holds: far longer than the server
// takes to list a workflow it started.
const RunLeaseTime = time.Minute

// RunLeaseWorkflow is the lease: it does nothing but stay open.
func RunLeaseWorkflow(ctx workflow.Context) error {
	return workflow.Sleep(ctx, RunLeaseTime)
}

// runLeaseID is the lease's workflow id for the key of (pipeline, spec).
func runLeaseID(key string) string { return "pipeline-run-lease-" + key }

// RunLease is a held lease: the session it was taken for.
type RunLease struct {
	Session string
	runID   string
}

// TakeRunLease takes the run lease of key for session id: taken is the
// lease, or held is the lease another run holds (its session) when the
// server refused it; the caller decides whether that lease is stale
// (ReleaseRunLease).
func (c *Client) TakeRunLease(ctx context.Context, key, id string) (taken, held *RunLease, err error) {
	run, err := c.C.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: runLeaseID(key), TaskQueue: c.Target.TaskQueue,
		Memo:                     map[string]any{"session": id},
		WorkflowExecutionTimeout: RunLeaseTime,
		StartDelay:               RunLeaseTime + time.Minute,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		// Without it the SDK answers a conflict with the running lease,
		// as if this one had been taken.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}, RunLeaseType)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err == nil {
		return &RunLease{Session: id, runID: run.GetRunID()}, nil, nil
	}
	if !errors.As(err, &started) {
		return nil, nil, err
	}
	desc, err := c.C.DescribeWorkflow(ctx, runLeaseID(key), "")
	if err != nil {
		return nil, nil, fmt.Errorf("the run lease of this pipeline is held, and cannot be read: %w", err)
	}
	info := desc.RawResponse.GetWorkflowExecutionInfo()
	held = &RunLease{runID: info.GetExecution().GetRunId()}
	if p, ok := info.GetMemo().GetFields()["session"]; ok {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &held.Session)
	}
	return nil, held, nil
}

// ReleaseRunLease ends a lease whose session has stopped (paused,
// completed, failed), or that was taken for a session that could not
// start, so that a run may take it; it ends that lease only, never one
// taken since.
func (c *Client) ReleaseRunLease(ctx context.Context, key string, l *RunLease) error {
	err := c.C.TerminateWorkflow(ctx, runLeaseID(key), l.runID, "its session stopped")
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return nil // closed already
	}
	return err
}
