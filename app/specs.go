package app

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

// ExpandSpecs is the specs the --spec flags name, each glob expanded (in
// order, each once). A glob that matches nothing is a usage error.
func ExpandSpecs(given []string) ([]string, error) {
	var specs []string
	seen := map[string]bool{}
	for _, g := range given {
		matches := []string{g}
		if strings.ContainsAny(g, "*?[") {
			var err error
			if matches, err = filepath.Glob(g); err != nil {
				return nil, Usagef("--spec %q is not a valid glob: %v", g, err)
			}
			if len(matches) == 0 {
				return nil, Usagef("--spec %q matches no file: give a spec file, or a glob such as 'specs/*/README.md' that matches some", g)
			}
		}
		for _, m := range matches {
			if !seen[m] {
				seen[m] = true
				specs = append(specs, m)
			}
		}
	}
	return specs, nil
}

// SpecsWithStatus keeps the specs whose frontmatter status is status (all
// when it is ""). A spec whose frontmatter cannot be read is kept: its
// run reports why it cannot start.
func SpecsWithStatus(specs []string, status string) []string {
	if status == "" {
		return specs
	}
	var kept []string
	for _, s := range specs {
		fm, err := spec.LoadSpec(s)
		if err != nil || fmt.Sprint(fm.Values["status"]) == status {
			kept = append(kept, s)
		}
	}
	return kept
}
