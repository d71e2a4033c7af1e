package app

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/steps"
)

// ValidateRequest names the files to check: phases.yaml files, or .md
// specs (their frontmatter); none: DefaultFile.
type ValidateRequest struct {
	Files []string `json:"files,omitempty"`
	// Spec, when set, is the spec each phases.yaml is checked with, in
	// place of the one it names (as run --spec runs it).
	Spec string `json:"spec,omitempty"`
	// Preflight checks the agent CLIs each pipeline uses too, as doctor
	// does: a pipeline whose CLIs cannot run is not valid.
	Preflight bool `json:"preflight,omitempty"`
}

// ValidateResponse is `pipeline validate -o json`.
type ValidateResponse struct {
	Valid bool         `json:"valid"`
	Files []Validation `json:"files"`
}

// Validation is the outcome for one file.
type Validation struct {
	File     string         `json:"file"`
	Valid    bool           `json:"valid"`
	Phases   int            `json:"phases,omitempty"`
	Spec     string         `json:"spec,omitempty"`
	Problems []spec.Problem `json:"problems"`
	// Warnings do not make the file invalid (see spec.Plan.Warnings).
	Warnings []spec.Problem `json:"warnings,omitempty"`
	// Omitted counts the problems past the 100 kept for one file.
	Omitted int `json:"omitted,omitempty"`
	// Agents are the checks of a preflight (pipeline doctor's), when the
	// request asked for them.
	Agents []steps.CLICheck `json:"agents,omitempty"`
	// Err is the error the problems came from, for a surface that
	// prints it whole (with its source lines and carets).
	Err error `json:"-"`
	// Plan is the file's plan, when it is a valid phases.yaml.
	Plan *spec.Plan `json:"-"`
}

// Validate checks each file and reports every problem found, each at its
// file, line and column. It never fails: an invalid file is a response.
func Validate(ctx context.Context, req ValidateRequest) *ValidateResponse {
	files := req.Files
	if len(files) == 0 {
		files = []string{DefaultFile}
	}
	out := &ValidateResponse{Valid: true, Files: make([]Validation, 0, len(files))}
	r := environmentRedactor()
	for _, file := range files {
		v := validateFile(file, req.Spec)
		plan, err := v.Plan, v.Err
		v.Plan, v.Err = nil, nil // not shown, and not for a deep copy
		v = redacted(r, v)
		v.Plan, v.Err = plan, err
		if req.Preflight && plan != nil {
			v.Agents = AgentChecks(ctx, plan)
			v.Valid = v.Valid && ChecksOK(v.Agents)
		}
		out.Valid = out.Valid && v.Valid
		out.Files = append(out.Files, v)
	}
	return out
}

func validateFile(file, specPath string) Validation {
	r := Validation{File: file, Problems: []spec.Problem{}}
	var err error
	if strings.EqualFold(filepath.Ext(file), ".md") {
		_, err = spec.LoadSpec(file)
	} else {
		var plan *spec.Plan
		if plan, err = spec.Load(file, specPath); err == nil {
			r.Phases, r.Spec, r.Plan, r.Warnings = len(plan.Phases), plan.Spec, plan, plan.Warnings
		}
	}
	var specErr *spec.Error
	switch {
	case err == nil:
	case errors.As(err, &specErr):
		r.Problems, r.Omitted = specErr.Problems, specErr.Omitted
	case errors.Is(err, fs.ErrNotExist) && filepath.Base(file) == DefaultFile:
		r.Problems = []spec.Problem{{Position: spec.Position{File: file}, Message: err.Error(), Hint: NoPipelineHint}}
	default:
		r.Problems = []spec.Problem{{Position: spec.Position{File: file}, Message: err.Error()}}
	}
	r.Err = err
	r.Valid = err == nil
	return r
}
