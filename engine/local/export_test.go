package local

import "github.com/pipeline-dev/pipeline/engine"

// TapFirings hands tap, for each run of d, the way the step executor
// delivers a live trigger's firing to the run's loop.
func TapFirings(d *Driver, tap func(put func(engine.TriggerFired))) { d.tapFirings = tap }
