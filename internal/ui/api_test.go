package ui_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/internal/testwait"
	"github.com/pipeline-dev/pipeline/internal/ui"
)

// sessionRow is what the tests read of a line of GET /api/sessions.
type sessionRow struct {
	ID          string `json:"id"`
	Pipeline    string `json:"pipeline"`
	Status      string `json:"status"`
	Phase       string `json:"phase"`
	PauseReason string `json:"pause_reason"`
	PhaseNumber int    `json:"phase_number"`
	Phases      int    `json:"phases"`
	Attempts    int    `json:"attempts"`
	OnFleet     string `json:"on_fleet"`
	TokenCount  int    `json:"tokens"`
}

// post POSTs body to the action with the given headers, and returns the
// status and the answer.
func post(t *testing.T, url string, headers map[string]string, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
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
		t.Fatalf("POST %s: %s, not JSON: %q", url, res.Status, raw)
	}
	return res.StatusCode, out
}

func TestAPIListsTheSessionsBelowTheFolder(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "nested", "b")
	for _, dir := range []string{a, b} {
		os.MkdirAll(dir, 0o755)
		os.CopyFS(dir, os.DirFS(project(t)))
	}
	idA, idB := pausedSession(t, a), pausedSession(t, b)
	_, hs := serve(t, ui.Options{Root: root})
	var rows []sessionRow
	getJSON(t, hs.URL+"/api/sessions", &rows)
	byID := map[string]sessionRow{}
	for _, r := range rows {
		byID[r.ID] = r
	}
	for _, id := range []string{idA, idB} {
		r, ok := byID[id]
		if !ok || r.Status != "paused" || r.Phase != "design" || r.PauseReason != "checkpoint" || r.PhaseNumber != 1 || r.Phases != 2 || r.Pipeline != "demo" {
			t.Errorf("session %s: %+v; want it listed paused at design (1 of 2), checkpoint", id, r)
		}
	}
	if len(rows) != 2 {
		t.Errorf("%d sessions listed, want 2: %+v", len(rows), rows)
	}
	var completed []sessionRow
	getJSON(t, hs.URL+"/api/sessions?status=completed", &completed)
	if len(completed) != 0 {
		t.Errorf("?status=completed listed %+v, want none", completed)
	}
	res, _ := http.Get(hs.URL + "/api/sessions?status=sleeping")
	if res.StatusCode != http.StatusBadRequest {
		t.Errorf("?status=sleeping: %s, want 400", res.Status)
	}
}

func TestAPISessionIsTheStatusJSON(t *testing.T) {
	dir := project(t)
	id := pausedSession(t, dir)
	_, hs := serve(t, ui.Options{Root: dir})
	var got, want map[string]any
	getJSON(t, hs.URL+"/api/sessions/"+id, &got)
	if err := json.Unmarshal([]byte(pipeline(t, dir, 0, "status", id, "-o", "json")), &want); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"id", "status", "phase", "pause_reason", "pause_note", "attempt", "tokens"} {
		if g, w := got[key], want[key]; g != w {
			t.Errorf("%s: %v, want %v as pipeline status -o json says", key, g, w)
		}
	}
	if phases, _ := got["phases"].([]any); len(phases) != 2 {
		t.Errorf("phases: %v, want the 2 of the plan", got["phases"])
	}
	res, _ := http.Get(hs.URL + "/api/sessions/20991231-000000000-ffffff")
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown session: %s, want 404", res.Status)
	}
}

func TestAPILogsAreRendered(t *testing.T) {
	dir := project(t)
	id := pausedSession(t, dir)
	_, hs := serve(t, ui.Options{Root: dir})
	var pieces []struct {
		Transcript string `json:"transcript"`
		Items      []struct {
			Kind string `json:"kind"`
			Text string `json:"text"`
		} `json:"items"`
	}
	getJSON(t, hs.URL+"/api/sessions/"+id+"/logs", &pieces)
	if len(pieces) != 1 || pieces[0].Transcript != "design/1-agent.log" {
		t.Fatalf("logs: %+v, want design/1-agent.log", pieces)
	}
	var texts []string
	for _, it := range pieces[0].Items {
		texts = append(texts, it.Kind+": "+it.Text)
	}
	if !strings.Contains(strings.Join(texts, "\n"), "output: drafting the greeting design") {
		t.Errorf("items %q: want the agent's output line", texts)
	}
}

