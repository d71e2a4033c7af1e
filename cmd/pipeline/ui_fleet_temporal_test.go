//go:build temporal

package main

// The dashboard (pipeline ui) on a real Temporal fleet: a dev server, a
// pipeline worker, a session run on the fleet, and the ui command of the
// built binary (handed to pipeline-temporal) serving its folder.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/internal/temporaltest"
	"github.com/pipeline-dev/pipeline/internal/ui"
)

// dashboard is a pipeline ui process and the URL it printed.
type dashboard struct {
	url string
	// stderr is what it printed there (a workerLog: written and read
	// from two goroutines).
	stderr *workerLog
}

// startDashboard runs pipeline ui on a free loopback port in dir and
// returns once it has printed its URL; it is stopped (SIGTERM) when the
// test ends.
func startDashboard(t *testing.T, dir string) *dashboard {
	t.Helper()
	cmd := exec.Command(binary, "ui", "--addr", "127.0.0.1:0")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	d := &dashboard{stderr: &workerLog{}}
	cmd.Stderr = d.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		serving := regexp.MustCompile(`^pipeline ui: serving the sessions below .* on (http://\S+/) \(Ctrl\+C to stop\)$`)
		for sc.Scan() {
			if m := serving.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	})
	select {
	case d.url = <-urls:
	case <-exited:
		t.Fatalf("pipeline ui exited (%v) without serving:\n%s", cmd.ProcessState, d.stderr.String())
	case <-time.After(failsafe):
		t.Fatalf("pipeline ui printed no URL in %v:\n%s", failsafe, d.stderr.String())
	}
	return d
}

// get GETs the dashboard's path into v (JSON); the answer must be 200.
func (d *dashboard) get(t *testing.T, path string, v any) {
	t.Helper()
	res, err := http.Get(d.url + strings.TrimPrefix(path, "/"))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s\nui's stderr:\n%s", path, res.Status, body, d.stderr.String())
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, body)
	}
}

// post POSTs body to the dashboard's path with headers, and returns the
// answer's code and JSON object.
func (d *dashboard) post(t *testing.T, path string, headers map[string]string, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, d.url+strings.TrimPrefix(path, "/"), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("POST %s: %s, not a JSON object: %v\n%s", path, res.Status, err, raw)
	}
	return res.StatusCode, out
}

// pageToken is the token a page of the dashboard carries for its POSTs,
// read from the page as its script reads it.
func (d *dashboard) pageToken(t *testing.T) string {
	t.Helper()
	res, err := http.Get(d.url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	page, _ := io.ReadAll(res.Body)
	m := regexp.MustCompile(`<meta name="pipeline-token" content="([0-9a-f]+)">`).FindSubmatch(page)
	if res.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("GET /: %s, no token in the page:\n%s", res.Status, page)
	}
	return string(m[1])
}

// fleetRow is what the test reads of a row of GET /api/sessions.
type fleetRow struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	Phase       string `json:"phase"`
	PauseReason string `json:"pause_reason"`
	OnFleet     string `json:"on_fleet"`
}

