package app

import (
	"errors"
	"fmt"

	"github.com/pipeline-dev/pipeline/engine/fleet"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// StatusOnFleet is the status this store gives a session that runs on a
// Temporal fleet: its copy here holds what its steps wrote on this
// machine, never where it stands, which only the fleet knows.
const StatusOnFleet = "fleet"

// FleetCommand is the command line that acts on a fleet session from
// here: pipeline VERB --backend temporal, the fleet's address, namespace
// and task queue when they are not the defaults, then the session.
func FleetCommand(verb string, f store.Fleet, id string) string {
	line := "pipeline " + verb + " --backend temporal"
	if f.Address != "" && f.Address != fleet.DefaultAddress {
		line += " --temporal " + ShellQuote(f.Address)
	}
	if f.Namespace != "" && f.Namespace != fleet.DefaultNamespace {
		line += " --namespace " + ShellQuote(f.Namespace)
	}
	if f.TaskQueue != "" && f.TaskQueue != fleet.DefaultTaskQueue {
		line += " --task-queue " + ShellQuote(f.TaskQueue)
	}
	return line + " " + id
}

// onFleet refuses a command that acts on a session's state here when the
// session runs on a fleet: it would act on a copy without that state (a
// local resume ran a fleet session again from its first phase). verb
// names the command, and why says what it would need.
func onFleet(meta store.Meta, verb, why string) error {
	f := meta.OnFleet()
	if f == nil {
		return nil
	}
	return &Error{Code: ExitUsage,
		Message: fmt.Sprintf("session %s runs on %s, not here: %s", meta.ID, f.Where(), why),
		Hint:    "use: " + FleetCommand(verb, *f, meta.ID)}
}

// refuseOnFleet is onFleet for the session id of the store, when id names
// one; an id the store cannot resolve is left to the operation to report.
func refuseOnFleet(st *store.Store, id, verb, why string) error {
	if id == "" {
		// The latest session of a pipeline is never a fleet session's
		// copy: those have a key of their own (store.FleetKey).
		return nil
	}
	meta, err := st.Find(id)
	if err != nil {
		return nil
	}
	return onFleet(meta, verb, why)
}

// Why each local-only operation cannot act on a fleet session.
const (
	whyResume   = "its state is in its workflow there, and a resume here would run it again from what this copy holds"
	whyPause    = "its step runs on a worker of the fleet, which only the fleet can stop"
	whyComplete = "its state is in its workflow there; mark it there, or let it end"
	whyRewind   = "rewind sets a session back in this store, and a fleet session's state is in its workflow there"
	whyCopy     = "this store holds only what its steps wrote on this machine, not its events, which are in its workflow there"
	whyMemory   = "its working set is in its workflow there, and a change made here would not reach its next step"
)

// errFleetReadOnly is the refusal of export, fork, replay and diff.
func errFleetReadOnly(ref *session.Ref, verb string) error {
	f := ref.X.Meta.OnFleet()
	if f == nil {
		return nil
	}
	err := onFleet(ref.X.Meta, "status", fmt.Sprintf("%s needs the session's events, and %s", verb, whyCopy))
	var e *Error
	if errors.As(err, &e) {
		e.Hint = "see where it stands with: " + FleetCommand("status", *f, ref.X.Meta.ID)
	}
	return err
}
