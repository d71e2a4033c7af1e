//go:build temporal

package main

import (
	"context"

	"github.com/pipeline-dev/pipeline/app"
	fleetapp "github.com/pipeline-dev/pipeline/app/fleet"
	fleettarget "github.com/pipeline-dev/pipeline/engine/fleet"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// In the build with the Temporal backend, the dashboard reaches the
// fleets its fleet sessions run on: it shows where they stand there, and
// acts on them through the fleet.
func init() {
	uiFleet = func(ctx context.Context, f store.Fleet) (app.Backend, error) {
		return fleetapp.Dial(ctx, fleettarget.Target{Address: f.Address, Namespace: f.Namespace, TaskQueue: f.TaskQueue}, 0)
	}
}
