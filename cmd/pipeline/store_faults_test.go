package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/internal/filetree"
)

// Issue 9: SESSION was used as a path and as a pattern (status '*',
// complete ../..); with a meta.json planted where a path led, complete
// wrote the session's files outside .pipeline. Every command that takes
// SESSION accepts a session id, the start of one, or a session's name,
// and nothing else.
func TestSessionArgumentIsASessionIDOnly(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nphases: [{name: a, steps: [{run: 'echo \"[CHECKPOINT] wait\"'}]}]\n")
	if r := pipeline(t, dir, "run"); r.code != exitPaused {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	id := status(t, dir).ID
	// A meta.json planted in the project, naming the project as a session.
	write(t, dir, "meta.json", `{"format":1,"id":"..","key":"k","file":"`+filepath.Join(dir, "phases.yaml")+`"}`)
	before := filetree.Of(t, dir)
	for _, arg := range []string{"../..", "..", "*", "2*", "/etc", id + "/..", "1s", id[:len(id)-6] + "ABCDEF"} {
		for _, cmd := range [][]string{{"status", arg}, {"logs", arg}, {"pause", arg}, {"pause", arg, "--notes", "n"},
			{"complete", arg}, {"resume", arg}} {
			r := pipeline(t, dir, cmd...)
			if r.code != exitUsage || !strings.Contains(r.stderr, "is not a session id") || !strings.Contains(r.stderr, "YYYYMMDD-HHMMSSmmm-xxxxxx") {
				t.Errorf("%v: exit %d, %s", cmd, r.code, r.stderr)
			}
		}
	}
	if after := filetree.Of(t, dir); len(after) != len(before) {
		t.Errorf("commands given a path for SESSION wrote files:\nbefore %v\nafter  %v", before, after)
	}
	// A word that could be a session's name (run --name) is looked up as
	// one, and is not there.
	for _, cmd := range [][]string{{"status", "s1"}, {"logs", "s1"}, {"resume", "s1"}} {
		if r := pipeline(t, dir, cmd...); r.code != exitUsage || !strings.Contains(r.stderr, `no such session "s1"`) {
			t.Errorf("%v: exit %d, %s", cmd, r.code, r.stderr)
		}
	}
	// An id, and the start of one, still work.
	for _, arg := range []string{id, id[:12]} {
		if s := status(t, dir, arg); s.ID != id {
			t.Errorf("status %s: %+v", arg, s)
		}
	}
	if r := pipeline(t, dir, "complete", id[:12]); r.code != 0 {
		t.Errorf("complete %s: exit %d, %s", id[:12], r.code, r.stderr)
	}
}

// Issue 9: clean --older-than 999999d deleted every finished session: the
// age wrapped round to a negative duration. An age too long to hold is
// refused, and nothing is deleted.
func TestCleanOlderThanTooLongDeletesNothing(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nphases: [{name: a, steps: [{run: 'true'}]}]\n")
	for i := 0; i < 2; i++ {
		if r := pipeline(t, dir, "run", "--new"); r.code != 0 {
			t.Fatalf("run: exit %d, %s", r.code, r.stderr)
		}
	}
	for _, age := range []string{"999999d", "106752d", "9223372036854775807d", "99999999999h", "106751d24h", "0s", "-1h", "7x"} {
		r := pipeline(t, dir, "clean", "--older-than", age, "--keep", "0")
		if r.code != exitUsage || !strings.Contains(r.stderr, "at most 106751d") {
			t.Errorf("clean --older-than %s: exit %d, %s%s", age, r.code, r.stdout, r.stderr)
		}
	}
	var list []struct{ ID string }
	if err := json.Unmarshal([]byte(pipeline(t, dir, "sessions", "-o", "json").stdout), &list); err != nil || len(list) != 2 {
		t.Errorf("sessions after the refused cleans: %v %v", list, err)
	}
	if r := pipeline(t, dir, "clean", "--older-than", "106751d", "--keep", "0"); r.code != 0 || !strings.Contains(r.stdout, "0 session(s) removed") {
		t.Errorf("clean --older-than 106751d: exit %d, %s%s", r.code, r.stdout, r.stderr)
	}
}

func TestParseAge(t *testing.T) {
	for text, want := range map[string]time.Duration{"7d": 7 * 24 * time.Hour, "12h": 12 * time.Hour, "1d12h": 36 * time.Hour,
		"5ms": 5 * time.Millisecond, " 2d ": 48 * time.Hour, "106751d": 106751 * 24 * time.Hour} {
		if got, err := parseAge(text); err != nil || got != want {
			t.Errorf("parseAge(%q) = %v, %v; want %v", text, got, err, want)
		}
	}
	for _, text := range []string{"", "0", "0d", "d", "1d-1h", "-1d", "106752d", "106751d23h59m59s", "2562048h", "1.5d", "7days"} {
		if got, err := parseAge(text); err == nil {
			t.Errorf("parseAge(%q) = %v, want an error", text, got)
		}
	}
}

// Issue 9: an environment error about the store is exit 2 with the way
// out (--state-dir), never 1: a .pipeline that is a file, a store others
// can write.
func TestUnusableStoreExits2(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nphases: [{name: a, steps: [{run: 'true'}]}]\n")
	write(t, dir, ".pipeline", "a file where the store goes\n")
	for _, args := range [][]string{{"run"}, {"status"}, {"sessions"}, {"resume"}, {"clean", "--older-than", "1d"}} {
		r := pipeline(t, dir, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "not a folder") || !strings.Contains(r.stderr, "--state-dir") {
			t.Errorf("%v with .pipeline a file: exit %d, %s", args, r.code, r.stderr)
		}
	}
	if err := os.Remove(filepath.Join(dir, ".pipeline")); err != nil {
		t.Fatal(err)
	}
	if r := pipeline(t, dir, "run"); r.code != 0 {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	if err := os.Chmod(filepath.Join(dir, ".pipeline"), 0o777); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"run"}, {"status"}, {"sessions"}} {
		r := pipeline(t, dir, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "can be written by others (mode 0777)") || !strings.Contains(r.stderr, "--state-dir") {
			t.Errorf("%v with a world-writable store: exit %d, %s", args, r.code, r.stderr)
		}
	}
}

