package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/pipeline-dev/pipeline/internal/proctest"
	"github.com/pipeline-dev/pipeline/internal/tokens"
)

// Issue 14 end to end: the working set fed by a command agent's markers
// and by people, kept through a kill -9, the project's memory, and the
// resume context that carries them within its budget; all through the
// built binary.

// memoryItem is one entry of pipeline memory -o json.
type memoryItem struct {
	ID       int     `json:"id"`
	Text     string  `json:"text"`
	Phase    string  `json:"phase"`
	Source   string  `json:"source"`
	Closed   *string `json:"closed"`
	ClosedBy string  `json:"closed_by"`
}

// memoryOut is pipeline memory -o json.
type memoryOut struct {
	Session      string       `json:"session"`
	Status       string       `json:"status"`
	Summary      []memoryItem `json:"summary"`
	Pinned       []memoryItem `json:"pinned_facts"`
	Decisions    []memoryItem `json:"decisions"`
	Open         []memoryItem `json:"open_tasks"`
	Done         []memoryItem `json:"done_tasks"`
	Project      []memoryItem `json:"project_facts"`
	ProjectError string       `json:"project_error"`
	Files        []fileTouch  `json:"files_touched"`
}

// fileTouch is one of memory -o json's files_touched.
type fileTouch struct {
	Path  string `json:"path"`
	Phase string `json:"phase"`
}

