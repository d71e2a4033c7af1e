package ui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/testwait"
	"github.com/pipeline-dev/pipeline/internal/ui"
)

// listPage is what the tests read of GET /api/list.
type listPage struct {
	Total     int            `json:"total"`
	Matched   int            `json:"matched"`
	Offset    int            `json:"offset"`
	Sessions  []sessionRow   `json:"sessions"`
	Pipelines []string       `json:"pipelines"`
	Statuses  map[string]int `json:"statuses"`
}

// retryPhases is the project of the timeline tests: design stops at a
// checkpoint the first time; build fails its first try, and is retried.
const retryPhases = `version: 1
name: demo
agent:
  kind: command
  command: [sh, ./agent.sh, "{prompt}"]
defaults:
  pause_when:
    checkpoint: checkpoint
  retry:
    when: exit_code != 0
    backoff: 10ms
phases:
  - name: design
    prompt: Design the greeting.
  - name: build
    prompt: Build the greeting.
`

const retryAgent = `case "$1" in
*Design*)
	if [ ! -f .checkpointed ]; then : > .checkpointed; echo "[CHECKPOINT] design drafted; review it"; exit 0; fi
	echo "design reviewed" ;;
*)
	if [ ! -f .failed ]; then : > .failed; echo "the build broke" >&2; exit 1; fi
	echo "built" ;;
esac
`

// retriedSession runs a session of the retry project to its end: paused
// at design's checkpoint, resumed, build retried once.
func retriedSession(t *testing.T) (dir, id string) {
	t.Helper()
	dir = t.TempDir()
	for name, text := range map[string]string{"phases.yaml": retryPhases, "agent.sh": retryAgent} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	id = pausedSession(t, dir)
	pipeline(t, dir, 0, "resume", id)
	return dir, id
}

// GET /api/list is a page of the sessions, newest change first, with
// the counts and choices of the filters; each row has its attempts.
func TestAPIListPagesTheSessions(t *testing.T) {
	dir, retried := retriedSession(t)
	os.Remove(filepath.Join(dir, ".checkpointed"))
	older := pausedSession(t, dir)
	os.Remove(filepath.Join(dir, ".checkpointed"))
	newest := pausedSession(t, dir)
	_, hs := serve(t, ui.Options{Root: dir})

	var page listPage
	getJSON(t, hs.URL+"/api/list?limit=2", &page)
	if page.Total != 3 || page.Matched != 3 || len(page.Sessions) != 2 || page.Sessions[0].ID != newest || page.Sessions[1].ID != older {
		t.Fatalf("the first page of 2: %+v; want %s then %s of 3", page, newest, older)
	}
	if strings.Join(page.Pipelines, ",") != "demo" || page.Statuses["paused"] != 2 || page.Statuses["completed"] != 1 {
		t.Errorf("the filters' choices: pipelines %v, statuses %v", page.Pipelines, page.Statuses)
	}
	getJSON(t, hs.URL+"/api/list?limit=2&offset=2", &page)
	if len(page.Sessions) != 1 || page.Sessions[0].ID != retried || page.Offset != 2 {
		t.Fatalf("the second page: %+v, want %s alone", page, retried)
	}
	// design once, build twice (its retry).
	if r := page.Sessions[0]; r.Attempts != 3 || r.Status != "completed" || r.PhaseNumber != 2 || r.Phases != 2 {
		t.Errorf("the retried session's row: %+v; want 3 attempts, completed at phase 2 of 2", r)
	}
	getJSON(t, hs.URL+"/api/list?status=paused", &page)
	if page.Matched != 2 || len(page.Sessions) != 2 || page.Sessions[0].Attempts != 1 {
		t.Errorf("?status=paused: %+v, want the 2 paused sessions, one attempt each", page)
	}

	res, err := http.Get(hs.URL + "/api/sessions?status=paused&limit=1")
	if err != nil {
		t.Fatal(err)
	}
	var rows []sessionRow
	json.NewDecoder(res.Body).Decode(&rows)
	res.Body.Close()
	if res.Header.Get("X-Total-Count") != "2" || len(rows) != 1 || rows[0].ID != newest {
		t.Errorf("GET /api/sessions?status=paused&limit=1: X-Total-Count %q, %+v", res.Header.Get("X-Total-Count"), rows)
	}
	for _, bad := range []string{"/api/list?offset=-1", "/api/list?limit=x", "/api/list?status=sleeping"} {
		if res, err := http.Get(hs.URL + bad); err != nil || res.StatusCode != http.StatusBadRequest {
			t.Errorf("GET %s: %v %v, want 400", bad, res.Status, err)
		}
	}
}

