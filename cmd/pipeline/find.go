package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

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
	if id == "" {
		// None of this pipeline and spec: say what starts one.
		if last, err := session.Latest(st, session.KeyOf(st, o.File, o.Plan), statuses...); err == nil && last == nil {
			what := "no session"
			if len(statuses) > 0 {
				names := make([]string, len(statuses))
				for i, s := range statuses {
					names[i] = string(s)
				}
				what = "no " + strings.Join(names, " or ") + " session"
			}
			of := flags.file
			if flags.spec != "" {
				of += " with spec " + flags.spec
			}
			return nil, usagef("%s of %s in %s; start one with: %s (or name one: pipeline sessions lists them)", what, of, st.Root, flags.runLine())
		}
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
	plan, err := loadPlan(flags.file, flags.spec)
	if err != nil {
		return o, err
	}
	o.Plan = plan
	return o, nil
}

// loadPlan loads the plan of the pipeline at file with the spec given by
// --spec (relative to the current folder, as every path on the command
// line; a spec: in phases.yaml is relative to phases.yaml's folder). A
// --spec that is not there says relative to what, and names the file it
// may have meant.
func loadPlan(file, specFlag string) (*spec.Plan, error) {
	if specFlag != "" {
		if _, err := os.Stat(specFlag); errors.Is(err, fs.ErrNotExist) {
			wd, _ := os.Getwd()
			msg := fmt.Sprintf("--spec %s: no such file in the current folder (%s); a --spec path is relative to the current folder, a spec: in phases.yaml to phases.yaml's folder", specFlag, wd)
			if beside := filepath.Join(filepath.Dir(file), specFlag); !filepath.IsAbs(specFlag) && beside != specFlag {
				if _, err := os.Stat(beside); err == nil {
					msg += fmt.Sprintf("; did you mean --spec %s?", beside)
				}
			}
			return nil, usagef("%s", msg)
		}
	}
	return spec.Load(file, specFlag)
}