// Issue 9: a lock file replaced by a symbolic link made run write its
// holder into the file the link pointed to. Run refuses the link, exit 2,
// and the file is untouched.
func TestRunNeverWritesThroughALinkedLockFile(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nphases: [{name: a, steps: [{run: 'true'}]}]\n")
	if r := pipeline(t, dir, "run"); r.code != 0 {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	locks, _ := filepath.Glob(filepath.Join(dir, ".pipeline", "locks", "*.lock"))
	if len(locks) != 1 {
		t.Fatalf("lock files %v", locks)
	}
	victim := filepath.Join(t.TempDir(), "precious")
	write(t, filepath.Dir(victim), "precious", "the user's own file\n")
	if err := os.Remove(locks[0]); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, locks[0]); err != nil {
		t.Fatal(err)
	}
	r := pipeline(t, dir, "run")
	if r.code != exitUsage || !strings.Contains(r.stderr, "symbolic link") || !strings.Contains(r.stderr, "--state-dir") {
		t.Errorf("run with a linked lock file: exit %d, %s", r.code, r.stderr)
	}
	if got, _ := os.ReadFile(victim); string(got) != "the user's own file\n" {
		t.Errorf("the file the lock linked to now holds %q", got)
	}
}

// Issue 9: the store deleted under a live run. The run went on appending
// to a log that was no longer anywhere, made the session's folders again
// for the next step's transcript, and exited 0. It now says so, stops,
// and exits non-zero, making nothing again.
func TestStoreDeletedUnderALiveRunStopsIt(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
phases:
  - name: one
    steps: [{run: 'echo started; while [ ! -f go-on ]; do sleep 0.01; done'}]
  - name: two
    steps: [{run: 'echo two'}]
`)
	run := pipelineStart(t, dir, "run")
	run.await(t, "| started")
	// The runner may be writing a file of the session meanwhile (its
	// step's process group): rm -rf again, as a user would.
	for attempt := 0; ; attempt++ {
		err := os.RemoveAll(filepath.Join(dir, ".pipeline"))
		if err == nil {
			break
		}
		if attempt == 10 {
			t.Fatal(err)
		}
	}
	write(t, dir, "go-on", "")
	var shown []string
	code := -1
	for code < 0 {
		select {
		case line := <-run.lines:
			shown = append(shown, line)
		case code = <-run.done:
		case <-time.After(failsafe):
			t.Fatal("the run did not end")
		}
	}
	for len(run.lines) > 0 {
		shown = append(shown, <-run.lines)
	}
	out := strings.Join(shown, "\n")
	if code != exitPaused || !strings.Contains(out, "store-error: the session's folder was deleted") ||
		!strings.Contains(run.stderr.String(), "was deleted while it ran") || strings.Contains(out, "completed") {
		t.Errorf("the run whose store was deleted: exit %d\n%s\n%s", code, out, run.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, ".pipeline")); !os.IsNotExist(err) {
		t.Errorf("the deleted store was made again: %v %v", err, filetree.Of(t, filepath.Join(dir, ".pipeline")))
	}
}
