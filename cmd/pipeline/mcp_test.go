package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pipeline-dev/pipeline/internal/mcpserver"
	"github.com/pipeline-dev/pipeline/internal/proctest"
)

// The MCP server (pipeline mcp) with the SDK's own client: in process over
// the SDK's in-memory transport, and the built binary over stdio and over
// streamable HTTP. The project is a real one in a temp folder: a command
// agent that stops at a checkpoint in the design phase, and a build phase
// whose last step waits (sleep) until the test lets it go on.

const mcpPhases = `version: 1
name: mcp-demo
agent:
  kind: command
  command: [sh, ./agent.sh, "{prompt}"]
defaults:
  pause_when:
    checkpoint: checkpoint
phases:
  - name: design
    prompt: Design the greeting.
  - name: build
    prompt: Build the greeting.
    steps:
      - agent: {}
      - name: wait
        run: touch started && (test -f go-on || sleep 30)
`

const mcpAgent = `case "$1" in
*Design*)
	if [ ! -f .checkpointed ]; then
		: > .checkpointed
		echo "drafting the greeting design"
		echo "[DECISION] greet in plain text"
		echo "[CHECKPOINT] design drafted; review it"
		exit 0
	fi
	echo "design reviewed"
	;;
*)
	echo "built: $1"
	for i in 1 2 3 4 5 6 7 8 9 10; do echo "build line $i"; done
	;;
esac
`

// mcpProject makes the project folder.
func mcpProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "phases.yaml", mcpPhases)
	write(t, dir, "agent.sh", mcpAgent)
	write(t, dir, "broken.yaml", "version: 1\nagent: {kind: command, command: [\"true\"]}\nphases:\n  - name: build\n    pause_when: {slow: elapsed > \"5m\"}\n    stepz: []\n")
	return dir
}

// mcpClient is a client session and the resource updates it was sent.
type mcpClient struct {
	cs      *mcp.ClientSession
	updates chan string
}

func newMCPClient() (*mcp.Client, chan string) {
	updates := make(chan string, 64)
	client := mcp.NewClient(&mcp.Implementation{Name: "pipeline-test", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updates <- req.Params.URI
		}})
	return client, updates
}

// inProcess serves dir from a server in this process, over the SDK's
// in-memory transports.
func inProcess(t *testing.T, dir string) *mcpClient {
	t.Helper()
	srv, err := mcpserver.New(mcpserver.Options{Root: dir, Binary: binary})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	serverT, clientT := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.MCP().Connect(ctx, serverT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	client, updates := newMCPClient()
	cs, err := client.Connect(ctx, clientT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return &mcpClient{cs: cs, updates: updates}
}

// overStdio starts the built binary, pipeline mcp, in dir.
func overStdio(t *testing.T, dir string) *mcpClient {
	t.Helper()
	cmd := exec.Command(binary, "mcp")
	cmd.Dir = dir
	client, updates := newMCPClient()
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return &mcpClient{cs: cs, updates: updates}
}

// overHTTP starts the built binary, pipeline mcp --http 127.0.0.1:0, in
// dir, and connects to the address it says it serves.
func overHTTP(t *testing.T, dir string) *mcpClient {
	t.Helper()
	cmd := exec.Command(binary, "mcp", "--http", "127.0.0.1:0")
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil {
		t.Fatalf("pipeline mcp --http said nothing: %v", err)
	}
	m := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("pipeline mcp --http: %q names no address", line)
	}
	client, updates := newMCPClient()
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: m[1]}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return &mcpClient{cs: cs, updates: updates}
}

// call calls a tool that must succeed and decodes its structured output.
func (c *mcpClient) call(t *testing.T, name string, args any, out any) {
	t.Helper()
	res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s(%v): tool error: %s", name, args, toolText(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %v: %s", name, err, b)
	}
}

// callError calls a tool that must fail with a tool error, and returns
// its text.
func (c *mcpClient) callError(t *testing.T, name string, args any) string {
	t.Helper()
	res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: a protocol error, not a tool error: %v", name, err)
	}
	if !res.IsError {
		t.Fatalf("%s(%v) succeeded, want a tool error: %s", name, args, toolText(res))
	}
	return toolText(res)
}

