package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aymanbagabas/go-udiff"

	"github.com/pipeline-dev/pipeline/internal/render"
)

// Golden files for what the user reads: the text and -o json of status
// (and -v), plan, sessions, logs, memory, diff, doctor and watch's lines,
// compared byte for byte with testdata/golden/<case>.txt once what must
// vary (session ids, times, durations, the temp folder, checkpoint
// commits) is rewritten by the rules below, and nothing else.
// go test ./cmd/pipeline -run TestGolden -update writes them again;
// review the diff.

// goldenPhases is the pipeline the session goldens run: three phases of a
// scripted agent and a check, a trigger that pauses on exit code 7, no
// retries.
const goldenPhases = `version: 1
name: golden
spec: spec.md
agent: {kind: command, command: [./agent.sh, "{prompt}"]}
defaults:
  retry: {when: "false"}
  pause_when:
    handoff: exit_code == 7
phases:
  - name: design
    prompt: Design the greeting.
  - name: build
    prompt: Build the greeting.
    steps:
      - agent: {}
      - name: check
        run: grep -q hello greeting.txt
  - name: review
    prompt: Review the greeting.
`

// goldenAgent prints the first line of its prompt and the working set's
// markers of its phase. GOLDEN_HANDOFF makes the design exit 7 (the
// handoff trigger pauses there); GOLDEN_GREETING makes the build write
// another greeting (the check then fails) and skip notes.txt.
const goldenAgent = `#!/bin/sh
echo "agent: $1" | head -n 1
case "$PIPELINE_PHASE" in
design)
	echo "[DECISION] the greeting goes to greeting.txt"
	echo "[TODO] write greeting.txt"
	echo "[SUMMARY] designed: one file, greeting.txt"
	[ -z "$GOLDEN_HANDOFF" ] || exit 7
	;;
build)
	echo "${GOLDEN_GREETING:-hello}" > greeting.txt
	[ -n "$GOLDEN_GREETING" ] || echo "greeting written" > notes.txt
	echo "[DONE] write greeting.txt"
	;;
review)
	echo "[SUMMARY] reviewed: greeting.txt says hello"
	;;
esac
`

// goldenDuration is a Go duration as time.Duration.String prints it.
const goldenDuration = `(?:\d+h)?(?:\d+m)?\d+(?:\.\d+)?(?:ns|µs|ms|s)`

// goldenRule rewrites what varies from run to run; what says what it is.
type goldenRule struct {
	what string
	re   *regexp.Regexp
	with string
	// fn, when set, makes the replacement of a match from its submatches.
	fn func(m []string) string
}

// cell is with in place of a table cell and its padding: as wide, with
// two spaces at least.
func cell(with, was string) string {
	return with + strings.Repeat(" ", max(2, utf8.RuneCountInString(was)-utf8.RuneCountInString(with)))
}

// rule rewrites the matches of re (where DUR stands for a duration) to
// with, as regexp.ReplaceAllString does.
func rule(what, re, with string) goldenRule {
	return goldenRule{what: what, re: regexp.MustCompile(strings.ReplaceAll(re, "DUR", goldenDuration)), with: with}
}

// ruleFunc rewrites the matches of re with fn of their submatches.
func ruleFunc(what, re string, fn func(m []string) string) goldenRule {
	r := rule(what, re, "")
	r.fn = fn
	return r
}