// A POST without the token, or from another origin, is refused and
// changes nothing: the store's index is as it was and no runner started.
func TestAPIPostWithoutTheTokenIsRefused(t *testing.T) {
	dir := project(t)
	id := pausedSession(t, dir)
	srv, hs := serve(t, ui.Options{Root: dir})
	index := filepath.Join(dir, ".pipeline", "index.tsv")
	before, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	for name, headers := range map[string]map[string]string{
		"no token":       {},
		"a wrong token":  {ui.TokenHeader: "0123"},
		"another origin": {ui.TokenHeader: srv.Token(), "Origin": "http://evil.example"},
		"cross-site":     {ui.TokenHeader: srv.Token(), "Sec-Fetch-Site": "cross-site"},
	} {
		for _, action := range []string{"resume", "pause", "complete", "pin"} {
			code, out := post(t, hs.URL+"/api/sessions/"+id+"/"+action, headers, `{"notes": "x", "text": "x"}`)
			if code != http.StatusForbidden || !strings.HasPrefix(out["error"].(string), "refused") {
				t.Errorf("%s, %s: %d %v, want 403 refused", name, action, code, out)
			}
		}
	}
	after, _ := os.ReadFile(index)
	if !bytes.Equal(before, after) {
		t.Errorf("index.tsv changed:\n%s\nwas:\n%s", after, before)
	}
	if _, err := os.Stat(filepath.Join(dir, ".pipeline", "ui-runs")); !os.IsNotExist(err) {
		t.Errorf("a runner was started: %v", err)
	}
	var status map[string]any
	getJSON(t, hs.URL+"/api/sessions/"+id, &status)
	if status["status"] != "paused" || status["pause_note"] != "design drafted; review it" {
		t.Errorf("after the refusals: %v %v, want paused as before", status["status"], status["pause_note"])
	}
}

// Resume with notes starts a runner that outlives the request; the
// session completes, the note reaches the agent's prompt, and the event
// stream says so.
func TestAPIResumeWithNotesCompletes(t *testing.T) {
	dir := project(t)
	id := pausedSession(t, dir)
	srv, hs := serve(t, ui.Options{Root: dir})
	events := openEvents(t, hs.URL)
	code, out := post(t, hs.URL+"/api/sessions/"+id+"/resume", map[string]string{ui.TokenHeader: srv.Token()},
		`{"notes": "use a warm tone"}`)
	if code != http.StatusOK || out["session"] != id {
		t.Fatalf("resume: %d %v", code, out)
	}
	events.await(t, id, "completed")
	prompts, _ := os.ReadFile(filepath.Join(dir, "prompts.txt"))
	if !strings.Contains(string(prompts), "use a warm tone") {
		t.Errorf("the agent's prompts:\n%s\nwant the note in one", prompts)
	}
	code, out = post(t, hs.URL+"/api/sessions/"+id+"/resume", map[string]string{ui.TokenHeader: srv.Token()}, `{}`)
	if code != http.StatusBadRequest || !strings.Contains(out["error"].(string), "is completed") || out["exit_code"] != float64(2) {
		t.Errorf("resume of a completed session: %d %v, want 400 with the message and exit code 2", code, out)
	}
}

// A session that pauses is a line of /api/events.
func TestAPIEventsSayASessionPaused(t *testing.T) {
	dir := project(t)
	pausedSession(t, dir) // the store exists: the server follows it
	_, hs := serve(t, ui.Options{Root: dir})
	events := openEvents(t, hs.URL)
	start := time.Now()
	id := pausedSession(t, dir)
	at := events.await(t, id, "paused")
	t.Logf("the pause reached the stream %s after pipeline run started", at.Sub(start))
}

