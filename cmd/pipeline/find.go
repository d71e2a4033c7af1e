package main

import (
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
)

// findSession finds the session id, or else the latest session of the
// pipeline and spec of flags with one of statuses, for reading.
func findSession(flags *storeFlags, id string, statuses ...engine.Status) (*session.Ref, error) {
	return flags.pipeline(nil).FindSession(id, statuses...)
}

// options names a session for the session service: by id, or by the
// pipeline and spec of flags, whose plan is loaded.
func (flags *storeFlags) options(id string, statuses ...engine.Status) (session.Options, error) {
	return flags.pipeline(nil).SessionOptions(id, statuses...)
}