// A listing kept by the server is read again once a session changes:
// the page never shows a state older than the stores'.
func TestAPIListFollowsAChange(t *testing.T) {
	dir := project(t)
	id := pausedSession(t, dir)
	_, hs := serve(t, ui.Options{Root: dir})
	var page listPage
	getJSON(t, hs.URL+"/api/list", &page)
	if len(page.Sessions) != 1 || page.Sessions[0].Status != "paused" {
		t.Fatalf("before: %+v", page)
	}
	pipeline(t, dir, 0, "complete", id)
	getJSON(t, hs.URL+"/api/list", &page)
	if len(page.Sessions) != 1 || page.Sessions[0].Status != "completed" {
		t.Errorf("after pipeline complete: %+v, want it completed", page.Sessions)
	}
}

// timelineOf is what the tests read of GET /api/sessions/ID/timeline.
type timelineOf struct {
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	Phases []struct {
		Name     string `json:"name"`
		Status   string `json:"status"`
		Attempts []struct {
			Number int       `json:"number"`
			Retry  bool      `json:"retry"`
			Start  time.Time `json:"start"`
			End    time.Time `json:"end"`
			Steps  []struct {
				Name     string    `json:"name"`
				Start    time.Time `json:"start"`
				End      time.Time `json:"end"`
				ExitCode int       `json:"exit_code"`
				Stopped  bool      `json:"stopped"`
				Fired    []struct {
					Reason string `json:"reason"`
					Note   string `json:"note"`
				} `json:"fired"`
			} `json:"steps"`
		} `json:"attempts"`
	} `json:"phases"`
	Pauses []struct {
		Phase  string    `json:"phase"`
		Reason string    `json:"reason"`
		Start  time.Time `json:"start"`
		End    time.Time `json:"end"`
	} `json:"pauses"`
}

