package main

// fleetBinary is the build of pipeline with the Temporal backend (go
// build -tags temporal): the client of --backend temporal and pipeline
// worker. The build people run for local work hands those commands to it
// (handoff.go), so that no local command pays the package init of the
// Temporal SDK, gRPC and protobuf.
const fleetBinary = "pipeline-temporal"

// handedOffEnv marks a process that a pipeline without the Temporal
// backend started as its pipeline-temporal: if that process has no
// Temporal backend either (a copy of the local build under that name),
// it says so instead of starting itself again, forever.
const handedOffEnv = "PIPELINE_HANDED_OFF"
