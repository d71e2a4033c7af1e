package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sessionFolder is the folder of the only session of the store in dir.
func sessionFolder(t *testing.T, dir string) string {
	t.Helper()
	folders, _ := filepath.Glob(filepath.Join(dir, ".pipeline", "sessions", "2*"))
	if len(folders) != 1 {
		t.Fatalf("%d session folders in %s, want 1", len(folders), dir)
	}
	return folders[0]
}

// assertNoTranscripts fails unless the session folder has no transcripts/.
func assertNoTranscripts(t *testing.T, session string) {
	t.Helper()
	if _, err := os.Lstat(filepath.Join(session, "transcripts")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s has transcripts/ (%v): its steps wrote nothing", session, err)
	}
}

// A step that prints nothing leaves no transcript, nor transcripts/, and
// every reader takes the transcript not there for an empty one: logs,
// logs -f, status -v and attach answer as for an empty transcript, and
// the session exports and imports.
func TestAQuietStepLeavesNoTranscripts(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nphases:\n  - name: one\n    steps: [{run: \"true\"}]\n")
	if r := pipeline(t, dir, "run"); r.code != 0 {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	session := sessionFolder(t, dir)
	assertNoTranscripts(t, session)
	for _, args := range [][]string{{"logs"}, {"logs", "-f"}, {"logs", "--prompts"}, {"logs", "--raw"}} {
		if r := pipeline(t, dir, args...); r.code != 0 || r.stdout != "" || r.stderr != "" {
			t.Errorf("%s: exit %d, %q %q; want 0 and nothing", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
	if r := pipeline(t, dir, "status", "-v"); r.code != 0 || !strings.Contains(r.stdout, "completed") {
		t.Errorf("status -v: exit %d, %s %s", r.code, r.stdout, r.stderr)
	}
	if r := pipeline(t, dir, "attach"); r.code != 0 || !strings.Contains(r.stderr, "is not running: it is completed") {
		t.Errorf("attach: exit %d, %s %s", r.code, r.stdout, r.stderr)
	}

	archive := filepath.Join(t.TempDir(), "quiet.tar.gz")
	if r := pipeline(t, dir, "export", "-o", archive); r.code != 0 {
		t.Fatalf("export: exit %d, %s", r.code, r.stderr)
	}
	other := t.TempDir()
	write(t, other, "phases.yaml", "version: 1\nphases:\n  - name: one\n    steps: [{run: \"true\"}]\n")
	if r := pipeline(t, other, "import", archive); r.code != 0 || !strings.Contains(r.stderr, "imported session") {
		t.Fatalf("import of a session without transcripts/: exit %d, %s", r.code, r.stderr)
	}
	assertNoTranscripts(t, sessionFolder(t, other))
	if s := status(t, other); s.Status != "completed" {
		t.Errorf("the imported session is %q, want completed", s.Status)
	}
}

// A step that prints keeps its transcript as before, byte for byte: its
// standard output and error in the order written, no newline added, in
// folders 0700 and a file 0600.
func TestAStepThatPrintsKeepsItsTranscriptByteForByte(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
phases:
  - name: one
    steps:
      - {name: quiet, run: "true"}
      - {name: loud, run: "printf 'out one\\n'; printf 'err one\\n' >&2; printf 'out two, no newline'"}
`)
	if r := pipeline(t, dir, "run"); r.code != 0 {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	session := sessionFolder(t, dir)
	path := filepath.Join(session, "transcripts", "one", "1-loud.log")
	content, err := os.ReadFile(path)
	if want := "out one\nerr one\nout two, no newline"; err != nil || string(content) != want {
		t.Errorf("the transcript: %v %q, want %q", err, content, want)
	}
	if _, err := os.Lstat(filepath.Join(session, "transcripts", "one", "1-quiet.log")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the quiet step left a transcript: %v", err)
	}
	for p, want := range map[string]os.FileMode{filepath.Join(session, "transcripts"): 0o700, filepath.Dir(path): 0o700, path: 0o600} {
		if info, err := os.Stat(p); err != nil || info.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %v", p, info, err, want)
		}
	}
	if r := pipeline(t, dir, "logs"); r.code != 0 || r.stdout != "==> one/1-loud.log <==\nout one\nerr one\nout two, no newline\n" {
		t.Errorf("logs: exit %d, %q", r.code, r.stdout)
	}
}

// logs -f and attach started while the running step has written nothing
// (no transcripts/ yet) show its first line once it comes.
func TestFollowersStartedBeforeTheFirstByteShowIt(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
phases:
  - name: one
    steps: [{name: late, run: 'while [ ! -f go ]; do sleep 0.02; done; echo "the first byte"'}]
`)
	run := pipelineStart(t, dir, "run")
	run.await(t, "step late")
	session := sessionFolder(t, dir)
	follow := pipelineStart(t, dir, "logs", "-f")
	attach := pipelineStart(t, dir, "attach")
	// attach shows the quiet step from the runner's live file.
	attach.await(t, "step late")
	awaitInotifyWatch(t, follow.cmd.Process.Pid)
	assertNoTranscripts(t, session)
	write(t, dir, "go", "")
	follow.await(t, "the first byte")
	attach.await(t, "the first byte")
	if code := run.exit(t); code != 0 {
		t.Fatalf("run: exit %d", code)
	}
	if code := follow.exit(t); code != 0 {
		t.Errorf("logs -f: exit %d, %s", code, follow.stderr.String())
	}
	if code := attach.exit(t); code != 0 {
		t.Errorf("attach: exit %d, %s", code, attach.stderr.String())
	}
}

// awaitInotifyWatch waits until process pid watches a folder with
// inotify (logs -f has begun to follow), polling its /proc entries.
func awaitInotifyWatch(t *testing.T, pid int) {
	t.Helper()
	fds := filepath.Join("/proc", strconv.Itoa(pid), "fdinfo")
	deadline := time.Now().Add(failsafe)
	for time.Now().Before(deadline) {
		entries, _ := os.ReadDir(fds)
		for _, e := range entries {
			if info, err := os.ReadFile(filepath.Join(fds, e.Name())); err == nil && strings.Contains(string(info), "inotify wd:") {
				return
			}
		}
		time.Sleep(5 * time.Millisecond) // a poll of /proc, whose changes no event tells
	}
	t.Fatalf("process %d watches nothing after %v", pid, failsafe)
}

// The job summary names the step that failed, as the session's state
// does, even when it wrote nothing (it has no transcript) and a step
// before it, later in the alphabet, did: its last lines are empty, not
// the other step's.
func TestJobSummaryOfAQuietFailingStepIsItsOwn(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
phases:
  - name: build
    steps:
      - {name: zloud, run: "echo the loud step"}
      - {name: fails, run: "exit 3"}
`)
	summary := filepath.Join(dir, "summary.md")
	env := ciEnv(t, "CI=true", "GITHUB_ACTIONS=true", "GITHUB_STEP_SUMMARY="+summary)
	if r := pipelineEnv(t, dir, env, "run"); r.code != 1 {
		t.Fatalf("run: exit %d, want 1:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	content, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	md := string(content)
	if !strings.Contains(md, "**Step `build/1-fails.log` exited 3.** Its last lines:\n\n```text\n\n```") {
		t.Errorf("the summary does not name the quiet step that failed, with no lines:\n%s", md)
	}
	if strings.Contains(md, "the loud step") {
		t.Errorf("the summary shows another step's lines as the failing step's:\n%s", md)
	}
}

// A failure's notification quotes the last line of the step that failed,
// by the session's state: none when it wrote nothing (it has no
// transcript), never the line of a step before it.
func TestNotifyQuotesTheFailingStepsOwnLastLine(t *testing.T) {
	for _, c := range []struct{ name, fails, want string }{
		{"quiet", "exit 3", ""},
		{"loud", "echo its own last line; exit 3", "last error: its own last line"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, got := webhookServer(t)
			dir := t.TempDir()
			write(t, dir, "phases.yaml", `version: 1
notify:
  webhook:
    - {url: "`+srv.URL+`/slack", format: slack}
phases:
  - name: build
    steps:
      - {name: zloud, run: "echo the loud step"}
      - {name: fails, run: "`+c.fails+`"}
`)
			if r := pipelineEnv(t, dir, ciEnv(t), "run"); r.code != 1 {
				t.Fatalf("run: exit %d, want 1:\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			got.mu.Lock()
			defer got.mu.Unlock()
			if len(got.bodies["/slack"]) != 1 {
				t.Fatalf("%d posts, want 1: %v", len(got.bodies["/slack"]), got.bodies)
			}
			body := got.bodies["/slack"][0]
			if strings.Contains(body, "the loud step") {
				t.Errorf("the notification quotes another step's line: %s", body)
			}
			if c.want != "" && !strings.Contains(body, c.want) {
				t.Errorf("the notification does not quote %q: %s", c.want, body)
			}
			if c.want == "" && strings.Contains(body, "last error:") {
				t.Errorf("the notification of a quiet failing step quotes a line: %s", body)
			}
		})
	}
}