func toolText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// mcpStatus is what the tests read of the status tool.
type mcpStatus struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	Phase       string `json:"phase"`
	Step        string `json:"step"`
	PauseReason string `json:"pause_reason"`
	PauseNote   string `json:"pause_note"`
	RunExitCode *int   `json:"run_exit_code"`
	Resume      string `json:"resume_command"`
	Pause       *struct {
		Reason     string `json:"reason"`
		Expression string `json:"expression"`
		Note       string `json:"note"`
	} `json:"pause"`
	Phases []struct {
		Name  string   `json:"name"`
		Notes []string `json:"notes"`
	} `json:"phases"`
}

type mcpStarted struct {
	Session string `json:"session"`
	Status  string `json:"status"`
	PID     int    `json:"pid"`
	Log     string `json:"log"`
}

func (c *mcpClient) status(t *testing.T, id string) mcpStatus {
	t.Helper()
	var s mcpStatus
	c.call(t, "status", map[string]any{"session": id}, &s)
	return s
}

// subscribe subscribes to session id's resource.
func (c *mcpClient) subscribe(t *testing.T, id string) {
	t.Helper()
	if err := c.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "pipeline://sessions/" + id}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
}

// awaitStatus waits, through the notifications of the subscription to
// id, until its status is want; it returns the status and how many
// notifications came meanwhile.
func (c *mcpClient) awaitStatus(t *testing.T, id, want string) (mcpStatus, int) {
	t.Helper()
	timeout := time.NewTimer(failsafe)
	defer timeout.Stop()
	for n := 0; ; {
		s := c.status(t, id)
		if s.Status == want {
			return s, n
		}
		select {
		case uri := <-c.updates:
			if uri == "pipeline://sessions/"+id {
				n++
			}
		case <-timeout.C:
			t.Fatalf("session %s is %s (phase %s), still not %s after %v of notifications", id, s.Status, s.Phase, want, failsafe)
		}
	}
}

// awaitUpdate waits for a notifications/resources/updated of session id.
func (c *mcpClient) awaitUpdate(t *testing.T, id string) {
	t.Helper()
	timeout := time.After(failsafe)
	for {
		select {
		case uri := <-c.updates:
			if uri == "pipeline://sessions/"+id {
				return
			}
		case <-timeout:
			t.Fatalf("no notifications/resources/updated of session %s within %v", id, failsafe)
		}
	}
}

// drain empties the notifications received so far.
func (c *mcpClient) drain() {
	for {
		select {
		case <-c.updates:
		default:
			return
		}
	}
}

// awaitFile waits for path to be made, through fsnotify.
func awaitFile(t *testing.T, path string) {
	t.Helper()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Add(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(failsafe)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case <-w.Events:
		case <-timeout:
			t.Fatalf("%s was not made within %v", path, failsafe)
		}
	}
}

var mcpTools = []string{"logs", "memory", "pause", "plan", "resume", "run", "search", "sessions", "status", "validate"}

// checkTools lists the tools: every one, each with an input schema of
// type object and an output schema.
func (c *mcpClient) checkTools(t *testing.T) {
	t.Helper()
	res, err := c.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		schema, _ := json.Marshal(tool.InputSchema)
		if !strings.Contains(string(schema), `"type":"object"`) {
			t.Errorf("tool %s: input schema %s", tool.Name, schema)
		}
		if tool.OutputSchema == nil {
			t.Errorf("tool %s has no output schema", tool.Name)
		}
		if tool.Description == "" {
			t.Errorf("tool %s has no description", tool.Name)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, mcpTools) {
		t.Errorf("tools %v, want %v", names, mcpTools)
	}
	// The inputs are typed: status takes a session.
	for _, tool := range res.Tools {
		if schema, _ := json.Marshal(tool.InputSchema); tool.Name == "status" && !strings.Contains(string(schema), `"session"`) {
			t.Errorf("status's input schema has no session: %s", schema)
		}
	}
}

// runToCheckpoint runs the pipeline: the session id comes back at once,
// and the session pauses at the design's checkpoint.
func (c *mcpClient) runToCheckpoint(t *testing.T) mcpStatus {
	t.Helper()
	var started mcpStarted
	c.call(t, "run", map[string]any{}, &started)
	if started.Session == "" || started.PID == 0 || !strings.Contains(started.Log, ".pipeline") {
		t.Fatalf("run: %+v", started)
	}
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(started.Log)
			t.Logf("the runner's output (%s):\n%s", started.Log, log)
		}
	})
	c.subscribe(t, started.Session)
	s, _ := c.awaitStatus(t, started.Session, "paused")
	// The session says paused before its runner has made its last writes
	// (the snapshot, the index) and gone: the test's folder goes when the
	// test ends, and the runner must be gone first.
	proctest.AwaitExit(t, started.PID)
	if s.ID != started.Session || s.PauseReason != "checkpoint" || s.Phase != "design" ||
		s.Pause == nil || !strings.Contains(s.Pause.Note, "design drafted; review it") || s.RunExitCode == nil || *s.RunExitCode != 3 {
		t.Fatalf("after run: %+v (pause %+v)", s, s.Pause)
	}
	if !strings.HasSuffix(s.Resume, started.Session) {
		t.Errorf("resume command %q", s.Resume)
	}
	return s
}

