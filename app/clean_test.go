package app_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/internal/filetree"
)

const oneStep = "version: 1\nphases: [{name: a, steps: [{run: 'true'}]}]\n"

// Clean with DryRun says what would go and writes nothing; without, it
// removes just that, keeping the newest --keep of the pipeline.
func TestCleanDryRunSaysWhatGoesAndRemovesNothing(t *testing.T) {
	p := newProject(t, oneStep)
	older, _ := p.run()
	newer, _ := p.run()
	ctx := context.Background()
	req := app.CleanRequest{Pipeline: p.pipeline(), OlderThan: "1ns", Keep: 1, DryRun: true}
	before := filetree.Of(t, p.dir)
	r, err := app.Clean(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !r.DryRun || !slices.Equal(r.Removed, []string{older}) || len(r.Sessions) != 1 || r.Sessions[0].Status != "completed" {
		t.Fatalf("dry run: %+v, want %s only", r, older)
	}
	if after := filetree.Of(t, p.dir); !maps.Equal(before, after) {
		t.Errorf("a dry run wrote to the project")
	}

	req.DryRun = false
	if r, err = app.Clean(ctx, req); err != nil || !slices.Equal(r.Removed, []string{older}) || r.DryRun {
		t.Fatalf("clean: %+v, %v; want %s removed", r, err, older)
	}
	list, err := app.Sessions(ctx, app.SessionsRequest{Pipeline: p.pipeline()})
	if err != nil || len(list.Sessions) != 1 || list.Sessions[0].ID != newer {
		t.Fatalf("sessions after clean: %+v, %v; want %s only", list, err, newer)
	}
}

func TestCleanRefusesAnAgeItCannotUse(t *testing.T) {
	p := newProject(t, oneStep)
	for _, age := range []string{"", "0", "-1h", "1y", "300000d"} {
		_, err := app.Clean(context.Background(), app.CleanRequest{Pipeline: p.pipeline(), OlderThan: age})
		if app.ExitCode(err) != app.ExitUsage || !strings.Contains(err.Error(), "is not an age clean can use") {
			t.Errorf("age %q: %v (exit %d), want a usage error", age, err, app.ExitCode(err))
		}
	}
}
