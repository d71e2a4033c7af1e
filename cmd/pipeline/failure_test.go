package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A three-phase pipeline whose "build" phase fails until the file ok
// exists; every phase appends its name to ran.txt, so the test sees what
// ran again.
const failingLate = `version: 1
defaults: {retry: {when: "false"}}
phases:
  - {name: design, steps: [{run: echo design >> ran.txt}]}
  - {name: build, steps: [{run: echo build >> ran.txt && test -e ok}]}
  - {name: docs, steps: [{run: echo docs >> ran.txt}]}
`

func ran(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "ran.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(string(b)), " ")
}

func phaseList(s statusJSON) string {
	var out []string
	for _, p := range s.Phases {
		out = append(out, p.Name+"="+p.Status)
	}
	return strings.Join(out, " ")
}

// A failure in a late phase is resumed there: the phases before it do not
// run again. run, meanwhile, says how.
func TestResumeOfAFailedSessionRetriesTheFailedStep(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", failingLate)
	if r := pipeline(t, dir, "run"); r.code != 1 {
		t.Fatalf("run: exit %d, want 1: %s", r.code, r.stderr)
	}
	failed := status(t, dir)
	if failed.Status != "failed" || failed.Phase != "build" {
		t.Fatalf("status %s at %s", failed.Status, failed.Phase)
	}
	write(t, dir, "ok", "")
	r := pipeline(t, dir, "resume")
	if r.code != 0 {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	if got, want := ran(t, dir), "design build build docs"; got != want {
		t.Errorf("ran %q, want %q", got, want)
	}
	s := status(t, dir)
	if s.ID != failed.ID || s.Status != "completed" || phaseList(s) != "design=completed build=completed docs=completed" {
		t.Errorf("after resume: %s %s %s", s.ID, s.Status, phaseList(s))
	}
	if s.Phases[1].Attempts != 2 {
		t.Errorf("build attempts %d, want 2", s.Phases[1].Attempts)
	}
}

func TestRunAfterAFailedSessionSaysHowToResumeIt(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", failingLate)
	if r := pipeline(t, dir, "run"); r.code != 1 {
		t.Fatalf("run: exit %d", r.code)
	}
	id := status(t, dir).ID
	r := pipeline(t, dir, "run")
	for _, want := range []string{"session, " + id + ", failed in phase build", "pipeline resume " + id, "run --from build"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("run's output lacks %q:\n%s", want, r.stderr)
		}
	}
}

func TestResumeOfAFailedSessionAtAnotherPhase(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", failingLate)
	pipeline(t, dir, "run")
	if r := pipeline(t, dir, "resume", "--phase", "docs"); r.code != 0 {
		t.Fatalf("resume --phase: exit %d: %s", r.code, r.stderr)
	}
	if got, want := phaseList(status(t, dir)), "design=completed build=failed docs=completed"; got != want {
		t.Errorf("phases %s, want %s", got, want)
	}
}

func TestRunFromAndOnly(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", failingLate)
	write(t, dir, "ok", "")
	if r := pipeline(t, dir, "run", "--from", "build"); r.code != 0 {
		t.Fatalf("run --from: exit %d: %s", r.code, r.stderr)
	}
	if got, want := ran(t, dir), "build docs"; got != want {
		t.Errorf("run --from build ran %q, want %q", got, want)
	}
	if got, want := phaseList(status(t, dir)), "design=skipped build=completed docs=completed"; got != want {
		t.Errorf("phases %s, want %s", got, want)
	}
	os.Remove(filepath.Join(dir, "ran.txt"))
	if r := pipeline(t, dir, "run", "--only", "design"); r.code != 0 {
		t.Fatalf("run --only: exit %d: %s", r.code, r.stderr)
	}
	if got, want := ran(t, dir), "design"; got != want {
		t.Errorf("run --only design ran %q, want %q", got, want)
	}
	if got, want := phaseList(status(t, dir)), "design=completed build=skipped docs=skipped"; got != want {
		t.Errorf("phases %s, want %s", got, want)
	}
	if r := pipeline(t, dir, "run", "--only", "nope"); r.code != 2 || !strings.Contains(r.stderr, `"nope" is not a phase`) {
		t.Errorf("run --only nope: exit %d: %s", r.code, r.stderr)
	}
	if r := pipeline(t, dir, "sessions", "-o", "json"); strings.Count(r.stdout, `"id"`) != 2 {
		t.Errorf("a refused run left a session behind: %s", r.stdout)
	}
	if r := pipeline(t, dir, "run", "--only", "design", "--from", "build"); r.code != 2 {
		t.Errorf("--only with --from: exit %d", r.code)
	}
}

