package app

import (
	"errors"
	"path/filepath"

	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/watch"
)

// WatchedPipelines are the pipelines at files, each once, with their
// stores (under stateDir when it is set), as a local watch takes them.
// Every file is loaded before anything is written: a bad one makes no
// store.
func WatchedPipelines(files []string, stateDir string) ([]watch.Pipeline, error) {
	var problems spec.Error
	for _, file := range files {
		_, err := spec.Load(file, "")
		var specErr *spec.Error
		if errors.As(err, &specErr) {
			problems.Problems = append(problems.Problems, specErr.Problems...)
		} else if err != nil {
			return nil, err
		}
	}
	if len(problems.Problems) > 0 {
		return nil, &problems
	}
	var pipelines []watch.Pipeline
	seen := map[string]bool{}
	for _, file := range files {
		abs, err := filepath.Abs(file)
		if err != nil {
			return nil, err
		}
		if seen[abs] {
			continue // named twice
		}
		seen[abs] = true
		st, err := Pipeline{File: file, StateDir: stateDir}.Open()
		if err != nil {
			return nil, err
		}
		pipelines = append(pipelines, watch.Pipeline{File: file, Store: st})
	}
	return pipelines, nil
}

// WatchedFiles are the pipelines at files, absolute, each once, as a
// watch of a backend's sessions takes them (no store here).
func WatchedFiles(files []string) ([]watch.Pipeline, error) {
	var out []watch.Pipeline
	seen := map[string]bool{}
	for _, file := range files {
		abs, err := filepath.Abs(file)
		if err != nil {
			return nil, err
		}
		if !seen[abs] {
			seen[abs] = true
			out = append(out, watch.Pipeline{File: abs})
		}
	}
	return out, nil
}
