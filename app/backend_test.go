package app_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// fleetCopy makes, in the project's store, the copy a fleet run leaves
// of its session (app/fleet's markLocal): marked with where it runs.
func (p *project) fleetCopy(id string) store.Fleet {
	p.t.Helper()
	st, err := p.pipeline().Open()
	if err != nil {
		p.t.Fatal(err)
	}
	defer st.Close()
	f := store.Fleet{Address: "10.0.0.7:7233", Namespace: "ci", TaskQueue: "pipeline"}
	x, err := st.Create(store.Meta{ID: id, Pipeline: "p", File: p.file, Key: store.FleetKey(id), Created: time.Now(), Fleet: &f})
	if err != nil {
		p.t.Fatal(err)
	}
	x.Close()
	return f
}

// A fleet session's copy in the local store: the local backend's status
// and sessions say where it runs, never paused (runner-died), and the
// operations that would act on its state here refuse it with exit 2,
// naming the command to use, and write nothing.
func TestLocalBackendKnowsAFleetSession(t *testing.T) {
	p := newProject(t, "version: 1\nphases:\n  - name: build\n    steps: [{run: \"true\"}]\n")
	id := "20261127-100000000-f1ee70"
	p.fleetCopy(id)
	ctx := context.Background()
	var be app.Backend = app.Local{}
	defer be.Close()

	st, err := be.Status(ctx, app.StatusRequest{Pipeline: p.pipeline(), Session: id})
	if err != nil || st.Status != app.StatusOnFleet || st.Fleet == nil || st.Fleet.Where() != "Temporal at 10.0.0.7:7233 (namespace ci)" || st.PauseReason != "" {
		t.Fatalf("status: %+v, %v", st, err)
	}
	list, err := be.Sessions(ctx, app.SessionsRequest{Pipeline: p.pipeline(), Active: true})
	if err != nil || len(list.Sessions) != 1 || list.Sessions[0].Status != app.StatusOnFleet || list.Sessions[0].Fleet == nil {
		t.Fatalf("sessions --active: %+v, %v", list, err)
	}

	events := filepath.Join(p.dir, ".pipeline", "sessions", id)
	before := listing(t, events)
	use := "--backend temporal --temporal 10.0.0.7:7233 --namespace ci " + id
	for name, call := range map[string]func() error{
		"resume": func() error {
			_, err := app.OpenResume(ctx, app.ResumeRequest{Pipeline: p.pipeline(), Session: id})
			return err
		},
		"pause": func() error {
			_, err := be.Pause(ctx, app.PauseRequest{Pipeline: p.pipeline(), Session: id, Notes: "n"})
			return err
		},
		"status": func() error {
			_, err := be.Complete(ctx, app.CompleteRequest{Pipeline: p.pipeline(), Session: id})
			return err
		},
		"status ": func() error {
			_, err := app.Rewind(ctx, app.RewindRequest{Pipeline: p.pipeline(), Session: id, To: "build"})
			return err
		},
		"status  ": func() error {
			_, err := app.Export(ctx, app.ExportRequest{Pipeline: p.pipeline(), Session: id, Output: filepath.Join(t.TempDir(), "x.tar.gz")})
			return err
		},
	} {
		err := call()
		var e *app.Error
		if app.ExitCode(err) != app.ExitUsage || !errors.As(err, &e) {
			t.Fatalf("%s: %v, want a usage error", name, err)
		}
		want := "pipeline " + strings.TrimSpace(name) + " " + use
		if !strings.Contains(e.Message, "runs on Temporal at 10.0.0.7:7233 (namespace ci)") || !strings.Contains(e.Hint, want) {
			t.Fatalf("%s: %q (hint %q), want where it runs and %q", name, e.Message, e.Hint, want)
		}
	}
	if after := listing(t, events); after != before {
		t.Fatalf("the refused operations wrote to the session's copy:\n%s\nthen\n%s", before, after)
	}
}

// listing is the files below dir with their sizes.
func listing(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			fmt.Fprintf(&b, "%s %d\n", path, info.Size())
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The local backend's operations are the package's: the same session,
// the same answer.
func TestLocalBackendIsTheOperations(t *testing.T) {
	p := newProject(t, "version: 1\nphases:\n  - name: build\n    steps: [{run: \"true\"}]\n")
	id, _ := p.run()
	ctx := context.Background()
	want, err := app.Status(ctx, app.StatusRequest{Pipeline: p.pipeline(), Session: id})
	if err != nil {
		t.Fatal(err)
	}
	got, err := app.Local{}.Status(ctx, app.StatusRequest{Pipeline: p.pipeline(), Session: id})
	if err != nil || got.ID != want.ID || got.Status != "completed" || got.Fleet != nil {
		t.Fatalf("Local.Status: %+v, %v; want %+v", got, err, want)
	}
	if _, err := (app.Local{}).Pause(ctx, app.PauseRequest{Pipeline: p.pipeline(), Session: id}); app.ExitCode(err) != app.ExitUsage {
		t.Fatalf("Local.Pause of a completed session: %v, want a usage error", err)
	}
}

// The copy a fleet worker makes in its store (a key of its own,
// store.FleetKey, and no mark of where the fleet is) is known as a fleet
// session too: never paused (runner-died), and a local resume refuses it.
func TestLocalBackendKnowsAWorkersCopy(t *testing.T) {
	p := newProject(t, "version: 1\nphases:\n  - name: build\n    steps: [{run: \"true\"}]\n")
	id := "20261127-100000000-c0ffee"
	st, err := p.pipeline().Open()
	if err != nil {
		t.Fatal(err)
	}
	x, err := st.Create(store.Meta{ID: id, Pipeline: "p", File: p.file, Key: store.FleetKey(id), Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	x.Close()
	st.Close()
	ctx := context.Background()
	list, err := app.Local{}.Sessions(ctx, app.SessionsRequest{Pipeline: p.pipeline()})
	if err != nil || len(list.Sessions) != 1 || list.Sessions[0].Status != app.StatusOnFleet || list.Sessions[0].Fleet == nil ||
		!strings.Contains(list.Sessions[0].Fleet.Where(), "a Temporal fleet") {
		t.Fatalf("sessions: %+v, %v", list, err)
	}
	_, err = app.OpenResume(ctx, app.ResumeRequest{Pipeline: p.pipeline(), Session: id})
	if app.ExitCode(err) != app.ExitUsage || !strings.Contains(err.Error(), "runs on a Temporal fleet") {
		t.Fatalf("resume of a worker's copy: %v, want refused", err)
	}
}