// memoryOf runs pipeline memory -o json (args name the session) in dir
// with env (nil: this process's).
func memoryOf(t *testing.T, dir string, env []string, args ...string) memoryOut {
	t.Helper()
	r := pipelineEnv(t, dir, env, append([]string{"memory", "-o", "json"}, args...)...)
	var m memoryOut
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil || r.code != 0 {
		t.Fatalf("memory -o json: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	return m
}

// item finds the entry with text in list.
func item(list []memoryItem, text string) (memoryItem, bool) {
	i := slices.IndexFunc(list, func(m memoryItem) bool { return m.Text == text })
	if i < 0 {
		return memoryItem{}, false
	}
	return list[i], true
}

// texts are the texts of list, in order.
func texts(list []memoryItem) []string {
	var out []string
	for _, m := range list {
		out = append(out, m.Text)
	}
	return out
}

// wantItem checks that list has text, from source, in phase.
func wantItem(t *testing.T, what string, list []memoryItem, text, source, phase string) memoryItem {
	t.Helper()
	m, ok := item(list, text)
	if !ok {
		t.Errorf("%s lack %q: %q", what, text, texts(list))
		return m
	}
	if m.Source != source || m.Phase != phase || m.ID <= 0 {
		t.Errorf("%s: %q is #%d from %q in phase %q; want from %q in %q", what, text, m.ID, m.Source, m.Phase, source, phase)
	}
	return m
}

// awaitMemory runs pipeline memory -o json until ok says yes, each time
// the store is written: what a running session's store shows as its
// runner records it.
func awaitMemory(t *testing.T, dir string, ok func(memoryOut) bool) memoryOut {
	t.Helper()
	var m memoryOut
	awaitWritten(t, filepath.Join(dir, ".pipeline"), "the awaited working set", func() bool {
		m = memoryOf(t, dir, nil)
		return ok(m)
	})
	return m
}

// memoryAgent writes agent.sh, a command agent that appends each prompt
// it is sent to prompts.txt (separated by =====) and then runs script.
func memoryAgent(t *testing.T, dir, script string) {
	t.Helper()
	write(t, dir, "agent.sh", "#!/bin/sh\nprompt=$(cat)\nprintf '%s\\n=====\\n' \"$prompt\" >> prompts.txt\n"+script)
	if err := os.Chmod(filepath.Join(dir, "agent.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// sentPrompts are the prompts agent.sh was sent, oldest first.
func sentPrompts(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "prompts.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n=====\n"), "\n=====\n")
}

// resumeContextOf is the resume context a prompt begins with: the text
// before the step's own prompt.
func resumeContextOf(t *testing.T, prompt, stepPrompt string) string {
	t.Helper()
	context, _, ok := strings.Cut(prompt, "\n\n"+stepPrompt+"\n")
	if !ok || !strings.HasPrefix(context, "[Resume context]") {
		t.Fatalf("the prompt does not begin with a resume context before %q:\n%s", stepPrompt, prompt)
	}
	return context
}

// mkfifo makes a named pipe in dir: an agent that reads it blocks until
// the test writes a line.
func mkfifo(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// release lets an agent blocked reading the fifo go on.
func release(t *testing.T, fifo string) {
	t.Helper()
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// An empty working set: the text says how it fills, and the JSON has
// every list, empty, never null.
func TestMemoryOfAnEmptyWorkingSet(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nphases: [{name: a, steps: [{run: 'true'}]}]\n")
	if r := pipeline(t, dir, "run"); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	r := pipeline(t, dir, "memory")
	wantIn(t, r.stdout, []string{"(completed)", "The working set is empty", "pipeline memory pin TEXT"},
		[]string{"Decisions", "Open tasks", "Pinned facts"})
	if r.code != 0 {
		t.Errorf("memory: exit %d: %s", r.code, r.stderr)
	}
	js := pipeline(t, dir, "memory", "-o", "json")
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(js.stdout), &raw); err != nil || js.code != 0 {
		t.Fatalf("memory -o json: exit %d, %v: %s", js.code, err, js.stdout)
	}
	var keys []string
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"decisions", "done_tasks", "files_touched", "open_tasks", "pinned_facts", "project_facts", "session", "status", "summary"}
	if !slices.Equal(keys, want) {
		t.Errorf("memory -o json keys %v, want %v", keys, want)
	}
	for _, k := range want[:6] {
		if string(raw[k]) != "[]" {
			t.Errorf("%s is %s, want []", k, raw[k])
		}
	}
	if r := pipeline(t, dir, "memory", "--project"); r.code != 0 || !strings.Contains(r.stdout, "no project facts pinned") {
		t.Errorf("memory --project: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
}

// A command agent's markers, as it prints them, reach the working set
// with the phase and the agent as source; a later phase's [DONE] with a
// close match of the task's text closes it; a marker mid-line feeds
// nothing.
func TestCommandAgentMarkersFeedTheWorkingSet(t *testing.T) {
	dir := t.TempDir()
	memoryAgent(t, dir, `case "$PIPELINE_PHASE" in
design)
  echo "Looking at the code."
  echo "[DECISION] keep the index under .pipeline/"
  echo "- [FACT] the API answers 429 with a Retry-After"
  echo "**[TODO]** Fix login bug"
  echo "1. [TODO] document the retry flag"
  echo "Print [TODO] lines for open tasks."
  echo "> [SUMMARY] design drafted; the storage layer is next"
  ;;
build)
  echo "[DONE] fixed the login bugs"
  echo "build finished"
  ;;
esac
`)
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: command, command: [./agent.sh]}
phases:
  - {name: design, prompt: Draft the design.}
  - {name: build, prompt: Build it.}
`)
	if r := pipeline(t, dir, "run"); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	m := memoryOf(t, dir, nil)
	wantItem(t, "decisions", m.Decisions, "keep the index under .pipeline/", "agent", "design")
	wantItem(t, "pinned facts", m.Pinned, "the API answers 429 with a Retry-After", "agent", "design")
	wantItem(t, "summary", m.Summary, "design drafted; the storage layer is next", "agent", "design")
	if got := texts(m.Open); !slices.Equal(got, []string{"document the retry flag"}) {
		t.Errorf("open tasks %q, want the one the [DONE] did not close", got)
	}
	done := wantItem(t, "done tasks", m.Done, "Fix login bug", "agent", "design")
	if done.Closed == nil || done.ClosedBy != "fixed the login bugs" {
		t.Errorf("the done task: closed %v by %q; want closed by the build's [DONE]", done.Closed, done.ClosedBy)
	}
	if len(m.Decisions) != 1 || len(m.Pinned) != 1 || len(m.Done) != 1 {
		t.Errorf("decisions %q, facts %q, done %q: one each", texts(m.Decisions), texts(m.Pinned), texts(m.Done))
	}
	// The agent's prompts name the markers, in one line that feeds nothing.
	for _, p := range sentPrompts(t, dir) {
		if !strings.Contains(p, "starts with [DECISION], [FACT], [TODO], [DONE] or [SUMMARY]") {
			t.Errorf("a prompt lacks the markers' line:\n%s", p)
		}
	}
	text := pipeline(t, dir, "memory").stdout
	wantIn(t, text, []string{"Decisions\n  #", "keep the index under .pipeline/  (agent, design, ", "Open tasks\n  #",
		"Fix login bug  (agent, design, ", `closed by "fixed the login bugs"`}, []string{"lines for open tasks"})
}

// The working set is in the event log as the agent prints it: a kill -9
// of the runner mid-step keeps the markers; memory shows them, a replay
// of the log alone (state.json removed) has them, and the resumed session
// goes on with them.
func TestWorkingSetSurvivesKill9AndReplay(t *testing.T) {
	dir := t.TempDir()
	memoryAgent(t, dir, `if [ -f again ]; then
  echo "[DONE] write the migration test"
  exit 0
fi
: > again
echo "[DECISION] use sqlite for the queue"
echo "[TODO] write the migration test"
echo "[TODO] benchmark the queue"
echo "markers printed"
exec sleep 600
`)
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: command, command: [./agent.sh]}
phases:
  - {name: design, prompt: Draft the design.}
`)
	run := pipelineStart(t, dir, "run")
	run.await(t, "markers printed")
	// The runner is alive: memory reads what it recorded so far.
	awaitMemory(t, dir, func(m memoryOut) bool { return len(m.Decisions) == 1 && len(m.Open) == 2 })
	if err := run.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	run.exit(t)
	if s := status(t, dir); s.Status != "paused" || s.PauseReason != "runner-died" {
		t.Fatalf("status after kill -9: %+v", s)
	}
	check := func(when string, m memoryOut) {
		t.Helper()
		wantItem(t, when+": decisions", m.Decisions, "use sqlite for the queue", "agent", "design")
		if got := texts(m.Open); !slices.Equal(got, []string{"write the migration test", "benchmark the queue"}) {
			t.Errorf("%s: open tasks %q", when, got)
		}
	}
	check("after kill -9", memoryOf(t, dir, nil))
	id := status(t, dir).ID
	if !bytes.Contains(eventsOf(t, filepath.Join(dir, ".pipeline"), id), []byte("use sqlite for the queue")) {
		t.Errorf("the event log lacks the decision")
	}
	// The snapshot gone, the state is the log's replay.
	if err := os.Remove(filepath.Join(dir, ".pipeline", "sessions", id, "state.json")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	check("replayed from the log", memoryOf(t, dir, nil))

	r := pipeline(t, dir, "resume")
	if r.code != 0 || !strings.Contains(r.stderr, "resuming session "+id) {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	// The resumed step was told of the working set, and its [DONE]
	// closed the task.
	prompts := sentPrompts(t, dir)
	context := resumeContextOf(t, prompts[len(prompts)-1], "Draft the design.")
	wantIn(t, context, []string{"## Decisions made so far (oldest first)\n- use sqlite for the queue",
		"## Open tasks", "- write the migration test\n- benchmark the queue"}, nil)
	m := memoryOf(t, dir, nil)
	wantItem(t, "decisions", m.Decisions, "use sqlite for the queue", "agent", "design")
	if got := texts(m.Open); !slices.Equal(got, []string{"benchmark the queue"}) {
		t.Errorf("open tasks after the resume %q", got)
	}
	if got := texts(m.Done); !slices.Equal(got, []string{"write the migration test"}) {
		t.Errorf("done tasks after the resume %q", got)
	}
}

// A fact pinned for the project reaches the resume context of another
// session; memory --project lists it, unpin --project removes it; a
// memory.json that is not one is refused, naming it, and left as it was.
func TestProjectMemoryReachesAnotherSession(t *testing.T) {
	dir := t.TempDir()
	memoryAgent(t, dir, `if [ ! -f "checkpointed-$PIPELINE_SESSION" ]; then
  : > "checkpointed-$PIPELINE_SESSION"
  echo "[CHECKPOINT] halfway"
  exec sleep 30
fi
echo finished
`)
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: command, command: [./agent.sh]}
defaults: {pause_when: {checkpoint: checkpoint}}
phases:
  - {name: design, prompt: Draft the design.}
`)
	if r := pipeline(t, dir, "run", "--grace", "100ms"); r.code != exitPaused {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	first := status(t, dir).ID
	r := pipeline(t, dir, "memory", "pin", "--project", "use pnpm, never npm")
	if r.code != 0 || !strings.Contains(r.stdout, "pinned for the project: #1 use pnpm, never npm") {
		t.Fatalf("pin --project: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	// Another session of the pipeline, resumed, has it.
	if r := pipeline(t, dir, "run", "--new", "--grace", "100ms"); r.code != exitPaused {
		t.Fatalf("run --new: exit %d: %s", r.code, r.stderr)
	}
	second := status(t, dir).ID
	if second == first {
		t.Fatalf("run --new resumed %s", first)
	}
	if r := pipeline(t, dir, "resume", second); r.code != 0 {
		t.Fatalf("resume %s: exit %d: %s", second, r.code, r.stderr)
	}
	logs := pipeline(t, dir, "logs", second, "--prompts").stdout
	wantIn(t, logs, []string{"## Pinned facts\n- use pnpm, never npm (project)"}, nil)
	m := memoryOf(t, dir, nil, second)
	if len(m.Project) != 1 || m.Project[0].Text != "use pnpm, never npm" || m.Project[0].Source != "human" {
		t.Errorf("memory of %s: project facts %+v", second, m.Project)
	}
	if len(m.Pinned) != 0 {
		t.Errorf("the project's fact was copied into the session's own facts: %+v", m.Pinned)
	}

	var project struct {
		Project string       `json:"project"`
		Pinned  []memoryItem `json:"pinned_facts"`
	}
	js := pipeline(t, dir, "memory", "--project", "-o", "json")
	if err := json.Unmarshal([]byte(js.stdout), &project); err != nil || len(project.Pinned) != 1 || project.Pinned[0].ID != 1 ||
		project.Pinned[0].Text != "use pnpm, never npm" {
		t.Errorf("memory --project -o json: %v %+v", err, project)
	}
	if r := pipeline(t, dir, "memory", "unpin", "--project", "1"); r.code != 0 || !strings.Contains(r.stdout, "unpinned from the project: #1") {
		t.Errorf("unpin --project 1: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if r := pipeline(t, dir, "memory", "unpin", "--project", "1"); r.code != exitUsage || !strings.Contains(r.stderr, "no pinned fact 1") {
		t.Errorf("unpin --project 1 again: exit %d: %s", r.code, r.stderr)
	}
	// The first session, resumed now, no longer gets it.
	if r := pipeline(t, dir, "resume", first); r.code != 0 {
		t.Fatalf("resume %s: exit %d: %s", first, r.code, r.stderr)
	}
	if logs := pipeline(t, dir, "logs", first, "--prompts").stdout; strings.Contains(logs, "use pnpm") || !strings.Contains(logs, "[Resume context]") {
		t.Errorf("the first session's resume after the unpin:\n%s", logs)
	}

	// A memory.json that is not a project memory.
	path := filepath.Join(".pipeline", "memory.json")
	broken := []byte(`{"version": 1, "pinned_facts": [{"id": 1, "text": "half`)
	if err := os.WriteFile(filepath.Join(dir, path), broken, 0o600); err != nil {
		t.Fatal(err)
	}
	r = pipeline(t, dir, "memory", "pin", "--project", "another fact")
	if r.code != exitUsage || !strings.Contains(r.stderr, path) || !strings.Contains(r.stderr, "is not a project memory") {
		t.Errorf("pin --project over a broken memory.json: exit %d: %s", r.code, r.stderr)
	}
	if got, err := os.ReadFile(filepath.Join(dir, path)); err != nil || !bytes.Equal(got, broken) {
		t.Errorf("memory.json changed: %q %v", got, err)
	}
	if r := pipeline(t, dir, "memory", "--project"); r.code != exitUsage || !strings.Contains(r.stderr, path) {
		t.Errorf("memory --project over a broken memory.json: exit %d: %s", r.code, r.stderr)
	}
}

// A human's changes to a paused session's working set: pin, task add,
// task done by number and by text, unpin; a number that names nothing is
// exit 2, and says so.
func TestMemoryEditsOnAPausedSession(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nphases: [{name: a, steps: [{run: 'echo \"[CHECKPOINT] wait\"'}]}]\n")
	if r := pipeline(t, dir, "run"); r.code != exitPaused {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	id := status(t, dir).ID
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"pin", "the staging database is read-only"}, "session " + id + ": pinned"},
		{[]string{"task", "add", "document the retry flag"}, "task added"},
		{[]string{"task", "add", "Fix login bug"}, "task added"},
		{[]string{"task", "add", "add tests for the lexer"}, "task added"},
	} {
		r := pipeline(t, dir, append([]string{"memory"}, c.args...)...)
		if r.code != 0 || !strings.Contains(r.stdout, c.want) || strings.Contains(r.stdout, "running") {
			t.Fatalf("memory %v: exit %d: %s%s", c.args, r.code, r.stdout, r.stderr)
		}
	}
	m := memoryOf(t, dir, nil)
	fact := wantItem(t, "pinned facts", m.Pinned, "the staging database is read-only", "human", "a")
	retry := wantItem(t, "open tasks", m.Open, "document the retry flag", "human", "a")
	if len(m.Open) != 3 {
		t.Fatalf("open tasks %q", texts(m.Open))
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"unpin", "99"}, "the session has no pinned fact 99"},
		{[]string{"unpin", itoa(retry.ID)}, "the session has no pinned fact " + itoa(retry.ID)},
		{[]string{"task", "done", "99"}, "the session has no open task 99"},
		{[]string{"task", "done", "add tests for the parser"}, `no open task matches "add tests for the parser"`},
		{[]string{"unpin", "zero"}, `"zero" is not the number of a pinned fact`},
	} {
		r := pipeline(t, dir, append([]string{"memory"}, c.args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("memory %v: exit %d, %q; want exit 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
	if again := memoryOf(t, dir, nil); len(again.Open) != 3 || len(again.Pinned) != 1 {
		t.Fatalf("a refused change changed the working set: %+v", again)
	}
	for _, args := range [][]string{{"task", "done", itoa(retry.ID)}, {"task", "done", "fixed the login bug"}, {"unpin", itoa(fact.ID)}} {
		if r := pipeline(t, dir, append([]string{"memory"}, args...)...); r.code != 0 {
			t.Fatalf("memory %v: exit %d: %s", args, r.code, r.stderr)
		}
	}
	m = memoryOf(t, dir, nil)
	if len(m.Pinned) != 0 || !slices.Equal(texts(m.Open), []string{"add tests for the lexer"}) ||
		!slices.Equal(texts(m.Done), []string{"document the retry flag", "Fix login bug"}) {
		t.Errorf("after done, done and unpin: facts %q, open %q, done %q", texts(m.Pinned), texts(m.Open), texts(m.Done))
	}
	if d, _ := item(m.Done, "Fix login bug"); d.ClosedBy != "fixed the login bug" || d.Source != "human" {
		t.Errorf("the task closed by text: %+v", d)
	}
	// The session was not touched otherwise.
	if s := status(t, dir); s.Status != "paused" || s.PauseReason != "checkpoint" {
		t.Errorf("status %+v", s)
	}
}

// On a running session the change is left for its runner ("the session
// is running"), which takes it when the step ends: the working set has it
// before the next step, and the resume context after the pause the step
// asked for carries it.
func TestMemoryEditsOnARunningSessionReachTheNextStep(t *testing.T) {
	dir := t.TempDir()
	fifo := mkfifo(t, dir, "go-on")
	memoryAgent(t, dir, `if [ -f again ]; then echo finished; exit 0; fi
: > again
echo "agent waiting $$"
read line < go-on
echo "[CHECKPOINT] look at it"
exec sleep 30
`)
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: command, command: [./agent.sh]}
defaults: {pause_when: {checkpoint: checkpoint}}
phases:
  - {name: design, prompt: Draft the design.}
`)
	run := pipelineStart(t, dir, "run", "--grace", "100ms")
	agent := run.awaitPID(t, "agent waiting ")
	for _, args := range [][]string{{"pin", "the staging database is read-only"}, {"task", "add", "document the retry flag"}} {
		r := pipeline(t, dir, append([]string{"memory"}, args...)...)
		if r.code != 0 || !strings.Contains(r.stdout, "(the session is running: it takes it before its next step)") {
			t.Fatalf("memory %v while running: exit %d: %s%s", args, r.code, r.stdout, r.stderr)
		}
	}
	var queued struct {
		Queued bool `json:"queued"`
	}
	r := pipeline(t, dir, "memory", "task", "add", "benchmark the queue", "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &queued); err != nil || !queued.Queued {
		t.Errorf("memory task add -o json while running: %v %s", err, r.stdout)
	}
	// Queued, not yet taken: the step is still running.
	if m := memoryOf(t, dir, nil); len(m.Pinned)+len(m.Open) != 0 {
		t.Errorf("the change reached the working set while the step ran: %+v", m)
	}
	// A number is checked against the working set as it stands.
	if r := pipeline(t, dir, "memory", "unpin", "1"); r.code != exitUsage {
		t.Errorf("unpin 1 while running, nothing pinned yet: exit %d: %s", r.code, r.stderr)
	}
	release(t, fifo)
	if code := run.exit(t); code != exitPaused {
		t.Fatalf("run: exit %d: %s", code, run.stderr.String())
	}
	proctest.AwaitExit(t, agent)
	m := memoryOf(t, dir, nil)
	wantItem(t, "pinned facts", m.Pinned, "the staging database is read-only", "human", "design")
	if got := texts(m.Open); !slices.Equal(got, []string{"document the retry flag", "benchmark the queue"}) {
		t.Errorf("open tasks %q", got)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".pipeline", "sessions", "*", "memory-request-*")); len(left) != 0 {
		t.Errorf("requests left behind: %v", left)
	}
	if r := pipeline(t, dir, "resume"); r.code != 0 {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	prompts := sentPrompts(t, dir)
	context := resumeContextOf(t, prompts[len(prompts)-1], "Draft the design.")
	wantIn(t, context, []string{"## Pinned facts\n- the staging database is read-only",
		"- document the retry flag\n- benchmark the queue"}, nil)
}

// A large working set in a small resume context: the open tasks stay
// whole, the decisions are cut first (the newest kept, the cut said), and
// the context is within its budget by the tokenizer.
func TestResumeContextKeepsOpenTasksWithinBudget(t *testing.T) {
	const budget = 400
	dir := t.TempDir()
	memoryAgent(t, dir, `if [ -f again ]; then echo finished; exit 0; fi
: > again
i=1
while [ $i -le 60 ]; do
  echo "[DECISION] decision $i: keep the retry budget at $i attempts for the flaky upstream service"
  i=$((i+1))
done
for t in alpha beta gamma delta epsilon; do echo "[TODO] finish the $t task"; done
echo "[FACT] the API lives at /v2"
echo "[CHECKPOINT] stop here"
exec sleep 30
`)
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: command, command: [./agent.sh]}
resume_context: {budget: `+itoa(budget)+`}
defaults: {pause_when: {checkpoint: checkpoint}}
phases:
  - {name: design, prompt: Draft the design.}
  - {name: build, prompt: Build it.}
`)
	if r := pipeline(t, dir, "run", "--grace", "100ms"); r.code != exitPaused {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	if m := memoryOf(t, dir, nil); len(m.Decisions) != 60 || len(m.Open) != 5 {
		t.Fatalf("the working set: %d decisions, %d open tasks", len(m.Decisions), len(m.Open))
	}
	if r := pipeline(t, dir, "resume"); r.code != 0 {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	prompts := sentPrompts(t, dir)
	context := resumeContextOf(t, prompts[1], "Draft the design.")
	if n := tokens.Count(context); n > budget {
		t.Errorf("the resume context is %d tokens, over its budget of %d:\n%s", n, budget, context)
	}
	wantIn(t, context, []string{"## Open tasks", "- finish the alpha task\n- finish the beta task\n- finish the gamma task\n- finish the delta task\n- finish the epsilon task",
		"## Pinned facts\n- the API lives at /v2", "earlier decisions cut to fit (pipeline memory lists them all)",
		"decision 60: keep the retry budget at 60 attempts"},
		[]string{"decision 1: keep", "decision 2: keep"})
	// The next steps, cut before the decisions, are gone or said to be.
	if strings.Contains(context, "phase build: Build it.") {
		t.Errorf("the next steps were kept whole while the decisions were cut:\n%s", context)
	}
}

// What a human pins, and what an agent's marker says, is redacted before
// it is kept, in the session and in the project's memory.
func TestTheWorkingSetIsRedacted(t *testing.T) {
	dir := t.TempDir()
	secret := "ghp_" + strings.Repeat("a1B2", 9)
	write(t, dir, "phases.yaml", "version: 1\nagent: {kind: command, command: [sh, -c, 'cat >/dev/null; echo \"[FACT] the token is "+
		secret+"\"; echo \"[CHECKPOINT] wait\"']}\nphases: [{name: a}]\n")
	if r := pipeline(t, dir, "run"); r.code != exitPaused {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	for _, args := range [][]string{{"memory", "pin", "push with " + secret}, {"memory", "pin", "--project", "CI uses " + secret}} {
		if r := pipeline(t, dir, args...); r.code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
	}
	m := memoryOf(t, dir, nil)
	if len(m.Pinned) != 2 || len(m.Project) != 1 {
		t.Fatalf("pinned %q, project %q", texts(m.Pinned), texts(m.Project))
	}
	for _, item := range append(m.Pinned, m.Project...) {
		if strings.Contains(item.Text, secret) || !strings.Contains(item.Text, "[REDACTED") {
			t.Errorf("kept unredacted: %q", item.Text)
		}
	}
	stored, err := os.ReadFile(filepath.Join(dir, ".pipeline", "memory.json"))
	if err != nil || bytes.Contains(stored, []byte(secret)) {
		t.Errorf("memory.json holds the secret (%v):\n%s", err, stored)
	}
}