func (d *dashboard) row(t *testing.T, id string) fleetRow {
	t.Helper()
	var rows []fleetRow
	d.get(t, "/api/sessions", &rows)
	for _, r := range rows {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("GET /api/sessions does not list %s: %+v", id, rows)
	return fleetRow{}
}

// The dashboard serves a session that runs on a Temporal fleet as the
// fleet has it, and acts on it there. A session run on the fleet pauses
// at a checkpoint; pipeline ui in its folder lists it marked with its
// fleet and paused (not the local copy's "fleet"); GET
// /api/sessions/{id} is the fleet's status object, as status --backend
// temporal -o json prints it; POST .../resume without the page's token,
// or from another origin, is refused (403) and the session stays as it
// was; a fact pinned from the page is in the workflow's working set;
// resume with the token and notes resumes it on the fleet, the session
// completes there (its workflow closes), the notes and the fact reach
// the agent's next prompt, and the dashboard then shows it completed,
// with its steps' logs.
func TestFleetDashboard(t *testing.T) {
	s := fleetServer(t)
	queue := "q-" + strings.ToLower(t.Name())
	fleetWorkers(t, s, queue, 1)
	// The agent saves each prompt it is sent, and stops at a checkpoint
	// until a prompt carries the human's notes.
	dir := fleetProject(t, fmt.Sprintf(`version: 1
backend: {kind: temporal, address: %q, task_queue: %q}
agent:
  kind: command
  command: [sh, -c, 'n=$(ls prompt-*.txt 2>/dev/null | wc -l); printf "%%s" "$0" > prompt-$n.txt; case "$0" in *"use the v2 API"*) echo "[DONE] design";; *) echo "[CHECKPOINT] API drafted";; esac', "{prompt}"]
phases:
  - name: design
    prompt: Design the API.
  - name: build
    steps: [{run: "echo built"}]
`, s.HostPort(), queue))
	r := pipeline(t, dir, "run")
	if r.code != exitPaused || !strings.Contains(r.stdout, "paused: checkpoint") {
		t.Fatalf("run: exit %d, want 3 (paused)\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := sessionIDIn(t, r.stderr)
	d := startDashboard(t, dir)

	where := fmt.Sprintf("Temporal at %s (namespace default)", s.HostPort())
	if row := d.row(t, id); row.Status != "paused" || row.PauseReason != "checkpoint" || row.Phase != "design" || row.OnFleet != where {
		t.Fatalf("GET /api/sessions: %+v; want it paused at the design checkpoint, on %s", row, where)
	}
	var got statusJSON
	d.get(t, "/api/sessions/"+id, &got)
	want := fleetStatusJSON(t, dir, nil, id)
	if got.ID != id || got.Status != "paused" || got.PauseNote != "API drafted" || !reflect.DeepEqual(got, want) {
		t.Fatalf("GET /api/sessions/%s: %+v\nwant the fleet's, as status --backend temporal -o json says: %+v", id, got, want)
	}
	token := d.pageToken(t)
	d.refusesResume(t, id, token)
	if st := fleetStatusJSON(t, dir, nil, id); !reflect.DeepEqual(st, want) {
		t.Fatalf("after the refused resumes, the fleet has the session as %+v; want it as it was, %+v", st, want)
	}
	fact := "the rate limit is 10 requests a second"
	d.pin(t, id, token, fact)

	// Counted, not named: the step after the resume writes the next
	// prompt, whatever attempts came before the pause.
	before := prompts(t, dir)
	code, out := d.post(t, "/api/sessions/"+id+"/resume", map[string]string{ui.TokenHeader: token}, `{"notes": "use the v2 API"}`)
	if code != http.StatusOK || out["session"] != id {
		t.Fatalf("POST resume with the token: %d %v; want 200 naming %s\nui's stderr:\n%s", code, out, id, d.stderr.String())
	}
	awaitWorkflowCompleted(t, s, id)
	after := prompts(t, dir)
	if len(after) != len(before)+1 || !strings.Contains(after[len(before)], "use the v2 API") || !strings.Contains(after[len(before)], fact) {
		t.Fatalf("the prompts after the resume: want one more, with the notes and the fact pinned; before the resume:\n%s\nafter:\n%s",
			strings.Join(before, "\n---\n"), strings.Join(after, "\n---\n"))
	}
	d.get(t, "/api/sessions/"+id, &got)
	if got.Status != "completed" || len(got.Phases) != 2 || !reflect.DeepEqual(got.Phases[0].Notes, []string{"use the v2 API"}) {
		t.Fatalf("GET /api/sessions/%s after the resume: %+v; want it completed, the notes on design", id, got)
	}
	if row := d.row(t, id); row.Status != "completed" || row.OnFleet != where {
		t.Fatalf("GET /api/sessions after the resume: %+v; want it completed, on %s", row, where)
	}
	if logs := d.logs(t, id); !strings.Contains(logs, "[CHECKPOINT] API drafted") || !strings.Contains(logs, "[DONE] design") || !strings.Contains(logs, "built") {
		t.Fatalf("GET /api/sessions/%s/logs: want the design steps' and build's transcripts:\n%s", id, logs)
	}
}

// refusesResume POSTs a resume of session id without the page's token,
// with another, and with it from another site: each is refused, 403.
func (d *dashboard) refusesResume(t *testing.T, id, token string) {
	t.Helper()
	for _, refused := range []map[string]string{
		nil,
		{ui.TokenHeader: "not-" + token},
		{ui.TokenHeader: token, "Origin": "http://evil.example"},
	} {
		code, out := d.post(t, "/api/sessions/"+id+"/resume", refused, `{"notes": "use the v2 API"}`)
		if code != http.StatusForbidden || !strings.HasPrefix(fmt.Sprint(out["error"]), "refused: ") {
			t.Fatalf("POST resume with %v: %d %v; want 403, refused", refused, code, out)
		}
	}
}

// pin pins fact to session id's working set from the page, and checks
// that GET .../memory, answered by the fleet, has it.
func (d *dashboard) pin(t *testing.T, id, token, fact string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"text": fact})
	if code, out := d.post(t, "/api/sessions/"+id+"/pin", map[string]string{ui.TokenHeader: token}, string(body)); code != http.StatusOK {
		t.Fatalf("POST pin with the token: %d %v\nui's stderr:\n%s", code, out, d.stderr.String())
	}
	var memory struct {
		Session string `json:"session"`
		Pinned  []struct {
			Text string `json:"text"`
		} `json:"pinned_facts"`
	}
	d.get(t, "/api/sessions/"+id+"/memory", &memory)
	if memory.Session != id || len(memory.Pinned) != 1 || memory.Pinned[0].Text != fact {
		t.Fatalf("GET /api/sessions/%s/memory after the pin: %+v; want the fact pinned", id, memory)
	}
}

// logs is the text of session id's transcripts, as GET .../logs has them.
func (d *dashboard) logs(t *testing.T, id string) string {
	t.Helper()
	var pieces []struct {
		Text string `json:"text"`
	}
	d.get(t, "/api/sessions/"+id+"/logs", &pieces)
	var all strings.Builder
	for _, p := range pieces {
		all.WriteString(p.Text)
	}
	return all.String()
}

// prompts are the prompts the agent saved in dir (prompt-N.txt), in the
// order it was sent them.
func prompts(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for n := 0; ; n++ {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("prompt-%d.txt", n)))
		if os.IsNotExist(err) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
}

// awaitWorkflowCompleted returns once session id's workflow has closed
// completed (followed along continue-as-new), long-polled from the
// server; it fails the test when it closed otherwise.
func awaitWorkflowCompleted(t *testing.T, s *temporaltest.DevServer, id string) {
	t.Helper()
	c := fleetClient(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	if err := c.C.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
		t.Fatalf("session %s's workflow on %s did not complete: %v", id, s.HostPort(), err)
	}
}
