// The runtime's periodic check of the CPU limit of the process's cgroup
// is off in the local binary: GOMAXPROCS is still set from the limit at
// start (the containermaxprocs default), but nothing looks again. A run
// lasts milliseconds to hours at a fixed limit, and the check cost every
// process a goroutine made before main (the wake-up of a sleeping thread
// to run it) and, in the runtime's monitor thread, a sched_getaffinity
// and a read of the cgroup's files at its first look and every second
// after. The Temporal worker (pipeline-temporal), a long-lived process
// that may see its limit change, keeps the check.

//go:build !temporal

//go:debug updatemaxprocs=0

package main