func TestAPIPauseCompleteAndPin(t *testing.T) {
	dir := project(t)
	id := pausedSession(t, dir)
	srv, hs := serve(t, ui.Options{Root: dir})
	token := map[string]string{ui.TokenHeader: srv.Token()}
	base := hs.URL + "/api/sessions/" + id
	if code, out := post(t, base+"/pause", token, `{"notes": "look at the colours"}`); code != 200 || out["result"] != "paused, notes added" {
		t.Errorf("pause: %d %v", code, out)
	}
	if code, out := post(t, base+"/pin", token, `{"text": "the greeting is in French"}`); code != 200 || out["result"] == "" {
		t.Errorf("pin: %d %v", code, out)
	}
	var memory struct {
		PinnedFacts []struct{ Text string } `json:"pinned_facts"`
	}
	getJSON(t, base+"/memory", &memory)
	if len(memory.PinnedFacts) != 1 || memory.PinnedFacts[0].Text != "the greeting is in French" {
		t.Errorf("pinned facts: %+v", memory.PinnedFacts)
	}
	if code, out := post(t, base+"/pin", token, `{"text": ""}`); code != 400 || out["error"] != "the fact to pin is empty" {
		t.Errorf("pin of nothing: %d %v, want 400 with the command's message", code, out)
	}
	if code, out := post(t, base+"/complete", token, ``); code != 200 || out["result"] != "completed" {
		t.Errorf("complete: %d %v", code, out)
	}
	var status map[string]any
	getJSON(t, base, &status)
	if status["status"] != "completed" {
		t.Errorf("after complete: %v", status["status"])
	}
	if code, _ := post(t, base+"/explode", token, `{}`); code != 404 {
		t.Errorf("an unknown action: %d, want 404", code)
	}
	if code, _ := post(t, base+"/pause", token, `not json`); code != 400 {
		t.Errorf("a body that is not JSON: %d, want 400", code)
	}
}

// The page carries the token; a Host other than loopback is refused (DNS
// rebinding); a remote server asks every request for its access token.
func TestServerGuards(t *testing.T) {
	dir := project(t)
	srv, hs := serve(t, ui.Options{Root: dir})
	res, _ := http.Get(hs.URL + "/")
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(page), `content="`+srv.Token()+`"`) {
		t.Errorf("the sessions page does not carry the token")
	}
	req, _ := http.NewRequest("GET", hs.URL+"/api/sessions", nil)
	req.Host = "pipeline.evil.example"
	if res, _ := http.DefaultClient.Do(req); res.StatusCode != http.StatusForbidden {
		t.Errorf("Host pipeline.evil.example: %s, want 403", res.Status)
	}

	_, remote := serve(t, ui.Options{Root: dir, Remote: true, AccessToken: "s3cret"})
	if res, _ := http.Get(remote.URL + "/api/sessions"); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("no access token: %s, want 401", res.Status)
	}
	res, _ = http.Get(remote.URL + "/?token=s3cret")
	if res.StatusCode != 200 || len(res.Cookies()) != 1 || !res.Cookies()[0].HttpOnly {
		t.Errorf("?token=: %s, cookies %v; want 200 and an HttpOnly cookie", res.Status, res.Cookies())
	}
	req, _ = http.NewRequest("GET", remote.URL+"/api/sessions", nil)
	req.AddCookie(res.Cookies()[0])
	if res, _ := http.DefaultClient.Do(req); res.StatusCode != 200 {
		t.Errorf("with the cookie: %s, want 200", res.Status)
	}
	req, _ = http.NewRequest("GET", remote.URL+"/api/sessions", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	if res, _ := http.DefaultClient.Do(req); res.StatusCode != 200 {
		t.Errorf("with Authorization: Bearer: %s, want 200", res.Status)
	}
}

