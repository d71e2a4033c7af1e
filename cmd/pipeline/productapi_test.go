package main

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pipeline-dev/pipeline/internal/mcpserver"
)

// The MCP server calls the product API (package app) in process: its read
// tools start no process, what a client sends never becomes a flag, and
// what the store keeps of a request is redacted.

// inProcessWith serves dir from a server in this process whose runner
// binary is bin.
func inProcessWith(t *testing.T, dir, bin string) *mcpClient {
	t.Helper()
	srv, err := mcpserver.New(mcpserver.Options{Root: dir, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(context.Background(), serverT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	client, updates := newMCPClient()
	cs, err := client.Connect(context.Background(), clientT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return &mcpClient{cs: cs, updates: updates}
}

// pausedAtCheckpoint makes the MCP project and runs it, with the CLI, to
// its checkpoint pause.
func pausedAtCheckpoint(t *testing.T, env []string) (dir, id string) {
	t.Helper()
	dir = mcpProject(t)
	r := pipelineEnv(t, dir, env, "run", "-o", "json")
	if r.code != exitPaused {
		t.Fatalf("run: exit %d, want 3: %s", r.code, r.stderr)
	}
	var s struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil || s.ID == "" {
		t.Fatalf("run -o json: %v: %s", err, r.stdout)
	}
	return dir, s.ID
}

func TestMCPReadToolsStartNoProcess(t *testing.T) {
	dir, id := pausedAtCheckpoint(t, nil)
	// The runner binary the server would start: it leaves a mark.
	marks := filepath.Join(t.TempDir(), "started")
	spy := filepath.Join(t.TempDir(), "pipeline-spy")
	write(t, filepath.Dir(spy), filepath.Base(spy), "#!/bin/sh\necho \"$@\" >> "+marks+"\n")
	os.Chmod(spy, 0o755)
	c := inProcessWith(t, dir, spy)
	for i := range 20 {
		var status mcpStatus
		c.call(t, "status", map[string]any{"session": id}, &status)
		if status.ID != id || status.Status != "paused" {
			t.Fatalf("status %d: %+v", i, status)
		}
		var plan map[string]any
		c.call(t, "plan", map[string]any{}, &plan)
		if plan["plan"] == nil {
			t.Fatalf("plan %d: %v", i, plan)
		}
		var list struct {
			Sessions []struct {
				ID string `json:"id"`
			} `json:"sessions"`
		}
		c.call(t, "sessions", map[string]any{"file": "phases.yaml"}, &list)
		if len(list.Sessions) != 1 || list.Sessions[0].ID != id {
			t.Fatalf("sessions %d: %+v", i, list)
		}
	}
	var other map[string]any
	c.call(t, "memory", map[string]any{"session": id}, &other)
	c.call(t, "logs", map[string]any{"session": id}, &other)
	c.call(t, "search", map[string]any{"query": "greeting"}, &other)
	c.call(t, "validate", map[string]any{"file": "phases.yaml"}, &other)
	if b, err := os.ReadFile(marks); err == nil {
		t.Fatalf("the read tools started the binary: %s", b)
	}
}

func TestMCPMemoryPinsDashHelpAsText(t *testing.T) {
	dir, id := pausedAtCheckpoint(t, nil)
	c := inProcess(t, dir)
	for _, pin := range []string{"--help", "-o", "--file=/etc/passwd"} {
		var out struct {
			Action string `json:"action"`
			Memory struct {
				Result  string `json:"result"`
				Session string `json:"session"`
			} `json:"memory"`
		}
		c.call(t, "memory", map[string]any{"session": id, "pin": pin}, &out)
		if out.Action != "pin" || out.Memory.Result != "pinned" || out.Memory.Session != id {
			t.Fatalf("pin %q: %+v", pin, out)
		}
	}
	var shown struct {
		Memory struct {
			PinnedFacts []struct {
				Text string `json:"text"`
			} `json:"pinned_facts"`
		} `json:"memory"`
	}
	c.call(t, "memory", map[string]any{"session": id}, &shown)
	var texts []string
	for _, f := range shown.Memory.PinnedFacts {
		texts = append(texts, f.Text)
	}
	if !slices.Equal(texts, []string{"--help", "-o", "--file=/etc/passwd"}) {
		t.Fatalf("pinned facts %q, want the three pins as text", texts)
	}
}

// TestResumeNotesSecretRedactedInJSONAndStore: a secret given in a note
// is redacted in resume -o json, and nothing under .pipeline holds it
// after the MCP resume tool (whose runner's JSON the store keeps).
func TestResumeNotesSecretRedactedInJSONAndStore(t *testing.T) {
	const secret = "tok-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
	env := append(os.Environ(), "DEPLOY_API_TOKEN="+secret)
	dir, id := pausedAtCheckpoint(t, env)
	write(t, dir, "go-on", "")
	r := pipelineEnv(t, dir, env, "resume", id, "--notes", "deploy with "+secret, "-o", "json")
	if r.code != exitCompleted {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, secret) {
		t.Fatalf("resume -o json printed the secret:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "[REDACTED") {
		t.Fatalf("resume -o json: the note is not there, redacted:\n%s", r.stdout)
	}

	// Again through the MCP resume tool, on a second session.
	os.Remove(filepath.Join(dir, ".checkpointed"))
	os.Remove(filepath.Join(dir, "go-on"))
	t.Setenv("DEPLOY_API_TOKEN", secret)
	c := inProcess(t, dir)
	s := c.runToCheckpoint(t)
	write(t, dir, "go-on", "")
	var started mcpStarted
	c.call(t, "resume", map[string]any{"session": s.ID, "notes": "deploy with " + secret}, &started)
	if started.Session != s.ID {
		t.Fatalf("resume: %+v", started)
	}
	c.awaitStatus(t, s.ID, "completed")
	filepath.WalkDir(filepath.Join(dir, ".pipeline"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), secret) {
			t.Errorf("%s holds the secret", path)
		}
		return nil
	})
}

// TestMCPSessionsFindsStoresAsDeepAsTheCLI: one walk of the stores below
// a folder serves sessions --all and the MCP sessions tool.
func TestMCPSessionsFindsStoresAsDeepAsTheCLI(t *testing.T) {
	root := t.TempDir()
	var want []string
	for depth := 6; depth <= 9; depth++ {
		parts := []string{root}
		for i := range depth - 1 {
			parts = append(parts, "d"+string(rune('a'+i)))
		}
		dir := filepath.Join(parts...)
		os.MkdirAll(dir, 0o755)
		write(t, dir, "phases.yaml", "version: 1\nname: deep\nphases:\n  - name: only\n    steps:\n      - run: 'true'\n")
		if r := pipeline(t, dir, "run", "-o", "json"); r.code != 0 {
			t.Fatalf("run at depth %d: %d %s", depth, r.code, r.stderr)
		}
	}
	r := pipeline(t, root, "sessions", "--all", "-o", "json")
	var cli []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &cli); err != nil {
		t.Fatal(err, r.stdout)
	}
	for _, s := range cli {
		want = append(want, s.ID)
	}
	if len(want) == 0 {
		t.Fatal("sessions --all found none")
	}
	var out struct {
		Sessions []struct {
			ID string `json:"id"`
		} `json:"sessions"`
	}
	c := inProcess(t, root)
	c.call(t, "sessions", map[string]any{}, &out)
	var got []string
	for _, s := range out.Sessions {
		got = append(got, s.ID)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("MCP sessions %v, sessions --all %v", got, want)
	}
	// And each is found by its id, as every tool that takes one finds it.
	for _, id := range want {
		var s mcpStatus
		c.call(t, "status", map[string]any{"session": id}, &s)
		if s.ID != id || s.Status != "completed" {
			t.Errorf("status of %s: %+v", id, s)
		}
	}
}

// TestMCPResumeNotesThatLookLikeFlags: the runner a tool starts gets a
// client's values as values: notes that read as a flag are notes.
func TestMCPResumeNotesThatLookLikeFlags(t *testing.T) {
	dir := mcpProject(t)
	c := inProcess(t, dir)
	s := c.runToCheckpoint(t)
	write(t, dir, "go-on", "")
	var started mcpStarted
	c.call(t, "resume", map[string]any{"session": s.ID, "notes": "--help"}, &started)
	if started.Session != s.ID {
		t.Fatalf("resume: %+v", started)
	}
	c.awaitStatus(t, s.ID, "completed")
	var done mcpStatus
	c.call(t, "status", map[string]any{"session": s.ID}, &done)
	b, _ := json.Marshal(done)
	if !strings.Contains(string(b), `"--help"`) {
		t.Fatalf("the note --help is not among the session's notes: %s", b)
	}
}
