package ui_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/internal/cachetest"
	"github.com/pipeline-dev/pipeline/internal/testwait"
	"github.com/pipeline-dev/pipeline/internal/ui"
)

// binary is the pipeline the tests run, and resume starts: built once by
// TestMain, or PIPELINE_TEST_BINARY (make test builds it once).
var binary string

func TestMain(m *testing.M) {
	for _, name := range []string{"CI", "GITHUB_ACTIONS", "GITLAB_CI", "GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT", "PIPELINE_STATE_DIR"} {
		os.Unsetenv(name)
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	binary = os.Getenv("PIPELINE_TEST_BINARY")
	if binary == "" {
		dir, err := os.MkdirTemp("", "pipeline-ui-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		binary = filepath.Join(dir, "pipeline")
		// pipeline hands ui to the full build, pipeline-temporal, beside
		// it (make test builds it beside PIPELINE_TEST_BINARY).
		for _, b := range [][]string{{"-o", binary}, {"-tags", "temporal", "-o", filepath.Join(dir, "pipeline-temporal")}} {
			build := exec.Command("go", append(append([]string{"build"}, b...), "github.com/pipeline-dev/pipeline/cmd/pipeline")...)
			build.Stderr = os.Stderr
			if err := build.Run(); err != nil {
				fmt.Fprintln(os.Stderr, "building pipeline:", err)
				return 1
			}
		}
	}
	// The plan and git-ignored caches of the runs are theirs, not the user's.
	return cachetest.Main(m)
}

// The project: a command agent that saves each prompt it gets (in
// prompts.txt) and stops at a checkpoint in the design phase the first
// time (until .checkpointed is removed).
const testPhases = `version: 1
name: demo
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
`

const testAgent = `printf '%s\n---\n' "$1" >> prompts.txt
case "$1" in
*Design*)
	if [ ! -f .checkpointed ]; then
		: > .checkpointed
		echo "drafting the greeting design"
		echo "[CHECKPOINT] design drafted; review it"
		exit 0
	fi
	echo "design reviewed"
	;;
*)
	echo "built the greeting"
	;;
esac
`

// project makes the project folder.
func project(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{"phases.yaml": testPhases, "agent.sh": testAgent} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// pipeline runs the built binary in dir and returns its standard output;
// the exit code must be want.
func pipeline(t *testing.T, dir string, want int, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, _ := cmd.Output()
	if code := cmd.ProcessState.ExitCode(); code != want {
		t.Fatalf("pipeline %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, out, stderr.String())
	}
	return string(out)
}

// pausedSession starts a session that pauses at the design checkpoint,
// and returns its id.
func pausedSession(t *testing.T, dir string) string {
	t.Helper()
	os.Remove(filepath.Join(dir, ".checkpointed"))
	var r struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	out := pipeline(t, dir, 3, "run", "--new", "-o", "json")
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.ID == "" || r.Status != "paused" {
		t.Fatalf("pipeline run -o json: %q (%v): want a paused session", out, err)
	}
	return r.ID
}

// serve serves dir's dashboard from this process.
func serve(t *testing.T, o ui.Options) (*ui.Server, *httptest.Server) {
	t.Helper()
	o.Binary = binary
	srv, err := ui.New(o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.Close()
		hs.Close()
	})
	return srv, hs
}

// getJSON GETs url into v; the status must be 200.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, res.Status)
	}
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// eventStream is an open GET /api/events.
type eventStream struct {
	lines chan string
	res   *http.Response
}

// openEvents opens the stream and waits for its first comment: what
// changes from then on is sent.
func openEvents(t *testing.T, base string) *eventStream {
	t.Helper()
	res, err := http.Get(base + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	if ct := res.Header.Get("Content-Type"); res.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("GET /api/events: %s, %s", res.Status, ct)
	}
	e := &eventStream{lines: make(chan string, 256), res: res}
	t.Cleanup(func() { res.Body.Close() })
	sc := bufio.NewScanner(res.Body)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), ":") {
		t.Fatalf("the stream did not start with a comment: %q", sc.Text())
	}
	go func() {
		defer close(e.lines)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				e.lines <- data
			}
		}
	}()
	return e
}

// change is a line of the stream.
type change struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	Phase       string `json:"phase"`
	PauseReason string `json:"pause_reason"`
}

// await reads the stream until a line says session id has status, and
// returns when it came.
func (e *eventStream) await(t *testing.T, id, status string) time.Time {
	t.Helper()
	timeout := time.After(testwait.Failsafe)
	var seen []string
	for {
		select {
		case line, ok := <-e.lines:
			if !ok {
				t.Fatalf("the event stream ended before session %s was %s; lines: %v", id, status, seen)
			}
			seen = append(seen, line)
			var c change
			if json.Unmarshal([]byte(line), &c) == nil && c.ID == id && c.Status == status {
				return time.Now()
			}
		case <-timeout:
			t.Fatalf("no event said session %s was %s within %s; lines: %v", id, status, testwait.Failsafe, seen)
		}
	}
}

// awaitAny reads the stream until a line says a session has status, and
// returns its id.
func (e *eventStream) awaitAny(t *testing.T, status string) string {
	t.Helper()
	timeout := time.After(testwait.Failsafe)
	for {
		select {
		case line, ok := <-e.lines:
			if !ok {
				t.Fatalf("the event stream ended before a session was %s", status)
			}
			var c change
			if json.Unmarshal([]byte(line), &c) == nil && c.Status == status {
				return c.ID
			}
		case <-timeout:
			t.Fatalf("no session was %s within %s", status, testwait.Failsafe)
		}
	}
}