// pipeline ui refuses an address beyond loopback without --allow-remote
// (exit 2, and it listens on nothing); with it, the URL it prints carries
// the access token, which every request then needs.
func TestUICommandAddress(t *testing.T) {
	dir := project(t)
	cmd := exec.Command(binary, "ui", "--addr", "0.0.0.0:0")
	cmd.Dir = dir
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), "--addr 0.0.0.0:0 is not a loopback address") ||
		!strings.Contains(string(out), "--allow-remote") {
		t.Errorf("pipeline ui --addr 0.0.0.0:0: exit %d, %q; want exit 2 saying why and the way out", code, out)
	}
	cmd = exec.Command(binary, "ui", "--addr", "127.0.0.1:0", "--allow-remote")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "PIPELINE_UI_TOKEN=tok3n")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	url := regexp.MustCompile(`http://\S+\?token=tok3n`).FindString(line)
	if url == "" {
		t.Fatalf("pipeline ui --allow-remote printed %q: want its URL with ?token=tok3n", line)
	}
	base, _, _ := strings.Cut(url, "?")
	for _, c := range []struct {
		url  string
		want int
	}{{base + "api/sessions", http.StatusUnauthorized}, {url, http.StatusOK}} {
		res, err := http.Get(c.url)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != c.want {
			t.Errorf("GET %s: %s, want %d", c.url, res.Status, c.want)
		}
	}
}