// checkErrors: what an agent gets wrong comes back as a tool error that
// says what to do.
func (c *mcpClient) checkErrors(t *testing.T, dir, id string) {
	t.Helper()
	if text := c.callError(t, "status", map[string]any{"session": "20990101-000000000-abcdef"}); !strings.Contains(text, "no such session") || !strings.Contains(text, "sessions tool") {
		t.Errorf("unknown session: %s", text)
	}
	if text := c.callError(t, "status", map[string]any{"session": "../../etc"}); !strings.Contains(text, "not a session id") {
		t.Errorf("a path for a session: %s", text)
	}
	if text := c.callError(t, "validate", map[string]any{"files": []string{"../outside/phases.yaml"}}); !strings.Contains(text, "outside the folder this server exposes") {
		t.Errorf("a path outside: %s", text)
	}
	if text := c.callError(t, "plan", map[string]any{"file": "/etc/passwd"}); !strings.Contains(text, "outside the folder this server exposes") {
		t.Errorf("an absolute path outside: %s", text)
	}
	if text := c.callError(t, "validate", map[string]any{"files": []string{"escape/phases.yaml"}}); !strings.Contains(text, "symbolic link") {
		t.Errorf("a link out: %s", text)
	}
	if text := c.callError(t, "resume", map[string]any{"session": id, "phase": "nope"}); !strings.Contains(text, `"nope" is not a phase`) || !strings.Contains(text, "design, build") {
		t.Errorf("a bad phase: %s", text)
	}
	if text := c.callError(t, "logs", map[string]any{"session": id, "phase": "nope"}); !strings.Contains(text, "design, build") {
		t.Errorf("logs of a bad phase: %s", text)
	}
	if text := c.callError(t, "run", map[string]any{"file": "broken.yaml"}); !strings.Contains(text, "broken.yaml:") || !strings.Contains(text, "validate") {
		t.Errorf("run of a broken file: %s", text)
	}
}

