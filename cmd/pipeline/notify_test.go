package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// posted is what a local webhook server received.
type posted struct {
	mu       sync.Mutex
	bodies   map[string][]string
	headers  map[string]http.Header
	failures int
}

func webhookServer(t *testing.T) (*httptest.Server, *posted) {
	p := &posted{bodies: map[string][]string{}, headers: map[string]http.Header{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.bodies[r.URL.Path] = append(p.bodies[r.URL.Path], string(body))
		p.headers[r.URL.Path] = r.Header.Clone()
		if r.URL.Path == "/broken" {
			p.failures++
			http.Error(w, "down", http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, p
}

// A pause posts to each webhook in its service's format: Slack's
// {"text"}, Discord's {"content"}, ntfy's text with a Title, the status
// object as JSON; the URL may come from the environment; the note is
// redacted; a webhook that keeps failing is tried three times, said, and
// changes nothing.
func TestNotifyWebhooksOnAPause(t *testing.T) {
	srv, got := webhookServer(t)
	dir := t.TempDir()
	write(t, dir, "agent.sh", `echo "working"
echo "[CHECKPOINT] review it; the key is $API_TOKEN"
`)
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: command, command: [sh, ./agent.sh]}
notify:
  webhook:
    - {url: "`+srv.URL+`/slack", format: slack}
    - {url: "`+srv.URL+`/discord", format: discord, on: [paused]}
    - {url: "`+srv.URL+`/ntfy", format: ntfy}
    - {url: "${HOOK_URL}/json"}
    - {url: "`+srv.URL+`/completed-only", format: slack, on: [completed]}
    - {url: "`+srv.URL+`/broken", format: slack}
phases:
  - name: design
    prompt: Draft the design.
`)
	env := append(ciEnv(t), "HOOK_URL="+srv.URL, "API_TOKEN=s3cr3t-token-value")
	r := pipelineEnv(t, dir, env, "run")
	if r.code != exitPaused {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	id := decodeStatus(t, pipelineEnv(t, dir, env, "status", "-o", "json")).ID
	got.mu.Lock()
	defer got.mu.Unlock()
	one := func(path string) string {
		t.Helper()
		if len(got.bodies[path]) != 1 {
			t.Fatalf("%s got %d posts, want 1: %v", path, len(got.bodies[path]), got.bodies)
		}
		if strings.Contains(got.bodies[path][0], "s3cr3t-token-value") {
			t.Errorf("%s got the secret: %s", path, got.bodies[path][0])
		}
		return got.bodies[path][0]
	}
	var slack struct{ Text string }
	if err := json.Unmarshal([]byte(one("/slack")), &slack); err != nil || !strings.Contains(slack.Text, "paused in phase design") ||
		!strings.Contains(slack.Text, "why: checkpoint: review it") || !strings.Contains(slack.Text, "resume: pipeline resume "+id) {
		t.Errorf("slack: %v %q", err, slack.Text)
	}
	var discord struct{ Content string }
	if err := json.Unmarshal([]byte(one("/discord")), &discord); err != nil || !strings.Contains(discord.Content, "review it") {
		t.Errorf("discord: %v %q", err, discord.Content)
	}
	if ntfy := one("/ntfy"); !strings.Contains(ntfy, "why: checkpoint") || !strings.Contains(got.headers["/ntfy"].Get("Title"), "paused in phase design") {
		t.Errorf("ntfy: %q, title %q", ntfy, got.headers["/ntfy"].Get("Title"))
	}
	var status struct {
		Event       string `json:"event"`
		ID          string `json:"id"`
		Status      string `json:"status"`
		PauseReason string `json:"pause_reason"`
	}
	if err := json.Unmarshal([]byte(one("/json")), &status); err != nil || status.ID != id || status.Status != "paused" ||
		status.PauseReason != "checkpoint" || status.Event != "paused" {
		t.Errorf("json: %v %+v", err, status)
	}
	if n := len(got.bodies["/completed-only"]); n != 0 {
		t.Errorf("a webhook for completed only got %d posts at a pause", n)
	}
	if said := r.stdout + r.stderr; got.failures != 3 || !strings.Contains(said, "notify.webhook[5]") || !strings.Contains(said, "500") {
		t.Errorf("the broken webhook: %d tries; the run said:\n%s", got.failures, said)
	}
}

// A webhook whose environment variable is not set is said, and the run
// ends as it would have.
func TestNotifyWebhookWithoutItsURL(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
notify: {webhook: [{url: "${NOT_SET_ANYWHERE}", format: slack}]}
phases:
  - name: build
    steps:
      - run: "exit 4"
`)
	r := pipelineEnv(t, dir, ciEnv(t), "run")
	if said := r.stdout + r.stderr; r.code != exitFailed || !strings.Contains(said, "notify.webhook[0]") || !strings.Contains(said, "not an http(s) URL") {
		t.Errorf("run: exit %d\n%s", r.code, said)
	}
}

// A notify: block that cannot be posted to is refused before anything
// runs, with where it is.
func TestNotifyBadBlockIsRefused(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
notify:
  webhook:
    - {url: "ftp://x", format: slak, on: [pausd]}
phases:
  - name: build
    steps:
      - run: "true"
`)
	r := pipeline(t, dir, "validate")
	for _, want := range []string{"phases.yaml:4:", "not an http(s) URL", `did you mean "slack"`, `did you mean "paused"`} {
		if r.code != exitUsage || !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("validate: exit %d, want 2 and %q:\n%s%s", r.code, want, r.stdout, r.stderr)
		}
	}
}

// desktop: true shows the pause with notify-send (here a stand-in on
// PATH that keeps its arguments).
func TestNotifyDesktop(t *testing.T) {
	dir, bin := t.TempDir(), t.TempDir()
	write(t, bin, "notify-send", "#!/bin/sh\nprintf '%s\\n' \"$@\" > \""+dir+"/desktop.txt\"\n")
	if err := os.Chmod(filepath.Join(bin, "notify-send"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "agent.sh", "echo \"[CHECKPOINT] look at it\"\n")
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: command, command: [sh, ./agent.sh]}
notify: {desktop: true}
phases:
  - name: design
    prompt: Draft the design.
`)
	env := append(ciEnv(t), "PATH="+bin+":"+os.Getenv("PATH"))
	if r := pipelineEnv(t, dir, env, "run"); r.code != exitPaused {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	shown, err := os.ReadFile(filepath.Join(dir, "desktop.txt"))
	if err != nil {
		t.Fatalf("notify-send was not run: %v", err)
	}
	for _, want := range []string{"--urgency=critical", "paused in phase design", "why: checkpoint: look at it", "resume: pipeline resume "} {
		if !strings.Contains(string(shown), want) {
			t.Errorf("notify-send got no %q:\n%s", want, shown)
		}
	}
}