// complete with no session takes the latest paused or failed one; status
// says it was completed by hand, in its text and its JSON.
func TestCompleteTakesTheLatestSessionAndSaysByHand(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", failingLate)
	pipeline(t, dir, "run")
	id := status(t, dir).ID
	r := pipeline(t, dir, "complete")
	if r.code != 0 || !strings.Contains(r.stdout, id) {
		t.Fatalf("complete: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	text := pipeline(t, dir, "status", id)
	if !strings.Contains(text.stdout, "completed (by hand)") {
		t.Errorf("status text:\n%s", text.stdout)
	}
	json := pipeline(t, dir, "status", "-o", "json", id)
	if !strings.Contains(json.stdout, `"status": "completed"`) || !strings.Contains(json.stdout, `"by_hand": true`) {
		t.Errorf("status JSON:\n%s", json.stdout)
	}
	if r := pipeline(t, dir, "complete"); r.code != 2 {
		t.Errorf("complete with nothing left to complete: exit %d: %s", r.code, r.stderr)
	}
}

// A step whose program does not exist fails at once, naming the program
// and PATH: no retry, no back-off (the default policy would retry it
// after 10s, 20s, 30s).
func TestAProgramThatDoesNotExistFailsAtOnce(t *testing.T) {
	for _, c := range []struct{ name, step, program string }{
		{"agent", "{agent: {kind: claude}}", `"claude" was not found on PATH`},
		{"run", "{run: no-such-program-4821 --version}", "no-such-program-4821: not found"},
		{"run with a path", "{run: ./no-such-program-4821 --version}", "no such file or directory"},
		{"run through a shell", "{run: no-such-program-4821 > out.txt}", "no-such-program-4821: not found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, bin := t.TempDir(), t.TempDir()
			write(t, dir, "phases.yaml", "version: 1\nphases: [{name: build, steps: ["+c.step+"]}]\n")
			// sh only, and no claude.
			sh, err := exec.LookPath("sh")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(sh, filepath.Join(bin, "sh")); err != nil {
				t.Fatal(err)
			}
			env := append(os.Environ(), "PATH="+bin)
			r := pipelineEnv(t, dir, env, "run", "--ci")
			if r.code != 1 {
				t.Fatalf("exit %d, want 1: %s", r.code, r.stderr)
			}
			out := r.stdout + r.stderr
			for _, want := range []string{"could not start", c.program, "PATH=" + bin} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "retrying") {
				t.Errorf("retried:\n%s", out)
			}
			s := status(t, dir)
			if s.Status != "failed" || s.Phases[0].Attempts != 1 || s.Phases[0].Retries != 0 {
				t.Errorf("status %s, attempts %d, retries %d", s.Status, s.Phases[0].Attempts, s.Phases[0].Retries)
			}
		})
	}
}

// A run line that is a shell builtin (exit 3) runs in the shell: it fails
// as the line says, not as a program that could not start.
func TestABuiltinRunLineRunsInTheShell(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\ndefaults: {retry: {when: \"false\"}}\nphases: [{name: build, steps: [{run: exit 3}]}]\n")
	r := pipeline(t, dir, "run")
	if r.code != 1 || strings.Contains(r.stdout+r.stderr, "could not start") || !strings.Contains(r.stdout+r.stderr, "exit code 3") {
		t.Errorf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
}