// goldenRules are applied in order, after the temp folder and the
// session ids (see goldenScene.normalise).
var goldenRules = []goldenRule{
	rule("a time in JSON", `"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})"`, `"<time>"`),
	rule("a date and minute in text (sessions, memory)", `\b\d{4}-\d{2}-\d{2} \d{2}:\d{2}\b`, `YYYY-MM-DD hh:mm`),
	rule("a clock time in text (watch, step lines)", `\b\d{2}:\d{2}:\d{2}\.\d{3}\b`, `hh:mm:ss.mmm`),
	rule("a clock time in text (watch, step lines)", `\b\d{2}:\d{2}:\d{2}\b`, `hh:mm:ss`),
	rule("a checkpoint commit in JSON", `"[0-9a-f]{40}"`, `"<commit>"`),
	rule("a checkpoint commit in status -v (its 12 first digits)", `\b[0-9a-f]{12}\b`, `<checkpoint>`),
	rule("the session key in JSON (a hash of the temp paths)", `"key": "[0-9a-z]+"`, `"key": "<key>"`),
	rule("a step's duration (step lines)", `\bafter DUR\b`, `after <dur>`),
	rule("the time spent in status", `(?m)^(usage +\d+ tokens, \$\d+\.\d{4}, )DUR$`, `${1}<dur>`),
	rule("the TIME header of status -v, as wide as <dur>", `(?m)^(PHASE +STATUS +ATTEMPTS +TOKENS +COST +)TIME +`, `${1}TIME   `),
	rule("the TIME column of status -v (its width follows the durations)", `(?m)^(\S+ +\S+ +\d+ +\d+ +\$\d+\.\d{4} +)DUR +`, `${1}<dur>  `),
	ruleFunc("diff's duration and time rows: A and B in columns as wide as their other rows make them; Δ, empty, +d or -d by which ran faster",
		`(?m)^( +(?:duration|time) +)(DUR)( +)(DUR)( +)(?:[+-]DUR)?$`,
		func(m []string) string { return m[1] + cell("<dur>", m[2]+m[3]) + cell("<dur>", m[4]+m[5]) + "<±dur>" }),
	rule("the time spent in status -o markdown", `(?m)^(Session .* · \$\d+\.\d{4} · )DUR$`, `${1}<dur>`),
	rule("the Duration column of status -o markdown", `(?m)^(\| [^|]+ \| [^|]+ \| \d+ \| )DUR( \|)`, `${1}<dur>${2}`),
	rule("a duration in JSON", `"(duration|elapsed|step_elapsed)": "DUR"`, `"$1": "<dur>"`),
	rule("milliseconds in JSON", `"(\w+_ms)": \d+`, `"$1": <ms>`),
	rule("diff's milliseconds in JSON", `("(?:duration|elapsed)_ms": \{\s+"a": )\d+(,\s+"b": )\d+(,\s+"delta": )-?\d+`, `${1}<ms>${2}<ms>${3}<ms>`),
	rule("an unknown session id (a golden that shows it needs a label)", `\b\d{8}-\d{9}-[0-9a-f]{6}\b`, `yyyymmdd-hhmmssmmm-??????`),
}

func (r goldenRule) apply(s string) string {
	if r.fn == nil {
		return r.re.ReplaceAllString(s, r.with)
	}
	return r.re.ReplaceAllStringFunc(s, func(m string) string { return r.fn(r.re.FindStringSubmatch(m)) })
}

// goldenScene is a temp folder whose runs the goldens record.
type goldenScene struct {
	root string
	env  []string
	// labels names the sessions the test made, six characters each: an
	// id becomes yyyymmdd-hhmmssmmm-<label>, as wide as the id, and its
	// short form [<hex>] becomes [<label>].
	labels map[string]string
	// bin, when set, is the binary the scene runs in place of the
	// tests' own.
	bin string
	// rules are the scene's own, applied after goldenRules.
	rules []goldenRule
}

// newGoldenScene makes the temp folder and the environment every run
// gets, and nothing else of this process's: no colour, a dumb terminal,
// UTC, a home and a git configuration of its own, no CI variable.
func newGoldenScene(t *testing.T) *goldenScene {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	return &goldenScene{root: root, labels: map[string]string{}, env: []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + home, "GIT_CONFIG_NOSYSTEM=1",
		"TZ=UTC", "NO_COLOR=1", "TERM=dumb",
	}}
}