// A runner that fails before it holds the session (here: phases.yaml
// broken since the pause) is the answer's error, with its message and
// exit code, not a runner left to find.
func TestAPIResumeSaysWhyTheRunnerFailed(t *testing.T) {
	dir := project(t)
	id := pausedSession(t, dir)
	srv, hs := serve(t, ui.Options{Root: dir})
	if err := os.WriteFile(filepath.Join(dir, "phases.yaml"), []byte("version: 1\nphases: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := post(t, hs.URL+"/api/sessions/"+id+"/resume", map[string]string{ui.TokenHeader: srv.Token()}, `{}`)
	msg, _ := out["error"].(string)
	if code != http.StatusBadRequest || out["exit_code"] != float64(2) || msg == "" || strings.Contains(msg, "before it held a session") {
		t.Errorf("resume with a broken phases.yaml: %d %v; want 400, exit code 2 and the runner's own message", code, out)
	}
	t.Logf("the answer: %s", msg)
}

// Closing the server ends the open event streams (pipeline ui's Ctrl+C
// does not wait for the browsers to go).
func TestCloseEndsTheEventStreams(t *testing.T) {
	dir := project(t)
	srv, hs := serve(t, ui.Options{Root: dir})
	events := openEvents(t, hs.URL)
	srv.Close()
	select {
	case _, open := <-events.lines:
		if open {
			t.Errorf("a line after Close")
		}
	case <-time.After(testwait.Failsafe):
		t.Fatalf("the stream was still open %s after Close", testwait.Failsafe)
	}
}

// gitProject is project in a git repository with one commit: the
// sessions take checkpoints, which rewind and fork need.
func gitProject(t *testing.T) string {
	t.Helper()
	dir := project(t)
	for _, args := range [][]string{{"init", "-q"}, {"add", "."},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "start"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// Resume at a phase jumps to it, as pipeline resume --phase: the agent's
// only prompt after the pause is the build phase's.
func TestAPIResumeAtAPhase(t *testing.T) {
	dir := project(t)
	id := pausedSession(t, dir)
	srv, hs := serve(t, ui.Options{Root: dir})
	token := map[string]string{ui.TokenHeader: srv.Token()}
	events := openEvents(t, hs.URL)
	os.Remove(filepath.Join(dir, "prompts.txt"))
	if code, out := post(t, hs.URL+"/api/sessions/"+id+"/resume", token, `{"phase": "nowhere"}`); code == 200 {
		t.Fatalf("resume at a phase that is not one: %d %v, want a refusal", code, out)
	}
	if code, out := post(t, hs.URL+"/api/sessions/"+id+"/resume", token, `{"phase": "build"}`); code != 200 || out["session"] != id {
		t.Fatalf("resume at build: %d %v", code, out)
	}
	events.await(t, id, "completed")
	prompts, _ := os.ReadFile(filepath.Join(dir, "prompts.txt"))
	if strings.Contains(string(prompts), "Design the greeting") || !strings.Contains(string(prompts), "Build the greeting") {
		t.Errorf("the agent's prompts after resume at build:\n%s\nwant build's only", prompts)
	}
}

// Rewind sets a completed session back to a phase, as pipeline rewind; a
// phase that is not one is refused with the command's message.
func TestAPIRewind(t *testing.T) {
	dir := gitProject(t)
	id := pausedSession(t, dir)
	pipeline(t, dir, 0, "resume", id)
	srv, hs := serve(t, ui.Options{Root: dir})
	token := map[string]string{ui.TokenHeader: srv.Token()}
	base := hs.URL + "/api/sessions/" + id
	if code, out := post(t, base+"/rewind", token, `{"phase": "nowhere"}`); code != 400 || !strings.Contains(out["error"].(string), "nowhere") || out["exit_code"] != float64(2) {
		t.Errorf("rewind to a phase that is not one: %d %v, want 400 with the command's message", code, out)
	}
	if code, out := post(t, base+"/rewind", token, `{}`); code != 400 || out["error"] != "rewind needs --to PHASE" {
		t.Errorf("rewind to no phase: %d %v, want 400 with the command's message", code, out)
	}
	if code, out := post(t, base+"/rewind", token, `{"phase": "build"}`); code != 200 || out["session"] != id {
		t.Fatalf("rewind to build: %d %v", code, out)
	}
	var status struct {
		Status string `json:"status"`
		Phase  string `json:"phase"`
	}
	getJSON(t, base, &status)
	if status.Status != "paused" || status.Phase != "build" {
		t.Errorf("after rewind to build: %+v, want paused at build", status)
	}
}

// A task added shows in the working set; done closes it by number; an
// empty task is refused with the command's message.
func TestAPITaskAddAndDone(t *testing.T) {
	dir := project(t)
	id := pausedSession(t, dir)
	srv, hs := serve(t, ui.Options{Root: dir})
	token := map[string]string{ui.TokenHeader: srv.Token()}
	base := hs.URL + "/api/sessions/" + id
	if code, out := post(t, base+"/task", token, `{"text": ""}`); code != 400 || out["error"] != "the task is empty" {
		t.Errorf("an empty task: %d %v, want 400 with the command's message", code, out)
	}
	code, out := post(t, base+"/task", token, `{"text": "translate the greeting"}`)
	item, _ := out["item"].(map[string]any)
	if code != 200 || item == nil || item["text"] != "translate the greeting" {
		t.Fatalf("task: %d %v", code, out)
	}
	type tasks struct {
		Open []struct{ Text string } `json:"open_tasks"`
		Done []struct{ Text string } `json:"done_tasks"`
	}
	var m tasks
	getJSON(t, base+"/memory", &m)
	if len(m.Open) != 1 || m.Open[0].Text != "translate the greeting" {
		t.Fatalf("open tasks after task: %+v", m.Open)
	}
	body, _ := json.Marshal(map[string]any{"id": item["id"]})
	if code, out := post(t, base+"/done", token, string(body)); code != 200 {
		t.Fatalf("done: %d %v", code, out)
	}
	m = tasks{}
	getJSON(t, base+"/memory", &m)
	if len(m.Open) != 0 || len(m.Done) != 1 {
		t.Errorf("after done: open %+v, done %+v; want it done", m.Open, m.Done)
	}
	if code, out := post(t, base+"/done", token, `{"id": 99}`); code != 400 {
		t.Errorf("done of no such task: %d %v, want 400", code, out)
	}
}

// Fork makes a git worktree from the checkpoint before the phase and a
// session there, run by a detached runner: it pauses at design's
// checkpoint as its parent did, and records its parent.
func TestAPIFork(t *testing.T) {
	dir := gitProject(t)
	id := pausedSession(t, dir)
	srv, hs := serve(t, ui.Options{Root: dir})
	token := map[string]string{ui.TokenHeader: srv.Token()}
	base := hs.URL + "/api/sessions/" + id
	if code, out := post(t, base+"/fork", token, `{"phase": "nowhere", "worktree": "fork"}`); code != 400 || !strings.Contains(out["error"].(string), "is not a phase") {
		t.Errorf("fork at a phase that is not one: %d %v, want 400 with the command's message", code, out)
	}
	// Beside the project is outside the folder served: refused, as a
	// folder named outside it is.
	for _, body := range []string{`{"phase": "design"}`, `{"phase": "design", "worktree": "../elsewhere"}`} {
		if code, out := post(t, base+"/fork", token, body); code != 400 || !strings.Contains(out["error"].(string), "where it would not be listed") {
			t.Errorf("fork %s: %d %v, want 400 saying why", body, code, out)
		}
	}
	worktree := filepath.Join(dir, "forks", "fork")
	code, out := post(t, base+"/fork", token, `{"phase": "design", "worktree": "forks/fork"}`)
	forkID, _ := out["session"].(string)
	if code != 200 || forkID == "" || forkID == id || out["worktree"] != worktree || out["parent"] != id {
		t.Fatalf("fork: %d %v", code, out)
	}
	t.Cleanup(func() { exec.Command("git", "-C", dir, "worktree", "remove", "--force", worktree).Run() })
	var status struct {
		Status  string `json:"status"`
		Attempt int    `json:"attempt"`
		Parent  struct {
			Session string `json:"session"`
		} `json:"parent"`
	}
	testwait.Written(t, filepath.Join(worktree, ".pipeline"), "the fork paused", func() bool {
		out := pipeline(t, worktree, 0, "status", forkID, "-o", "json")
		return json.Unmarshal([]byte(out), &status) == nil && status.Status == "paused"
	})
	// Inside the folder served, the fork is listed with the others.
	var rows []sessionRow
	getJSON(t, hs.URL+"/api/sessions", &rows)
	if len(rows) != 2 || (rows[0].ID != forkID && rows[1].ID != forkID) {
		t.Errorf("the sessions listed after the fork: %+v, want %s and its fork %s", rows, id, forkID)
	}
	if status.Parent.Session != id {
		t.Errorf("the fork's parent: %+v, want %s", status.Parent, id)
	}
	if status.Attempt != 1 {
		t.Errorf("the fork's attempt: %d, want 1 (its hand-over to the runner is not a retry)", status.Attempt)
	}
}

// The resume context the next agent step would get is what pipeline
// resume --dry-run -o json prints; a completed session answers why it has
// none.
func TestAPIResumeContextIsTheDryRun(t *testing.T) {
	dir := project(t)
	id := pausedSession(t, dir)
	_, hs := serve(t, ui.Options{Root: dir})
	var got, want map[string]any
	getJSON(t, hs.URL+"/api/sessions/"+id+"/resume-context", &got)
	if err := json.Unmarshal([]byte(pipeline(t, dir, 0, "resume", id, "--dry-run", "-o", "json")), &want); err != nil {
		t.Fatal(err)
	}
	if got["resume_context"] == nil || got["resume_context"] != want["resume_context"] || got["phase"] != want["phase"] {
		t.Errorf("resume context %v, want %v as resume --dry-run says", got, want)
	}
	pipeline(t, dir, 0, "complete", id)
	res, err := http.Get(hs.URL + "/api/sessions/" + id + "/resume-context")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest && res.StatusCode != http.StatusConflict {
		t.Errorf("a completed session's resume context: %s, want a refusal", res.Status)
	}
}
