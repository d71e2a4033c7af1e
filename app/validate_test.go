package app_test

import (
	"context"
	"testing"

	"github.com/pipeline-dev/pipeline/app"
)

// TestValidatePreflight: with Preflight, a pipeline whose agent CLI is
// not on PATH is not valid, and its file says which check failed;
// without it, the CLIs are not looked at.
func TestValidatePreflight(t *testing.T) {
	p := newProject(t, "version: 1\nphases: [{name: design, agent: {kind: claude}}]\n")
	t.Setenv("PATH", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	ctx := context.Background()
	plain := app.Validate(ctx, app.ValidateRequest{Files: []string{p.file}})
	if !plain.Valid || plain.Files[0].Agents != nil {
		t.Errorf("validate without preflight: valid %v, agents %+v", plain.Valid, plain.Files[0].Agents)
	}
	r := app.Validate(ctx, app.ValidateRequest{Files: []string{p.file}, Preflight: true})
	if r.Valid || r.Files[0].Valid {
		t.Errorf("validate --preflight with no claude on PATH is valid: %+v", r.Files[0])
	}
	agents := r.Files[0].Agents
	if len(agents) != 1 || agents[0].OK() {
		t.Errorf("agents = %+v, want claude's failed check", agents)
	}
}