// project writes the golden pipeline, its agent and its spec into
// root/name and returns the folder.
func (s *goldenScene) project(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(s.root, name)
	write(t, dir, "phases.yaml", goldenPhases)
	write(t, dir, "agent.sh", goldenAgent)
	if err := os.Chmod(filepath.Join(dir, "agent.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "spec.md", "# Greeting\n\nWrite a greeting.\n")
	return dir
}

// run runs pipeline in dir with the scene's environment and extra.
func (s *goldenScene) run(t *testing.T, dir string, extra []string, args ...string) result {
	t.Helper()
	bin := binary
	if s.bin != "" {
		bin = s.bin
	}
	r, _ := runBinary(t, bin, dir, append(append([]string{}, s.env...), extra...), args...)
	return r
}

// runWant runs pipeline and fails unless it exits code.
func (s *goldenScene) runWant(t *testing.T, dir string, extra []string, code int, args ...string) {
	t.Helper()
	if r := s.run(t, dir, extra, args...); r.code != code {
		t.Fatalf("pipeline %s: exit %d, want %d\n%s%s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
}

// latest is the id of the latest session of dir, labelled.
func (s *goldenScene) latest(t *testing.T, dir, label string) string {
	t.Helper()
	if len(label) != 6 {
		t.Fatalf("label %q: a label has six characters, as the short id it stands for", label)
	}
	id := decodeStatus(t, s.run(t, dir, nil, "status", "-o", "json")).ID
	if id == "" {
		t.Fatalf("no session to label %s", label)
	}
	s.labels[id] = label
	return id
}

// normalise rewrites what varies: the temp folder, the sessions' ids,
// then goldenRules.
func (s *goldenScene) normalise(text string) string {
	text = strings.ReplaceAll(text, s.root, "<tmp>")
	for id, label := range s.labels {
		text = strings.ReplaceAll(text, id, "yyyymmdd-hhmmssmmm-"+label)
		text = strings.ReplaceAll(text, "["+render.ShortID(id)+"]", "["+label+"]")
	}
	for _, r := range append(goldenRules[:len(goldenRules):len(goldenRules)], s.rules...) {
		text = r.apply(text)
	}
	return text
}

// record is the golden text of a run: the command, its exit status, its
// standard output and standard error, each normalised.
func (s *goldenScene) record(args []string, r result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "$ pipeline %s\nexit %d\n", s.normalise(strings.Join(args, " ")), r.code)
	for _, part := range []struct{ name, text string }{{"stdout", r.stdout}, {"stderr", r.stderr}} {
		if part.text == "" {
			continue
		}
		fmt.Fprintf(&b, "-- %s --\n%s", part.name, s.normalise(part.text))
		if !strings.HasSuffix(part.text, "\n") {
			b.WriteString("\n\\ no newline at end\n")
		}
	}
	return b.String()
}

// check runs pipeline in dir and compares its record with the golden
// file of name.
func (s *goldenScene) check(t *testing.T, name, dir string, extra []string, args ...string) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		compareGolden(t, name, s.record(args, s.run(t, dir, extra, args...)))
	})
}

// compareGolden compares got with testdata/golden/<name>.txt, or writes
// it there under -update; a difference is shown line by line.
func compareGolden(t *testing.T, name, got string) {
	t.Helper()
	if strings.Contains(got, "-??????") {
		t.Errorf("%s shows a session the test did not label:\n%s", name, got)
	}
	path := filepath.Join("testdata", "golden", name+".txt")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./cmd/pipeline -run TestGolden -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("the output differs from %s (-want +got; if the change is meant, run with -update and review the diff):\n%s",
			path, udiff.Unified(path, "output", string(want), got))
	}
}

// gitProject makes dir a git work tree with one commit of what is there.
func (s *goldenScene) gitProject(t *testing.T, dir string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed: ", err)
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"}, {"config", "user.name", "t"}, {"config", "user.email", "t@example.com"},
		{"config", "commit.gpgsign", "false"}, {"add", "-A"}, {"commit", "-q", "-m", "the project"},
	} {
		gitOut(t, dir, s.env, args...)
	}
}