// The timeline places each step run in its phase and attempt on the wall
// clock: design's step stopped at the checkpoint (the trigger that fired
// on it, with its note), the pause until the resume, design's step again,
// then build's failed first attempt and its retry.
func TestAPITimelineHasAttemptsStepsAndPauses(t *testing.T) {
	dir, id := retriedSession(t)
	_, hs := serve(t, ui.Options{Root: dir})
	var tl timelineOf
	getJSON(t, hs.URL+"/api/sessions/"+id+"/timeline", &tl)
	if len(tl.Phases) != 2 || tl.Phases[0].Name != "design" || tl.Phases[1].Name != "build" {
		t.Fatalf("phases: %+v", tl.Phases)
	}
	design, build := tl.Phases[0], tl.Phases[1]
	if len(design.Attempts) != 1 || len(design.Attempts[0].Steps) != 2 || design.Status != "completed" {
		t.Fatalf("design: %+v; want one attempt of two runs of its step (stopped, then resumed)", design)
	}
	first, again := design.Attempts[0].Steps[0], design.Attempts[0].Steps[1]
	if len(first.Fired) != 1 || first.Fired[0].Reason != "checkpoint" || first.Fired[0].Note != "design drafted; review it" {
		t.Errorf("design's first run: %+v; want the checkpoint fired on it, its note with it", first)
	}
	if len(build.Attempts) != 2 || build.Attempts[0].Retry || !build.Attempts[1].Retry || build.Attempts[1].Number != 2 ||
		build.Attempts[0].Steps[0].ExitCode != 1 || build.Attempts[1].Steps[0].ExitCode != 0 {
		t.Fatalf("build: %+v; want a failed first attempt (exit 1) and a retry that passed", build)
	}
	if len(tl.Pauses) != 1 || tl.Pauses[0].Reason != "checkpoint" || tl.Pauses[0].Phase != "design" || tl.Pauses[0].End.IsZero() {
		t.Fatalf("pauses: %+v; want the checkpoint's, ended by the resume", tl.Pauses)
	}
	// On the wall clock, in order: each step within the session, the
	// pause between design's two runs, the retry after the failure.
	p := tl.Pauses[0]
	for _, c := range []struct {
		what        string
		early, late time.Time
	}{
		{"the session's start, design's first run", tl.Start, first.Start},
		{"design's first run's start, its end", first.Start, first.End},
		{"design's first run's end, the pause", first.End, p.Start},
		{"the pause's start, its end", p.Start, p.End},
		{"the pause's end, design's second run", p.End, again.Start},
		{"design's second run, build's first attempt", again.End, build.Attempts[0].Start},
		{"build's first attempt's end, its retry", build.Attempts[0].End, build.Attempts[1].Start},
		{"the retry's end, the session's end", build.Attempts[1].End, tl.End},
	} {
		if c.late.Before(c.early) {
			t.Errorf("%s: %s is before %s", c.what, c.late.Format(time.RFC3339Nano), c.early.Format(time.RFC3339Nano))
		}
	}
}

