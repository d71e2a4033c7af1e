package temporal

import (
	"os"
	"path/filepath"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

// ReadPlanSource reads phases.yaml at file and its spec (specPath, or
// the one phases.yaml names), as spec.Load would, with their paths made
// absolute. The client calls it; the workflow gets what it read.
func ReadPlanSource(file, specPath string) (PlanSource, error) {
	file, err := filepath.Abs(file)
	if err != nil {
		return PlanSource{}, err
	}
	if specPath != "" {
		if specPath, err = filepath.Abs(specPath); err != nil {
			return PlanSource{}, err
		}
	}
	plan, err := spec.Load(file, specPath)
	if err != nil {
		return PlanSource{}, err
	}
	src := PlanSource{File: file, Spec: plan.Spec, Digest: plan.Digest}
	if src.YAML, err = os.ReadFile(file); err != nil {
		return PlanSource{}, err
	}
	if plan.Spec != "" {
		if src.SpecText, err = os.ReadFile(plan.Spec); err != nil {
			return PlanSource{}, err
		}
	}
	return src, nil
}