// The sessions of one project, one of each end: paused at a trigger,
// completed after a resume with notes, failed, completed by hand; what
// status, sessions, logs, memory and diff print of them.
func TestGoldenSessions(t *testing.T) {
	s := newGoldenScene(t)
	dir := s.project(t, "project")
	s.gitProject(t, dir)
	handoff := []string{"GOLDEN_HANDOFF=1"}

	s.runWant(t, dir, handoff, exitPaused, "run")
	paused := s.latest(t, dir, "paused")

	s.runWant(t, dir, handoff, exitPaused, "run", "--new")
	finished := s.latest(t, dir, "finish")
	s.runWant(t, dir, nil, 0, "resume", finished, "--notes", "the design is fine; go on")

	s.runWant(t, dir, []string{"GOLDEN_GREETING=bye"}, 1, "run", "--new")
	failed := s.latest(t, dir, "failed")

	s.runWant(t, dir, handoff, exitPaused, "run", "--new")
	byHand := s.latest(t, dir, "byhand")
	s.runWant(t, dir, nil, 0, "complete", byHand)

	for _, c := range []struct{ name, id string }{
		{"paused", paused}, {"finished", finished}, {"failed", failed}, {"byhand", byHand},
	} {
		s.check(t, "status-"+c.name, dir, nil, "status", c.id)
		s.check(t, "status-"+c.name+"-verbose", dir, nil, "status", "-v", c.id)
		s.check(t, "status-"+c.name+"-json", dir, nil, "status", "-o", "json", c.id)
	}
	s.check(t, "status-finished-markdown", dir, nil, "status", "-o", "markdown", finished)

	s.check(t, "sessions", dir, nil, "sessions")
	s.check(t, "sessions-json", dir, nil, "sessions", "-o", "json")

	s.check(t, "logs", dir, nil, "logs", finished)
	s.check(t, "logs-json", dir, nil, "logs", "-o", "json", finished)
	s.check(t, "logs-prompts-design", dir, nil, "logs", "--prompts", "--phase", "design", finished)

	s.check(t, "memory-paused", dir, nil, "memory", paused)
	s.check(t, "memory-finished", dir, nil, "memory", finished)
	s.check(t, "memory-finished-json", dir, nil, "memory", "-o", "json", finished)

	s.check(t, "diff", dir, nil, "diff", finished, failed)
	s.check(t, "diff-json", dir, nil, "diff", "-o", "json", finished, failed)
}

// plan needs no session and nothing rewritten but the temp folder.
func TestGoldenPlan(t *testing.T) {
	s := newGoldenScene(t)
	dir := s.project(t, "project")
	s.check(t, "plan", dir, nil, "plan")
	s.check(t, "plan-json", dir, nil, "plan", "-o", "json")
}

// doctor with fake CLIs on a PATH of their own: claude recent with a key
// in the environment, gemini recent without credentials, codex too old
// with its key in the agent's env, a kind: command program; then the
// CLIs missing. The versions are the fakes', the same everywhere; the
// paths are under the temp folder; the missing CLIs are a case of their
// own.
func TestGoldenDoctor(t *testing.T) {
	s := newGoldenScene(t)
	// A copy of pipeline in a folder of its own: doctor looks for
	// pipeline-temporal beside it, which the tests of the fleet build
	// beside the tests' binary.
	s.bin = filepath.Join(s.root, "lone", "pipeline")
	if err := os.MkdirAll(filepath.Dir(s.bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := copyExecutable(binary, s.bin); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(s.root, "bin")
	fakeCLI(t, bin, "claude", "2.1.400 (Claude Code)")
	fakeCLI(t, bin, "gemini", "0.61.0")
	fakeCLI(t, bin, "codex", "codex-cli 0.150.2")
	fakeCLI(t, bin, "golden-agent", "1.0")
	env := []string{"PATH=" + bin, "ANTHROPIC_API_KEY=sk-ant-a-secret-value-0123456789"}

	dir := filepath.Join(s.root, "doctor")
	write(t, dir, "phases.yaml", `version: 1
phases:
  - {name: design, agent: {kind: claude}}
  - {name: build, agent: {kind: gemini}}
  - {name: review, agent: {kind: codex, env: {OPENAI_API_KEY: sk-from-the-agent-env-0123456789}}}
  - {name: docs, agent: {kind: command, command: [golden-agent, "{prompt}"]}}
`)
	s.check(t, "doctor", dir, env, "doctor")
	s.check(t, "doctor-json", dir, env, "doctor", "-o", "json")

	missing := filepath.Join(s.root, "doctor-missing")
	write(t, missing, "phases.yaml", `version: 1
phases:
  - {name: design, agent: {kind: gemini}}
  - {name: build, agent: {kind: command, command: [no-such-agent]}}
`)
	// Nothing on PATH: every row is "not found", as wide whatever the
	// temp folder.
	none := []string{"PATH=" + filepath.Join(s.root, "empty")}
	s.check(t, "doctor-missing", missing, none, "doctor")
	s.check(t, "doctor-missing-json", missing, none, "doctor", "-o", "json")
}

// watch resumes a paused session when its spec changes and runs it to
// the end; its lines up to the session's end, then after an interrupt.
func TestGoldenWatch(t *testing.T) {
	for _, c := range []struct {
		name   string
		args   []string
		ready  string
		finish func(id string) string
	}{
		{"watch", nil, "watching: ", func(id string) string { return "session " + id + " completed\n" }},
		{"watch-json", []string{"-o", "json"}, `"event":"ready"`, func(id string) string { return `"event":"completed","session":"` + id + `"` }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newGoldenScene(t)
			dir := s.project(t, "project")
			s.runWant(t, dir, []string{"GOLDEN_HANDOFF=1"}, exitPaused, "run")
			id := s.latest(t, dir, "watchd")
			// The resume context names the changed spec by its path, so
			// the tokens of the step it starts vary with the temp folder.
			s.rules = []goldenRule{rule("the tokens of the resumed design step",
				`(?m)^(\[watchd\] hh:mm:ss == step agent exited 0 after <dur> · )\d+( tokens\n\[watchd\] hh:mm:ss == phase 2/3 build · step agent )`, `${1}<n>${2}`)}

			args := append([]string{"watch", "--max-parallel", "1"}, c.args...)
			w := s.start(t, dir, args...)
			w.await(t, c.ready)
			// A new spec renamed over the old one: one event.
			write(t, s.root, "spec.new", "# Greeting\n\nWrite a greeting.\nSay hello.\n")
			if err := os.Rename(filepath.Join(s.root, "spec.new"), filepath.Join(dir, "spec.md")); err != nil {
				t.Fatal(err)
			}
			w.await(t, c.finish(id))
			r := w.interrupt(t)
			compareGolden(t, c.name, s.record(args, r))
		})
	}
}

// goldenRun is a pipeline started in the background: its standard output
// as it comes, line by line.
type goldenRun struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	lines  chan string
	stdout strings.Builder
}

