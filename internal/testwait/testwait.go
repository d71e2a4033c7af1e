// Package testwait holds what the tests share about waiting.
//
// A test learns that something happened from an event: a line of output,
// a channel, a pidfd, an fsnotify event, a lock the kernel drops. It
// never sleeps for a while and hopes. Every such wait still has an end,
// Failsafe, so that a test that would hang fails and says what it waited
// for.
package testwait

import "time"

// Failsafe bounds a wait for an event. It is never how a test learns that
// the event came, only how one whose event never comes fails: long enough
// that no busy machine reaches it (2 cores and four CPU-bound loops beside
// go test -race), short enough to come before go test's -timeout ends the
// whole test binary without saying which wait hung.
const Failsafe = 3 * time.Minute
