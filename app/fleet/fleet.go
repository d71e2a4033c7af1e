//go:build temporal

// Package fleet is the product's session operations on a Temporal fleet
// (--backend temporal): the session is a workflow whose id is the
// session's id, its state lives in the workflow, its steps run on
// pipeline worker processes. It is the fleet's side of app.Backend; only
// the build with the Temporal backend (-tags temporal, pipeline-temporal)
// imports it, so that the local binary links nothing of the Temporal SDK.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/temporal"
)

// Poll is how soon a caller following a session asks it again where it
// stands after a change; while nothing changes the wait grows by half
// each time, up to PollMax. Every question is a query a worker answers:
// a hundred runs asking four times a second kept two workers busy
// answering (make bench's fleet figures, see README).
const (
	Poll    = 250 * time.Millisecond
	PollMax = time.Second
)

// Backend is a Temporal fleet the session operations act on.
type Backend struct {
	Client *temporal.Client
	// Heartbeat is backend.heartbeat_timeout of phases.yaml (0: the
	// workflow's default).
	Heartbeat time.Duration
}

// Dial connects to the fleet's server.
func Dial(ctx context.Context, t temporal.Target, heartbeat time.Duration) (*Backend, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	c, err := temporal.NewClient(ctx, t)
	if err != nil {
		return nil, err
	}
	return &Backend{Client: c, Heartbeat: heartbeat}, nil
}

// Close closes the connection.
func (b *Backend) Close() { b.Client.Close() }

// Where names the fleet in messages.
func (b *Backend) Where() string {
	t := b.Client.Target
	return fmt.Sprintf("namespace %s, task queue %s at %s", t.Namespace, t.TaskQueue, t.Address)
}

// FlagsLine is how the fleet is named on a command line a message
// suggests: the flags that were not the defaults.
func (b *Backend) FlagsLine() string {
	line := " --backend temporal"
	t := b.Client.Target
	if t.Address != temporal.DefaultAddress {
		line += " --temporal " + app.ShellQuote(t.Address)
	}
	if t.Namespace != temporal.DefaultNamespace {
		line += " --namespace " + app.ShellQuote(t.Namespace)
	}
	if t.TaskQueue != temporal.DefaultTaskQueue {
		line += " --task-queue " + app.ShellQuote(t.TaskQueue)
	}
	return line
}

// Plan reads the pipeline as it is sent to workers: phases.yaml and its
// spec with absolute paths (workers run steps in the folder of
// phases.yaml), and the key of (pipeline, spec).
func Plan(p app.Pipeline) (temporal.PlanSource, string, error) {
	file, err := filepath.Abs(p.File)
	if err != nil {
		return temporal.PlanSource{}, "", err
	}
	specPath := p.Spec
	if specPath != "" {
		if specPath, err = filepath.Abs(specPath); err != nil {
			return temporal.PlanSource{}, "", err
		}
	}
	src, err := temporal.ReadPlanSource(file, specPath)
	if err != nil {
		return temporal.PlanSource{}, "", err
	}
	return src, temporal.Key(src.File, src.Spec), nil
}

// latest finds the newest session of key whose status is one of
// statuses (any when none).
func (b *Backend) latest(ctx context.Context, key string, statuses ...engine.Status) (string, engine.StatusReport, error) {
	list, err := b.Client.List(ctx, "")
	if err != nil {
		return "", engine.StatusReport{}, err
	}
	for _, s := range list {
		if s.Key != key {
			continue
		}
		r, err := b.Client.Status(ctx, s.ID)
		if err != nil {
			return "", r, err
		}
		if len(statuses) == 0 || slices.Contains(statuses, engine.Status(r.Status)) {
			return s.ID, r, nil
		}
	}
	return "", engine.StatusReport{}, nil
}

// Session names the session an operation acts on: id, or the newest of
// the pipeline and spec with one of statuses; and where it stands.
func (b *Backend) Session(ctx context.Context, p app.Pipeline, id string, statuses ...engine.Status) (string, engine.StatusReport, error) {
	if id != "" {
		r, err := b.Client.Status(ctx, id)
		if errors.Is(err, temporal.ErrNoSession) {
			return "", r, app.Usagef("%v; pipeline sessions%s lists them", err, b.FlagsLine())
		}
		return id, r, err
	}
	_, key, err := Plan(p)
	if err != nil {
		return "", engine.StatusReport{}, err
	}
	id, r, err := b.latest(ctx, key, statuses...)
	if err != nil || id != "" {
		return id, r, err
	}
	what := "no session"
	if len(statuses) > 0 {
		what = "no " + string(statuses[0])
		for _, s := range statuses[1:] {
			what += " or " + string(s)
		}
		what += " session"
	}
	return "", r, app.Usagef("%s of %s on the Temporal fleet (%s); start one with: pipeline run%s%s", what, p.File, b.Where(), fileArg(p), b.FlagsLine())
}

func fileArg(p app.Pipeline) string {
	if p.File != app.DefaultFile {
		return " " + app.ShellQuote(p.File)
	}
	return ""
}

// Interventions counts a report's human interventions: a resume is
// taken, or a pause, once the count grows past what it was before.
func Interventions(r engine.StatusReport) int { return temporal.Interventions(r) }

// Stopped tells whether a report is of a session that stopped.
func Stopped(r engine.StatusReport) bool { return temporal.Stopped(r) }

// refused is a refusal of the fleet: exit 2 with the message.
func refused(format string, args ...any) error {
	return &session.RefusedError{Message: fmt.Sprintf(format, args...)}
}

var _ app.Backend = (*Backend)(nil)
