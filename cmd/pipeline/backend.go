package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	temporalfleet "github.com/pipeline-dev/pipeline/engine/fleet"
	"github.com/pipeline-dev/pipeline/engine/spec"
)

// The session commands choose their backend here, in either build; what
// they do on a fleet is in fleet.go (with app/fleet) and worker.go, built
// with the temporal tag into pipeline-temporal, and in the build without
// it, handoff.go runs pipeline-temporal with the same command line. So
// the local binary links nothing of the Temporal SDK, gRPC or protobuf
// (see README, "Two binaries").

// backendFlags choose where a session command acts: here (local), or on
// a Temporal fleet.
type backendFlags struct {
	kind   string
	target temporalfleet.Target
}

func addBackendFlags(cmd *cobra.Command) *backendFlags {
	f := &backendFlags{}
	cmd.Flags().StringVar(&f.kind, "backend", "", "where sessions run: local or temporal (default $PIPELINE_BACKEND, else backend.kind of phases.yaml, else local)")
	cmd.Flags().StringVar(&f.target.Address, "temporal", "", "the Temporal frontend, HOST:PORT; implies --backend temporal (default $PIPELINE_TEMPORAL, else backend.address, else "+temporalfleet.DefaultAddress+")")
	cmd.Flags().StringVar(&f.target.Namespace, "namespace", "", "the Temporal namespace (default $PIPELINE_TEMPORAL_NAMESPACE, else backend.namespace, else "+temporalfleet.DefaultNamespace+")")
	cmd.Flags().StringVar(&f.target.TaskQueue, "task-queue", "", "the task queue of the workers (default $PIPELINE_TEMPORAL_TASK_QUEUE, else backend.task_queue, else "+temporalfleet.DefaultTaskQueue+")")
	return f
}

// fleet is the Temporal backend a command acts on, when it is chosen.
type fleet struct {
	target temporalfleet.Target
	// heartbeat is backend.heartbeat_timeout of phases.yaml (0: the
	// workflow's default).
	heartbeat time.Duration
}

// resolve chooses the backend (app.ChooseBackend). nil: local. plan,
// when the command loaded it, is read for the backend: block; otherwise
// file is read for it, and a file that cannot be read or has problems
// gives no block (the command reports it, if it needs the file).
func (f *backendFlags) resolve(file string, plan *spec.Plan) (*fleet, error) {
	var block spec.Backend
	if plan != nil {
		block = plan.Backend.Value
	} else if written := (app.Pipeline{File: file}).BackendBlock(); written != nil {
		block = *written
	}
	chosen, err := app.ChooseBackend(app.BackendChoice{Kind: f.kind, Flags: f.target, Block: block})
	if chosen == nil || err != nil {
		return nil, err
	}
	return &fleet{target: chosen.Target, heartbeat: chosen.Heartbeat}, nil
}

// followOptions are how run and resume show a session they follow on the
// fleet.
type followOptions struct {
	json, quiet, failOnPause bool
}

// chosen is the Backend of fl, as resolve chose it: the local one (nil),
// or the fleet's, dialled (closed by the caller), with the flags of cmd
// it does not take (notOnFleet) refused.
func (fl *fleet) chosen(cmd *cobra.Command, notOnFleet ...string) (app.Backend, error) {
	if fl == nil {
		return app.Local{}, nil
	}
	if err := refuseOnFleet(cmd, notOnFleet...); err != nil {
		return nil, err
	}
	return fl.backend(cmd)
}

// backend is the Backend a command that acts alike on both calls: the
// local one, or the fleet's, dialled (in the build without the Temporal
// backend, choosing the fleet hands the command line to
// pipeline-temporal, and returns only when that cannot be done). fl is
// the fleet, nil for local.
func (f *backendFlags) backend(cmd *cobra.Command, file string) (_ app.Backend, fl *fleet, _ error) {
	fl, err := f.resolve(file, nil)
	if err != nil || fl == nil {
		return app.Local{}, nil, err
	}
	b, err := fl.backend(cmd)
	return b, fl, err
}
