// Package temporal is the fleet driver: Temporal as a second driver of
// the same core. A session is a workflow (SessionWorkflow) that calls the
// pure engine.Decide on each event and carries out its actions: a step is
// an activity (Activities.RunStep) that runs the step through the same
// local.StepRunner as the local driver, a back-off is a workflow timer,
// a pause waits for the resume signal, status is a query answered by
// engine.Report. Retries, restarts and escalation come from phases.yaml
// through Decide; Temporal's own activity retry is off (one attempt), so
// that the two never compound. See docs/architecture.md, "Temporal
// driver".
package temporal