func (s *goldenScene) start(t *testing.T, dir string, args ...string) *goldenRun {
	t.Helper()
	r := &goldenRun{cmd: exec.Command(binary, args...), lines: make(chan string)}
	r.cmd.Dir, r.cmd.Env, r.cmd.Stderr = dir, s.env, &r.stderr
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		r.cmd.Wait()
	})
	go func() {
		defer close(r.lines)
		in := bufio.NewReader(out)
		for {
			line, err := in.ReadString('\n')
			if line != "" {
				r.lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	return r
}

// await reads the output up to the line that holds want.
func (r *goldenRun) await(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				t.Fatalf("the output ended before %q:\n%s", want, r.stdout.String())
			}
			r.stdout.WriteString(line)
			if strings.Contains(line, want) {
				return
			}
		case <-deadline:
			t.Fatalf("no %q in the output:\n%s", want, r.stdout.String())
		}
	}
}

// interrupt sends SIGINT, reads the output to its end and returns all of
// it with the exit status.
func (r *goldenRun) interrupt(t *testing.T) result {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for line := range r.lines {
		r.stdout.WriteString(line)
	}
	err := r.cmd.Wait()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return result{r.stdout.String(), r.stderr.String(), r.cmd.ProcessState.ExitCode()}
}

// The rules rewrite what varies and keep what does not: the values a
// reader checks (durations of the plan, attempts, exit codes, short hex
// that is not a commit) stay as they are.
func TestGoldenNormalisationKeepsContent(t *testing.T) {
	s := &goldenScene{root: "/tmp/TestX123/001", labels: map[string]string{"20261127-123338135-44d197": "paused"}}
	cases := []struct{ in, want string }{
		// kept
		{"watch_debounce  200ms  built-in default\n", "watch_debounce  200ms  built-in default\n"},
		{"idle_timeout         30m\n", "idle_timeout         30m\n"},
		{"phase    design, step agent, attempt 1\n", "phase    design, step agent, attempt 1\n"},
		{"cause    handoff (exit_code == 7) with exit_code=7\n", "cause    handoff (exit_code == 7) with exit_code=7\n"},
		{"debounce 200ms, at most 1 at once\n", "debounce 200ms, at most 1 at once\n"},
		{`"tokens": 401,` + "\n", `"tokens": 401,` + "\n"},
		{"commit abc1234 and deadbeef\n", "commit abc1234 and deadbeef\n"},
		// rewritten
		{"spec     /tmp/TestX123/001/project/spec.md\n", "spec     <tmp>/project/spec.md\n"},
		{"[44d197] 12:34:00 == step agent exited 0 after 94ms · 338 tokens\n", "[paused] hh:mm:ss == step agent exited 0 after <dur> · 338 tokens\n"},
		{"20261127-123338135-44d197  golden  2026-11-27 12:33\n", "yyyymmdd-hhmmssmmm-paused  golden  YYYY-MM-DD hh:mm\n"},
		{"20261127-123338135-aaaaaa\n", "yyyymmdd-hhmmssmmm-??????\n"},
		{"usage    572 tokens, $0.0000, 1m2s\n", "usage    572 tokens, $0.0000, <dur>\n"},
		{"PHASE   STATUS     ATTEMPTS  TOKENS  COST     TIME    RETRIES\n", "PHASE   STATUS     ATTEMPTS  TOKENS  COST     TIME   RETRIES\n"},
		{"design  completed  1         401     $0.0000  1.038s  0        d266b988f6a3\n", "design  completed  1         401     $0.0000  <dur>  0        <checkpoint>\n"},
		{"          duration    37ms       26ms       -11ms\n", "          duration    <dur>      <dur>      <±dur>\n"},
		{"          time        3ms        3ms        \n", "          time        <dur>      <dur>      <±dur>\n"},
		{`"elapsed_ms": {` + "\n    \"a\": 96,\n    \"b\": 43,\n    \"delta\": -53\n", `"elapsed_ms": {` + "\n    \"a\": <ms>,\n    \"b\": <ms>,\n    \"delta\": <ms>\n"},
		{"Session `x` · phase review · 591 tokens · $0.0000 · 0s\n", "Session `x` · phase review · 591 tokens · $0.0000 · <dur>\n"},
		{"| design | completed | 1 | 17ms | 411 | $0.0000 | handoff |  |\n", "| design | completed | 1 | <dur> | 411 | $0.0000 | handoff |  |\n"},
		{`"duration": "88ms", "duration_ms": 88, "at": "2026-11-27T12:31:07.455853762Z"`, `"duration": "<dur>", "duration_ms": <ms>, "at": "<time>"`},
		{`"head_after": "4a1888e64ed10f1d6e289aef1f213e8e968ec341",`, `"head_after": "<commit>",`},
		{`"key": "2cto3rzemg0nk",`, `"key": "<key>",`},
		{"12:33:46.858 spec.md: session 20261127-123338135-44d197 resumed\n", "hh:mm:ss.mmm spec.md: session yyyymmdd-hhmmssmmm-paused resumed\n"},
	}
	for _, c := range cases {
		if got := s.normalise(c.in); got != c.want {
			t.Errorf("normalise(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
	// Each rule has a case above that shows what it rewrites.
	for _, r := range goldenRules {
		shown := false
		for _, c := range cases {
			shown = shown || r.apply(c.in) != c.in
		}
		if !shown {
			t.Errorf("no case shows what the rule for %s rewrites", r.what)
		}
	}
}

// An agent whose output is Claude Code's stream-json (a stand-in of the
// CLI on PATH that prints what the real CLI printed for a turn with two
// tool calls): what logs prints of it, as a conversation, with the
// thinking under -v, and as written under --raw.
func TestGoldenRenderedTranscript(t *testing.T) {
	s := newGoldenScene(t)
	dir, bin := filepath.Join(s.root, "rendered"), filepath.Join(s.root, "bin")
	turn, err := filepath.Abs(filepath.Join("..", "..", "internal", "transcript", "testdata", "claude-tools.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, bin, "claude", "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '2.1.332 (Claude Code)'; exit 0; fi\ncat '"+turn+"'\n")
	if err := os.Chmod(filepath.Join(bin, "claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "phases.yaml", `version: 1
agent: {kind: claude}
phases:
  - name: review
    prompt: Review the word count.
`)
	env := []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "ANTHROPIC_API_KEY=test"}
	s.runWant(t, dir, env, 0, "run")
	id := s.latest(t, dir, "render")
	s.check(t, "logs-rendered", dir, nil, "logs", id)
	s.check(t, "logs-rendered-verbose", dir, nil, "logs", "-v", id)
	s.check(t, "logs-rendered-raw", dir, nil, "logs", "--raw", id)
}
