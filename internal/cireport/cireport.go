// Package cireport is what a CI system reads of a session: the job
// summary table (markdown), the step outputs, the annotation that says
// why a run stopped, the GitHub and GitLab log groups, and the JUnit XML.
//
// A run in a CI job prints plain timestamped lines (never the live view,
// whatever its output is), and, on GitHub Actions or GitLab CI, puts each
// step in a collapsible group (NewLogMarkers, which termview.Plain
// writes) and says why the run stopped as an annotation that points at
// the trigger in phases.yaml (Annotation). At the end it leaves a job
// summary (Markdown) and step outputs (GitHubOutputs) in GitHub's
// environment files (AppendEnvFile), and a JUnit report (JUnit) behind.
// See README.md, "CI".
//
// It is a package of its own so that what a CI job reads is one thing,
// apart from the command line that decides when to write it: pipeline
// run and resume leave these reports, and status --output markdown
// prints the same table.
package cireport

import (
	"os"
	"path/filepath"
	"strings"
)

// Platform is the CI system whose log conventions a run follows.
type Platform int

const (
	Other  Platform = iota // any CI, or none: plain lines only
	GitHub                 // GITHUB_ACTIONS=true: workflow commands
	GitLab                 // GITLAB_CI=true: collapsible sections
)

// Settings is how a run shows itself in a CI job.
type Settings struct {
	// Enabled is CI mode: plain lines, never the live view.
	Enabled  bool
	Platform Platform
}

// Mode decides CI mode, in this one place: flag (--ci) when it is given
// (--ci=false turns it off under CI=true), else the environment's CI.
// The platform is read only in CI mode.
func Mode(flag *bool, getenv func(string) string) Settings {
	s := Settings{Enabled: truthy(getenv("CI"))}
	if flag != nil {
		s.Enabled = *flag
	}
	switch {
	case !s.Enabled:
	case truthy(getenv("GITHUB_ACTIONS")):
		s.Platform = GitHub
	case truthy(getenv("GITLAB_CI")):
		s.Platform = GitLab
	}
	return s
}

// truthy tells whether an environment variable says yes: true, 1 or yes,
// in any case.
func truthy(value string) bool {
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "true", "1", "yes":
		return true
	}
	return false
}

// ciPath is a file's path as a CI shows it: relative to the workspace
// (GITHUB_WORKSPACE, CI_PROJECT_DIR, or else the working folder) when it
// is inside it.
func ciPath(path string) string {
	if path == "" {
		return path
	}
	base := os.Getenv("GITHUB_WORKSPACE")
	if base == "" {
		base = os.Getenv("CI_PROJECT_DIR")
	}
	if base == "" {
		base, _ = os.Getwd()
	}
	abs, err := filepath.Abs(path)
	if err != nil || base == "" {
		return filepath.ToSlash(path)
	}
	if rel, err := filepath.Rel(base, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return filepath.ToSlash(rel)
	}
	return filepath.ToSlash(abs)
}
