package main

import (
	"errors"
	"os"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
)

// findSession finds the session id, or else the latest session of the
// pipeline and spec of flags with one of statuses, for reading.
func findSession(flags *storeFlags, id string, statuses ...engine.Status) (*session.Ref, error) {
	st, err := flags.existing()
	if err != nil {
		return nil, err
	}
	o, err := flags.options(id, statuses...)
	if err != nil {
		return nil, err
	}
	return session.Find(st, o)
}

// options names a session for the session service: by id, or by the
// pipeline and spec of flags, whose plan is loaded.
func (flags *storeFlags) options(id string, statuses ...engine.Status) (session.Options, error) {
	o := session.Options{File: flags.file, ID: id, Statuses: statuses}
	if id != "" {
		return o, nil
	}
	if _, err := os.Stat(flags.file); err != nil {
		return o, usagef("%s: %v; run this from the pipeline's folder, pass --file, or name a session (pipeline sessions lists them)",
			flags.file, errors.Unwrap(err))
	}
	plan, err := spec.Load(flags.file, flags.spec)
	if err != nil {
		return o, err
	}
	o.Plan = plan
	return o, nil
}
