// Package proctest helps tests that check that processes are gone.
//
// AwaitExit waits for an event from the kernel, not in a polling loop: a
// pidfd on Linux (proctest_linux.go), a kqueue on macOS and the BSDs
// (proctest_kqueue.go). Both see a process exit when it dies, before its
// parent reaps it.
package proctest

import "github.com/pipeline-dev/pipeline/internal/testwait"

// failsafe is how long AwaitExit waits before it fails the test: never how
// it learns of an exit, only how a process that does not end is reported.
const failsafe = testwait.Failsafe
