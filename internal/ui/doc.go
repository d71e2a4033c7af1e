// Package ui is pipeline's web dashboard (pipeline ui): an HTTP API over
// the product's one API (package app) for the sessions of every pipeline
// below a folder, server-sent events when a session changes, the actions
// (pause, resume at a phase, complete, pin, add or close a task, rewind,
// fork) a button asks for, and the pages that use
// them, plain HTML, CSS and JavaScript embedded in the binary. It stays
// fast with a large history: the sessions page asks for one page of rows,
// the listing is kept until a store changes, and each session's timeline
// (its phases, attempts and steps on the wall clock) is read from its
// event log when its page asks. Sessions that run on a Temporal fleet are
// listed from the local stores, and reached through a FleetBackend when
// the binary has one.
//
// Safety: a page's POST must carry the server's token (X-Pipeline-Token,
// which only its own pages hold) and come from its own origin; a server on
// another address than loopback asks for an access token on every request.
package ui