// linkOut makes escape/ in dir a link to a folder outside it.
func linkOut(t *testing.T, dir string) {
	t.Helper()
	outside := t.TempDir()
	write(t, outside, "phases.yaml", mcpPhases)
	if err := os.Symlink(outside, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
}

// Every tool, resource and prompt, in process: run to the checkpoint,
// resume with notes into the build, pause it with notes while its step
// runs, resume to the end, with the notification of each change.
func TestMCPInProcessEveryTool(t *testing.T) {
	dir := mcpProject(t)
	linkOut(t, dir)
	c := inProcess(t, dir)
	c.checkTools(t)
	ctx := context.Background()

	var v struct {
		Valid    bool `json:"valid"`
		ExitCode int  `json:"exit_code"`
		Files    []struct {
			File     string `json:"file"`
			Valid    bool   `json:"valid"`
			Problems []struct {
				File    string `json:"file"`
				Line    int    `json:"line"`
				Column  int    `json:"column"`
				Message string `json:"message"`
			} `json:"problems"`
		} `json:"files"`
	}
	c.call(t, "validate", map[string]any{"files": []string{"phases.yaml", "broken.yaml"}}, &v)
	if v.Valid || v.ExitCode != 2 || len(v.Files) != 2 || !v.Files[0].Valid || v.Files[1].Valid || len(v.Files[1].Problems) < 2 {
		t.Fatalf("validate: %+v", v)
	}
	for _, p := range v.Files[1].Problems {
		if p.File != "broken.yaml" || p.Line == 0 || p.Column == 0 {
			t.Errorf("a problem without its place: %+v", p)
		}
	}
	var plan struct {
		File string `json:"file"`
		Plan struct {
			Phases []struct {
				Name string `json:"name"`
			} `json:"phases"`
		} `json:"plan"`
	}
	c.call(t, "plan", map[string]any{}, &plan)
	if plan.File != "phases.yaml" || len(plan.Plan.Phases) != 2 || plan.Plan.Phases[1].Name != "build" {
		t.Fatalf("plan: %+v", plan)
	}

	paused := c.runToCheckpoint(t)
	id := paused.ID
	c.checkErrors(t, dir, id)

	var sessions struct {
		Sessions []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"sessions"`
	}
	c.call(t, "sessions", map[string]any{}, &sessions)
	if len(sessions.Sessions) != 1 || sessions.Sessions[0].ID != id || sessions.Sessions[0].Status != "paused" {
		t.Fatalf("sessions: %+v", sessions)
	}

	// Logs, bounded.
	var logs struct {
		Session     string `json:"session"`
		Truncated   bool   `json:"truncated"`
		Transcripts []struct {
			Transcript string `json:"transcript"`
			Text       string `json:"text"`
			Resource   string `json:"resource"`
		} `json:"transcripts"`
	}
	c.call(t, "logs", map[string]any{"session": id}, &logs)
	if len(logs.Transcripts) != 1 || !strings.Contains(logs.Transcripts[0].Text, "drafting the greeting design") || logs.Transcripts[0].Transcript != "design/1-agent.log" {
		t.Fatalf("logs: %+v", logs)
	}
	transcriptURI := logs.Transcripts[0].Resource
	c.call(t, "logs", map[string]any{"session": id, "lines": 1}, &logs)
	if !logs.Truncated || len(logs.Transcripts) != 1 || strings.Count(strings.TrimSuffix(logs.Transcripts[0].Text, "\n"), "\n") != 0 {
		t.Fatalf("logs, 1 line: %+v", logs)
	}

	// Memory: the agent's decision is in the working set; a pin goes in.
	var memory struct {
		Action string `json:"action"`
		Memory any    `json:"memory"`
	}
	c.call(t, "memory", map[string]any{"session": id}, &memory)
	if b, _ := json.Marshal(memory.Memory); memory.Action != "show" || !strings.Contains(string(b), "greet in plain text") {
		t.Fatalf("memory: %s %s", memory.Action, b)
	}
	c.call(t, "memory", map[string]any{"session": id, "pin": "the greeting is hello"}, &memory)
	c.call(t, "memory", map[string]any{"session": id}, &memory)
	if b, _ := json.Marshal(memory.Memory); !strings.Contains(string(b), "the greeting is hello") {
		t.Fatalf("memory after pin: %s", b)
	}
	var found struct {
		Results any `json:"results"`
	}
	c.call(t, "search", map[string]any{"query": "drafting greeting"}, &found)
	if b, _ := json.Marshal(found.Results); !strings.Contains(string(b), id) {
		t.Fatalf("search: %s", b)
	}

	// Resources: the session and its transcript are listed and read.
	list, err := c.cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range list.Resources {
		uris = append(uris, r.URI)
		if r.URI == "pipeline://sessions/"+id && r.MIMEType != "application/json" {
			t.Errorf("session resource %+v", r)
		}
	}
	if !slices.Contains(uris, "pipeline://sessions/"+id) || !slices.Contains(uris, transcriptURI) {
		t.Fatalf("resources/list: %v, want the session and %s", uris, transcriptURI)
	}
	read, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "pipeline://sessions/" + id})
	if err != nil {
		t.Fatal(err)
	}
	var asResource mcpStatus
	if err := json.Unmarshal([]byte(read.Contents[0].Text), &asResource); err != nil || asResource.ID != id || asResource.Status != "paused" {
		t.Fatalf("the session resource: %v %s", err, read.Contents[0].Text)
	}
	read, err = c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: transcriptURI})
	if err != nil || !strings.Contains(read.Contents[0].Text, "[CHECKPOINT] design drafted") {
		t.Fatalf("the transcript resource: %v %+v", err, read)
	}
	if _, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "pipeline://sessions/" + id + "/transcripts/../../x.log"}); err == nil {
		t.Error("a transcript URI with .. was read")
	}

	// Prompts, from the real status.
	c.checkPrompts(t, id)

	// Resume with notes: the design goes on, the build's wait step
	// starts; pause it with notes while it runs.
	c.drain()
	var started mcpStarted
	c.call(t, "resume", map[string]any{"session": id, "notes": "the design is fine; go on"}, &started)
	if started.Session != id {
		t.Fatalf("resume: %+v", started)
	}
	awaitFile(t, filepath.Join(dir, "started"))
	var pause struct {
		Session string `json:"session"`
		Result  string `json:"result"`
	}
	c.call(t, "pause", map[string]any{"session": id, "notes": "check the build output first"}, &pause)
	if pause.Session != id || pause.Result != "paused" {
		t.Fatalf("pause: %+v", pause)
	}
	s, _ := c.awaitStatus(t, id, "paused")
	if s.Phase != "build" || s.Step != "wait" || s.PauseReason != "paused-by-human" {
		t.Fatalf("after pause: %+v", s)
	}

	// Resume to the end: the change is notified.
	write(t, dir, "go-on", "")
	c.drain()
	c.call(t, "resume", map[string]any{"session": id, "notes": "the output is fine"}, &started)
	c.awaitUpdate(t, id)
	s, _ = c.awaitStatus(t, id, "completed")
	if s.RunExitCode == nil || *s.RunExitCode != 0 {
		t.Errorf("completed: %+v", s)
	}
	var notes []string
	for _, p := range s.Phases {
		notes = append(notes, p.Notes...)
	}
	for _, want := range []string{"the design is fine; go on", "check the build output first", "the output is fine"} {
		if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, want) }) {
			t.Errorf("note %q not recorded: %q", want, notes)
		}
	}
	if text := c.callError(t, "resume", map[string]any{"session": id}); !strings.Contains(text, "is completed") || !strings.Contains(text, "new") {
		t.Errorf("resume of a completed session: %s", text)
	}
}

// checkPrompts gets both prompts for paused session id.
func (c *mcpClient) checkPrompts(t *testing.T, id string) {
	t.Helper()
	ctx := context.Background()
	list, err := c.cs.ListPrompts(ctx, nil)
	if err != nil || len(list.Prompts) != 2 {
		t.Fatalf("prompts/list: %v %+v", err, list)
	}
	explain, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "explain-pause", Arguments: map[string]string{"session": id}})
	if err != nil {
		t.Fatal(err)
	}
	text := explain.Messages[0].Content.(*mcp.TextContent).Text
	for _, want := range []string{id, "Pause reason: checkpoint", "Note: design drafted; review it", "pipeline resume " + id, "Phase: design"} {
		if !strings.Contains(text, want) {
			t.Errorf("explain-pause lacks %q:\n%s", want, text)
		}
	}
	resume, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "resume-with-notes", Arguments: map[string]string{"session": id, "notes": "use the v2 endpoint"}})
	if err != nil {
		t.Fatal(err)
	}
	text = resume.Messages[0].Content.(*mcp.TextContent).Text
	for _, want := range []string{"use the v2 endpoint", "resume tool", "pipeline resume " + id + " --notes 'use the v2 endpoint'", "checkpoint"} {
		if !strings.Contains(text, want) {
			t.Errorf("resume-with-notes lacks %q:\n%s", want, text)
		}
	}
	if _, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "explain-pause", Arguments: map[string]string{"session": "20990101-000000000-abcdef"}}); err == nil ||
		!strings.Contains(err.Error(), "sessions tool") {
		t.Errorf("a prompt for an unknown session: %v", err)
	}
}

// The built binary over stdio (the SDK's CommandTransport): the tools,
// a run to its checkpoint with the notification, resources, prompts.
func TestMCPStdioBinary(t *testing.T) {
	dir := mcpProject(t)
	linkOut(t, dir)
	c := overStdio(t, dir)
	c.checkTools(t)
	s := c.runToCheckpoint(t)
	c.checkErrors(t, dir, s.ID)
	c.checkPrompts(t, s.ID)
	read, err := c.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "pipeline://sessions/" + s.ID})
	if err != nil || !strings.Contains(read.Contents[0].Text, `"status": "paused"`) {
		t.Fatalf("read: %v %+v", err, read)
	}
}

// The built binary over streamable HTTP on 127.0.0.1.
func TestMCPHTTPBinary(t *testing.T) {
	dir := mcpProject(t)
	c := overHTTP(t, dir)
	c.checkTools(t)
	s := c.runToCheckpoint(t)
	var st mcpStatus
	c.call(t, "status", map[string]any{}, &st)
	if st.ID != s.ID || st.Status != "paused" {
		t.Fatalf("status of the latest session: %+v", st)
	}
}

// --http refuses an address that is not loopback, and says why.
func TestMCPHTTPRefusesNonLoopback(t *testing.T) {
	r := pipeline(t, t.TempDir(), "mcp", "--http", "0.0.0.0:0")
	if r.code != 2 || !strings.Contains(r.stderr, "not a loopback address") || !strings.Contains(r.stderr, "--allow-non-loopback") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
}
