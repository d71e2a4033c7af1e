package app

import (
	"os"
	"time"

	"github.com/pipeline-dev/pipeline/engine/fleet"
	"github.com/pipeline-dev/pipeline/engine/spec"
)

// BackendChoice is what a session command was told of its backend:
// --backend (Kind), the fleet's flags (--temporal, --namespace,
// --task-queue), and the backend: block of phases.yaml.
type BackendChoice struct {
	Kind  string
	Flags fleet.Target
	Block spec.Backend
}

// ChosenFleet is the Temporal fleet a command acts on, when it is
// chosen: its target, and backend.heartbeat_timeout of phases.yaml (0:
// the workflow's default).
type ChosenFleet struct {
	Target    fleet.Target
	Heartbeat time.Duration
}

// ChooseBackend chooses the backend: each setting from the flag, else
// the environment, else the backend: block, else the default; the kind
// from --backend, else --temporal (temporal), else PIPELINE_BACKEND, else
// PIPELINE_TEMPORAL (temporal), else backend.kind, else local. nil:
// local.
func ChooseBackend(req BackendChoice) (*ChosenFleet, error) {
	kind := req.Kind
	switch {
	case kind != "":
	case req.Flags.Address != "":
		kind = spec.BackendTemporal
	case os.Getenv("PIPELINE_BACKEND") != "":
		kind = os.Getenv("PIPELINE_BACKEND")
	case os.Getenv("PIPELINE_TEMPORAL") != "":
		kind = spec.BackendTemporal
	case req.Block.Kind != "":
		kind = req.Block.Kind
	default:
		kind = spec.BackendLocal
	}
	switch kind {
	case spec.BackendLocal:
		if req.Flags.Address != "" || req.Flags.Namespace != "" || req.Flags.TaskQueue != "" {
			return nil, Usagef("--temporal, --namespace and --task-queue are for the temporal backend; this command runs with the local one (--backend local or PIPELINE_BACKEND=local)")
		}
		return nil, nil
	case spec.BackendTemporal:
	default:
		return nil, Usagef("backend %q is not a backend: use local or temporal (from --backend, or PIPELINE_BACKEND)", kind)
	}
	chosen := &ChosenFleet{Target: FleetTarget(req.Flags, req.Block)}
	if req.Block.HeartbeatTimeout != nil {
		chosen.Heartbeat = time.Duration(*req.Block.HeartbeatTimeout)
	}
	return chosen, nil
}

// FleetTarget is the fleet that flags name, each setting not given read
// from the environment (PIPELINE_TEMPORAL, PIPELINE_TEMPORAL_NAMESPACE,
// PIPELINE_TEMPORAL_TASK_QUEUE), else from the backend: block, else the
// default.
func FleetTarget(flags fleet.Target, block spec.Backend) fleet.Target {
	t := flags
	for _, v := range []struct {
		to         *string
		env, block string
	}{{&t.Address, "PIPELINE_TEMPORAL", block.Address}, {&t.Namespace, "PIPELINE_TEMPORAL_NAMESPACE", block.Namespace},
		{&t.TaskQueue, "PIPELINE_TEMPORAL_TASK_QUEUE", block.TaskQueue}} {
		if *v.to == "" {
			*v.to = os.Getenv(v.env)
		}
		if *v.to == "" {
			*v.to = v.block
		}
	}
	return t.WithDefaults()
}
