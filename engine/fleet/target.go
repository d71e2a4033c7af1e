// Package fleet names a Temporal fleet: its server, namespace and task
// queue, and their defaults. It stands apart from engine/temporal and
// imports nothing of the Temporal SDK, so that the local pipeline binary
// can choose a fleet (flags, environment, the backend: block) and hand
// the command to pipeline-temporal without linking the SDK, gRPC and
// protobuf, whose package init every local command would pay.
package fleet

// The defaults of a Target.
const (
	DefaultAddress   = "127.0.0.1:7233"
	DefaultNamespace = "default"
	DefaultTaskQueue = "pipeline"
)

// Target is the Temporal server, namespace and task queue of a fleet.
type Target struct {
	Address   string
	Namespace string
	TaskQueue string
}

// WithDefaults fills what is not set.
func (t Target) WithDefaults() Target {
	if t.Address == "" {
		t.Address = DefaultAddress
	}
	if t.Namespace == "" {
		t.Namespace = DefaultNamespace
	}
	if t.TaskQueue == "" {
		t.TaskQueue = DefaultTaskQueue
	}
	return t
}