// fleetCopy makes the local copy of a session that runs on a fleet, as
// the fleet's start writes it.
func fleetCopy(t *testing.T, dir, id string) {
	t.Helper()
	st, err := store.Open(filepath.Join(dir, ".pipeline"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f := store.Fleet{Address: "10.0.0.7:7233", Namespace: "ci", TaskQueue: "pipeline"}
	x, err := st.Create(store.Meta{ID: id, Pipeline: "demo", File: filepath.Join(dir, "phases.yaml"), Key: store.FleetKey(id), Created: time.Now(), Fleet: &f})
	if err != nil {
		t.Fatal(err)
	}
	x.Close()
}

// fakeFleet is a fleet's backend as the dashboard sees one: it says
// where the session stands there, and records what it is asked to do.
type fakeFleet struct {
	app.Local
	mu     sync.Mutex
	paused []string
}

func (f *fakeFleet) Status(_ context.Context, req app.StatusRequest) (*app.StatusResponse, error) {
	r := &app.StatusResponse{}
	r.ID, r.Status, r.Phase, r.Tokens = req.Session, "running", "build", 1234
	return r, nil
}

func (f *fakeFleet) Pause(_ context.Context, req app.PauseRequest) (*app.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paused = append(f.paused, req.Session+": "+req.Notes)
	return &app.Result{}, nil
}

// A fleet session shows among the local ones, marked with its fleet;
// without a backend of that fleet, what it would need its state for is
// refused with the command to use. With one, the dashboard asks it.
func TestAPIFleetSessions(t *testing.T) {
	dir := project(t)
	local := pausedSession(t, dir)
	onFleet := "20261127-100000000-f1ee70"
	fleetCopy(t, dir, onFleet)

	srv, hs := serve(t, ui.Options{Root: dir})
	var page listPage
	getJSON(t, hs.URL+"/api/list", &page)
	byID := map[string]sessionRow{}
	for _, r := range page.Sessions {
		byID[r.ID] = r
	}
	if r := byID[onFleet]; r.Status != app.StatusOnFleet || r.OnFleet != "Temporal at 10.0.0.7:7233 (namespace ci)" {
		t.Errorf("the fleet session's row: %+v", r)
	}
	if r := byID[local]; r.Status != "paused" || r.OnFleet != "" {
		t.Errorf("the local session's row: %+v", r)
	}
	getJSON(t, hs.URL+"/api/list?status=fleet", &page)
	if len(page.Sessions) != 1 || page.Sessions[0].ID != onFleet {
		t.Errorf("?status=fleet: %+v", page.Sessions)
	}
	token := map[string]string{ui.TokenHeader: srv.Token()}
	code, out := post(t, hs.URL+"/api/sessions/"+onFleet+"/resume", token, `{}`)
	if hint, _ := out["hint"].(string); code != 400 || !strings.Contains(hint, "pipeline resume --backend temporal --temporal 10.0.0.7:7233 --namespace ci "+onFleet) {
		t.Errorf("resume of a fleet session here: %d %v; want 400 naming the command to use", code, out)
	}

	fleet := &fakeFleet{}
	srv, hs = serve(t, ui.Options{Root: dir, Fleet: func(_ context.Context, f store.Fleet) (app.Backend, error) {
		if f.Address != "10.0.0.7:7233" {
			t.Errorf("asked for the fleet %+v", f)
		}
		return fleet, nil
	}})
	getJSON(t, hs.URL+"/api/list?status=running", &page)
	if len(page.Sessions) != 1 || page.Sessions[0].ID != onFleet || page.Sessions[0].Phase != "build" || page.Sessions[0].TokenCount != 1234 {
		t.Errorf("with its fleet's backend, ?status=running: %+v; want the fleet session as the fleet says", page.Sessions)
	}
	code, out = post(t, hs.URL+"/api/sessions/"+onFleet+"/pause", map[string]string{ui.TokenHeader: srv.Token()}, `{"notes": "wait for review"}`)
	fleet.mu.Lock()
	defer fleet.mu.Unlock()
	if code != 200 || len(fleet.paused) != 1 || fleet.paused[0] != onFleet+": wait for review" {
		t.Errorf("pause through the fleet: %d %v; the fleet was asked %v", code, out, fleet.paused)
	}
}

// A runner killed outside (kill -9) changes no file: the listing the
// server keeps while a session runs is read again soon, and the session
// shows paused, runner-died, as pipeline sessions shows it.
func TestAPIListSeesARunnerKilled(t *testing.T) {
	dir := t.TempDir()
	phases := "version: 1\nname: slow\nphases:\n  - name: wait\n    steps: [{run: \"sleep 60\"}]\n"
	if err := os.WriteFile(filepath.Join(dir, "phases.yaml"), []byte(phases), 0o644); err != nil {
		t.Fatal(err)
	}
	_, hs := serve(t, ui.Options{Root: dir})
	events := openEvents(t, hs.URL)
	run := exec.Command(binary, "run", "--new")
	run.Dir = dir
	run.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			syscall.Kill(-run.Process.Pid, syscall.SIGKILL)
			run.Wait()
		}
	})
	id := events.awaitAny(t, "running")
	var page listPage
	getJSON(t, hs.URL+"/api/list", &page)
	if len(page.Sessions) != 1 || page.Sessions[0].ID != id || page.Sessions[0].Status != "running" {
		t.Fatalf("while it runs: %+v", page.Sessions)
	}
	syscall.Kill(-run.Process.Pid, syscall.SIGKILL)
	run.Wait()
	killed = true
	start := time.Now()
	for {
		getJSON(t, hs.URL+"/api/list", &page)
		if r := page.Sessions[0]; r.Status == "paused" && r.PauseReason == "runner-died" {
			break
		}
		if time.Since(start) > testwait.Failsafe {
			t.Fatalf("after kill -9 of its runner: %+v, want paused (runner-died)", page.Sessions)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition: a killed runner writes nothing to wait on
	}
	t.Logf("the killed runner's session showed paused (runner-died) %s after the kill", time.Since(start))
}
