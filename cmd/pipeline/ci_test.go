package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/pipeline-dev/pipeline/engine"
)

// ciProject is a two-phase pipeline: build runs a hostile step that
// prints GitHub workflow commands and GitLab section markers of its own;
// review's agent checkpoints once (the first time it runs) with a note
// that tries the same, and its review trigger pauses the session.
func ciProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
name: ci-demo
agent: {kind: command, command: [sh, ./review.sh]}
phases:
  - name: build
    steps:
      - name: hostile
        run: sh ./hostile.sh
  - name: review
    pause_when:
      checkpoint: ~
      review: checkpoint
`)
	write(t, dir, "hostile.sh", `echo building
echo '::error::forged'
echo '::endgroup::'
echo '  ::warning file=phases.yaml,line=1::forged'
echo 'text ##[error]forged v1'
echo '::stop-commands::guess'
echo '::guess::'
echo '::set-output name=status::forged'
printf '\033[0Ksection_start:1:forged[collapsed=true]\r\033[0Kforged header\n'
printf '\033[0Ksection_end:1:pipeline_step_2\r\033[0K\n'
`)
	write(t, dir, "review.sh", `echo reviewing
if [ ! -e reviewed ]; then
	touch reviewed
	echo '[CHECKPOINT] please review ##[error]note | pipe ::error::x'
	sleep 5
fi
echo reviewed
`)
	return dir
}

// ciEnv is the whole environment of a run under test, and nothing of this
// process's but PATH: CI variables of the job running the tests must not
// leak in.
func ciEnv(t *testing.T, vars ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LANG=C.UTF-8"}, vars...)
}

// position finds where text is written in a file: its line and column,
// from 1, in the line that contains line.
func position(t *testing.T, file, line, text string) (int, int) {
	t.Helper()
	content, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(content), "\n") {
		if strings.Contains(l, line) {
			return i + 1, strings.Index(l, text) + 1
		}
	}
	t.Fatalf("no %q in %s", line, file)
	return 0, 0
}

// githubCommands lists the workflow commands the GitHub Actions runner
// would carry out in a log, as actions/runner reads them
// (ActionCommandManager.TryProcessCommand): "::name props::data" at the
// start of a line (after spaces), or "##[name props]data" anywhere in it;
// after ::stop-commands::TOKEN nothing but ::TOKEN:: counts. Each is
// "name props::data"; stop-commands and its resume are left out.
func githubCommands(log string) []string {
	registered := map[string]bool{}
	for _, name := range []string{"group", "endgroup", "error", "warning", "notice", "debug", "echo", "add-mask",
		"set-output", "save-state", "add-path", "set-env", "add-matcher", "remove-matcher", "stop-commands"} {
		registered[name] = true
	}
	var commands []string
	stopToken := ""
	for _, line := range strings.Split(log, "\n") {
		line = strings.TrimSuffix(line, "\r")
		var info, data string
		if trimmed := strings.TrimLeft(line, " \t"); strings.HasPrefix(trimmed, "::") {
			end := strings.Index(trimmed[2:], "::")
			if end < 0 {
				continue
			}
			info, data = trimmed[2:2+end], trimmed[2+end+2:]
		} else if i := strings.Index(line, "##["); i >= 0 {
			end := strings.Index(line[i:], "]")
			if end < 0 {
				continue
			}
			info, data = line[i+3:i+end], line[i+end+1:]
		} else {
			continue
		}
		name, _, _ := strings.Cut(info, " ")
		name = strings.ToLower(name)
		switch {
		case stopToken != "":
			if name == stopToken {
				stopToken = ""
			}
		case !registered[name]:
		case name == "stop-commands":
			stopToken = strings.ToLower(data)
		default:
			commands = append(commands, info+"::"+data)
		}
	}
	return commands
}

// gitlabSection is GitLab's own pattern of a section marker (lib/gitlab/
// regex.rb, build_trace_section_regex), found anywhere in a line.
var gitlabSection = regexp.MustCompile(`section_((?:start)|(?:end)):(\d+):([a-zA-Z0-9_.-]+)(\[(?:\w+=\w+)(?:, ?(?:\w+=\w+))*\])?\r\x1b\[0K`)

// gitlabSections lists the sections GitLab would see in a log:
// "start NAME[options]" and "end NAME".
func gitlabSections(log string) []string {
	var out []string
	for _, m := range gitlabSection.FindAllStringSubmatch(log, -1) {
		out = append(out, m[1]+" "+m[3]+m[4])
	}
	return out
}

// parseGitHubOutput reads a $GITHUB_OUTPUT file as the runner does:
// name=value lines, and name<<DELIMITER … DELIMITER blocks.
func parseGitHubOutput(t *testing.T, content string) map[string]string {
	t.Helper()
	out := map[string]string{}
	lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		eq, heredoc := strings.Index(line, "="), strings.Index(line, "<<")
		if heredoc >= 0 && (eq < 0 || heredoc < eq) {
			name, delimiter := line[:heredoc], line[heredoc+2:]
			var value []string
			for i++; i < len(lines) && lines[i] != delimiter; i++ {
				value = append(value, lines[i])
			}
			if i == len(lines) {
				t.Fatalf("$GITHUB_OUTPUT: %s has no closing %s:\n%s", name, delimiter, content)
			}
			out[name] = strings.Join(value, "\n")
			continue
		}
		if eq < 0 {
			t.Fatalf("$GITHUB_OUTPUT: a line that is neither name=value nor name<<DELIMITER: %q", line)
		}
		out[line[:eq]] = line[eq+1:]
	}
	return out
}

// validateJUnit checks a report against the JUnit XML schema with a real
// validator, xmllint, which make test installs when it is missing.
func validateJUnit(t *testing.T, path string) {
	t.Helper()
	xmllint := findXmllint(t)
	if xmllint == "" {
		return
	}
	out, err := exec.Command(xmllint, "--noout", "--schema", filepath.Join("testdata", "junit-10.xsd"), path).CombinedOutput()
	if err != nil {
		content, _ := os.ReadFile(path)
		t.Fatalf("the JUnit report does not validate: %v\n%s\n%s", err, out, content)
	}
}

// findXmllint is xmllint's path. Missing, it fails the test under make
// test (-tags xmllint), which installs it; with Go alone it is "" and the
// report is checked without its schema.
func findXmllint(t *testing.T) string {
	t.Helper()
	xmllint, err := exec.LookPath("xmllint")
	if err == nil {
		return xmllint
	}
	if xmllintRequired {
		t.Fatal("xmllint is missing, so the JUnit report cannot be checked against its schema: " +
			"make test installs it (scripts/install-xmllint.sh), or: apt-get install libxml2-utils")
	}
	t.Log("xmllint is missing: the JUnit report is checked without its schema (make test installs it)")
	return ""
}

type junitFile struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Suites   []struct {
		Name    string `xml:"name,attr"`
		ID      string `xml:"id,attr"`
		Skipped int    `xml:"skipped,attr"`
		Cases   []struct {
			Name    string `xml:"name,attr"`
			Time    string `xml:"time,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
			SystemOut string `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func readJUnit(t *testing.T, path string) junitFile {
	t.Helper()
	validateJUnit(t, path)
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var j junitFile
	if err := xml.Unmarshal(content, &j); err != nil {
		t.Fatalf("%v:\n%s", err, content)
	}
	if len(j.Suites) != 1 {
		t.Fatalf("%d testsuites, want 1:\n%s", len(j.Suites), content)
	}
	return j
}

// The validator is no rubber stamp: a report without what the schema
// requires is refused.
func TestJUnitSchemaRefusesAnInvalidReport(t *testing.T) {
	xmllint := findXmllint(t)
	if xmllint == "" {
		t.Skip("xmllint is missing; make test (-tags xmllint) installs it and runs this test")
	}
	path := filepath.Join(t.TempDir(), "bad.xml")
	write(t, filepath.Dir(path), "bad.xml", `<testsuites><testsuite name="x" tests="1" failures="0"><testcase/></testsuite></testsuites>`)
	if out, err := exec.Command(xmllint, "--noout", "--schema", filepath.Join("testdata", "junit-10.xsd"), path).CombinedOutput(); err == nil {
		t.Fatalf("xmllint accepted a testsuite without errors and a testcase without a name:\n%s", out)
	}
}

// In GitHub Actions each step is a group, a pause is a warning on the run
// at the trigger's line and column in phases.yaml, and the job summary
// and the step outputs say how the session stands; what the steps print
// (and the checkpoint's note) is never taken as a workflow command. The
// JUnit report validates against the schema.
func TestGitHubActionsRun(t *testing.T) {
	dir := ciProject(t)
	summary, outputs := filepath.Join(dir, "summary.md"), filepath.Join(dir, "outputs.txt")
	write(t, dir, "summary.md", "# An earlier step\n\n")
	write(t, dir, "outputs.txt", "earlier=1\n")
	env := ciEnv(t, "CI=true", "GITHUB_ACTIONS=true", "GITHUB_STEP_SUMMARY="+summary, "GITHUB_OUTPUT="+outputs, "GITHUB_WORKSPACE="+dir)
	r := pipelineEnv(t, dir, env, "run", "--junit", "report.xml")
	if r.code != exitPaused {
		t.Fatalf("run: exit %d, want 3:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	line, col := position(t, filepath.Join(dir, "phases.yaml"), "review: checkpoint", "checkpoint")
	got := githubCommands(r.stdout + r.stderr)
	want := []string{
		"group::phase 1/2 build · step hostile · attempt 1",
		"endgroup::",
		"group::phase 2/2 review · step agent · attempt 1",
		"endgroup::",
	}
	if len(got) != len(want)+1 || strings.Join(got[:len(want)], "\n") != strings.Join(want, "\n") {
		t.Fatalf("the runner would carry out:\n%s\nwant:\n%s\nand the warning; the log:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), r.stdout)
	}
	warning := got[len(want)]
	if wantPrefix := fmt.Sprintf("warning file=phases.yaml,line=%d,col=%d,title=pipeline%%3A paused in phase review::review (checkpoint)", line, col); !strings.HasPrefix(warning, wantPrefix) {
		t.Errorf("the annotation is\n%s\nwant it to start with\n%s", warning, wantPrefix)
	}
	if !strings.Contains(warning, "please review") || !strings.Contains(warning, "pipeline resume ") {
		t.Errorf("the annotation does not say why and how to go on: %s", warning)
	}
	// What the step printed is shown, as it was.
	for _, text := range []string{"| ::error::forged", "| text ##[error]forged v1", "section_start:1:forged[collapsed=true]^Mforged header"} {
		if !strings.Contains(r.stdout, text) {
			t.Errorf("the step's line %q is not shown:\n%s", text, r.stdout)
		}
	}

	id := decodeStatus(t, pipelineEnv(t, dir, env, "status", "-o", "json")).ID
	content, err := os.ReadFile(outputs)
	if err != nil {
		t.Fatal(err)
	}
	out := parseGitHubOutput(t, string(content))
	for name, value := range map[string]string{"earlier": "1", "session_id": id, "status": "paused", "phase": "review",
		"pause_reason": "review", "pause_note": "please review ##[error]note | pipe ::error::x"} {
		if out[name] != value {
			t.Errorf("$GITHUB_OUTPUT %s=%q, want %q:\n%s", name, out[name], value, content)
		}
	}

	content, err = os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	md := pipelineEnv(t, dir, env, "status", "-o", "markdown")
	if md.code != 0 || string(content) != "# An earlier step\n\n"+md.stdout {
		t.Errorf("the job summary is not what was there, then status -o markdown (exit %d):\n%s\n---\n%s", md.code, content, md.stdout)
	}
	for _, row := range []string{
		"| Phase | Status | Attempts | Duration | Tokens | Cost | Triggers fired | Pause reason |",
		"| build | completed | 1 |",
		"| review | paused | 1 |",
		"| review | review: please review ##\\[error\\]note \\| pipe ::error::x |",
	} {
		if !strings.Contains(md.stdout, row) {
			t.Errorf("the summary has no %q:\n%s", row, md.stdout)
		}
	}
	for _, l := range strings.Split(md.stdout, "\n") {
		if strings.HasPrefix(l, "| ") && strings.Count(strings.ReplaceAll(l, `\|`, ""), "|") != 9 {
			t.Errorf("a row of the table does not have its 8 cells: %s", l)
		}
	}

	j := readJUnit(t, filepath.Join(dir, "report.xml"))
	suite := j.Suites[0]
	if j.Tests != 2 || j.Failures != 0 || suite.Skipped != 1 || suite.ID != id || len(suite.Cases) != 2 {
		t.Fatalf("report: %+v", j)
	}
	build, review := suite.Cases[0], suite.Cases[1]
	if build.Name != "build" || build.Failure != nil || build.Skipped != nil || !strings.Contains(build.SystemOut, "building\n::error::forged\n") {
		t.Errorf("build's testcase: %+v", build)
	}
	if review.Skipped == nil || review.Skipped.Message != "paused: review: please review ##[error]note | pipe ::error::x" ||
		!strings.Contains(review.SystemOut, "reviewing\n") {
		t.Errorf("review's testcase: %+v", review)
	}

	// The session stays resumable; the next run appends.
	r = pipelineEnv(t, dir, env, "resume", "--notes", "looks good")
	if r.code != 0 {
		t.Fatalf("resume: exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if got := githubCommands(r.stdout); len(got) != 2 || got[0] != "group::phase 2/2 review · step agent · attempt 1" {
		t.Errorf("resume: the runner would carry out %q", got)
	}
	content, _ = os.ReadFile(outputs)
	if out := parseGitHubOutput(t, string(content)); out["status"] != "completed" || out["pause_reason"] != "" || out["earlier"] != "1" {
		t.Errorf("$GITHUB_OUTPUT after the resume: %v", out)
	}
	content, _ = os.ReadFile(summary)
	if strings.Count(string(content), "### pipeline ci-demo") != 2 || !strings.Contains(string(content), "### pipeline ci-demo: completed") {
		t.Errorf("the job summary after the resume:\n%s", content)
	}
}

// On GitLab CI each phase is a section and each of its steps a collapsed
// section inside it; a step cannot open or close one. A pause is a
// marked line that names the trigger's place in phases.yaml.
func TestGitLabCIRun(t *testing.T) {
	// What the hostile step prints would be a section, were it not
	// filtered.
	if got := gitlabSections("x \x1b[0Ksection_start:1:forged[collapsed=true]\r\x1b[0Kforged header\n"); len(got) != 1 {
		t.Fatalf("the sections of a raw marker: %q", got)
	}
	dir := ciProject(t)
	r := pipelineEnv(t, dir, ciEnv(t, "CI=1", "GITLAB_CI=true"), "run")
	if r.code != exitPaused {
		t.Fatalf("run: exit %d, want 3:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	want := []string{
		"start pipeline_phase_1_1", "start pipeline_step_2[collapsed=true]", "end pipeline_step_2", "end pipeline_phase_1_1",
		"start pipeline_phase_2_3", "start pipeline_step_4[collapsed=true]", "end pipeline_step_4", "end pipeline_phase_2_3",
	}
	if got := gitlabSections(r.stdout + r.stderr); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("GitLab would see the sections\n%s\nwant\n%s\nin:\n%q", strings.Join(got, "\n"), strings.Join(want, "\n"), r.stdout)
	}
	if !strings.Contains(r.stdout, "\x1b[0Ksection_start:") || !strings.Contains(r.stdout, "\r\x1b[0Kphase 2/2 review · step agent · attempt 1\n") {
		t.Errorf("no section header in:\n%q", r.stdout)
	}
	line, col := position(t, filepath.Join(dir, "phases.yaml"), "review: checkpoint", "checkpoint")
	if want := fmt.Sprintf("\x1b[1;33m[pipeline warning]\x1b[0m phases.yaml:%d:%d: paused in phase review: review (checkpoint)", line, col); !strings.Contains(r.stdout, want) {
		t.Errorf("no marked line %q in:\n%q", want, r.stdout)
	}
	if githubCommands(r.stdout) != nil && strings.Contains(r.stdout, "::group::") {
		t.Errorf("GitHub's commands on GitLab:\n%s", r.stdout)
	}
	// NO_COLOR: the marked line without its colour.
	r = pipelineEnv(t, ciProject(t), ciEnv(t, "CI=1", "GITLAB_CI=true", "NO_COLOR=1"), "run")
	if !strings.Contains(r.stdout, "\n[pipeline warning] phases.yaml:") || strings.Contains(r.stdout, "\x1b[1;") {
		t.Errorf("NO_COLOR: the marked line in:\n%q", r.stdout)
	}
}

// A step that fails fails the run (exit 1): an error annotation at the
// step in phases.yaml, and a JUnit <failure> with the end of its output,
// secrets redacted; the phases not reached are skipped.
func TestFailedRunInCI(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
name: failing
defaults:
  retry: {when: "false"}
phases:
  - name: build
    steps:
      - run: echo "building with $DEPLOY_TOKEN"
  - name: test
    steps:
      - name: unit
        run: sh -c 'echo "test 1 ok"; echo "test 2 FAILED" >&2; exit 4'
  - name: deploy
    steps:
      - run: echo deploying
`)
	const secret = "tok-4f9c2a7e81b3d6a0"
	env := ciEnv(t, "CI=true", "GITHUB_ACTIONS=true", "DEPLOY_TOKEN="+secret)
	if err := os.Mkdir(filepath.Join(dir, "reports"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := pipelineEnv(t, dir, env, "run", "--junit", "reports/junit.xml")
	if r.code != exitFailed {
		t.Fatalf("run: exit %d, want 1:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	line, col := position(t, filepath.Join(dir, "phases.yaml"), "- name: unit", "name")
	got := githubCommands(r.stdout)
	if len(got) != 5 || !strings.HasPrefix(got[4], fmt.Sprintf("error file=phases.yaml,line=%d,col=%d,title=pipeline%%3A phase test failed::", line, col)) ||
		!strings.Contains(got[4], `step "unit" failed (exit code 4)`) {
		t.Errorf("the runner would carry out:\n%s", strings.Join(got, "\n"))
	}
	j := readJUnit(t, filepath.Join(dir, "reports", "junit.xml"))
	cases := j.Suites[0].Cases
	if j.Tests != 3 || j.Failures != 1 || j.Suites[0].Skipped != 1 || len(cases) != 3 {
		t.Fatalf("report: %+v", j)
	}
	if cases[0].Failure != nil || !strings.Contains(cases[0].SystemOut, "building with [REDACTED:DEPLOY_TOKEN]") {
		t.Errorf("build: %+v", cases[0])
	}
	if f := cases[1].Failure; f == nil || !strings.Contains(f.Message, `phase "test", step "unit" failed (exit code 4)`) ||
		!strings.Contains(f.Text, "exit codes: [4]") || !strings.Contains(cases[1].SystemOut, "test 1 ok") || !strings.Contains(cases[1].SystemOut, "test 2 FAILED") {
		t.Errorf("test: %+v", cases[1])
	}
	if s := cases[2].Skipped; s == nil || !strings.Contains(s.Message, "not reached: the session failed in phase test") || cases[2].SystemOut != "" {
		t.Errorf("deploy: %+v", cases[2])
	}
	content, _ := os.ReadFile(filepath.Join(dir, "reports", "junit.xml"))
	if bytes.Contains(content, []byte(secret)) || strings.Contains(r.stdout+r.stderr, secret) {
		t.Errorf("the secret is in the report or the log")
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "reports")); len(entries) != 1 {
		t.Errorf("the report's folder holds %d files: a temporary file was left", len(entries))
	}
}

// --fail-on-pause makes a pause exit 1 and an error annotation; the
// session stays paused, and resume continues it.
func TestFailOnPause(t *testing.T) {
	dir := ciProject(t)
	env := ciEnv(t, "CI=true", "GITHUB_ACTIONS=true")
	r := pipelineEnv(t, dir, env, "run", "--fail-on-pause")
	if r.code != exitFailed {
		t.Fatalf("run --fail-on-pause: exit %d, want 1:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	got := githubCommands(r.stdout)
	if len(got) != 5 || !strings.HasPrefix(got[4], "error file=phases.yaml,") || !strings.Contains(got[4], "(--fail-on-pause)") {
		t.Errorf("the runner would carry out:\n%s", strings.Join(got, "\n"))
	}
	if s := decodeStatus(t, pipelineEnv(t, dir, env, "status", "-o", "json")); s.Status != "paused" || s.PauseReason != "review" {
		t.Fatalf("after run --fail-on-pause the session is %s (%s), want paused", s.Status, s.PauseReason)
	}
	if r := pipelineEnv(t, dir, env, "resume", "--fail-on-pause"); r.code != 0 {
		t.Fatalf("resume: exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// gatedProject has three phases, the first two with auto_advance: false.
func gatedProject(t *testing.T) string {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", `version: 1
name: gated
phases:
  - name: design
    auto_advance: false
    steps: [{run: echo designing}]
  - name: build
    auto_advance: false
    steps: [{run: echo building}]
  - name: ship
    steps: [{run: echo shipping}]
`)
	return dir
}

// sessionState reads the snapshot of the only session under dir.
func sessionState(t *testing.T, dir string) engine.State {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, ".pipeline", "sessions", "2*"))
	if len(paths) != 1 {
		t.Fatalf("%d sessions under %s", len(paths), dir)
	}
	content, ok := snapshotOf(t, paths[0])
	if !ok {
		t.Fatalf("%s has no snapshot", paths[0])
	}
	var snap struct {
		State engine.State `json:"state"`
	}
	if err := json.Unmarshal(content, &snap); err != nil {
		t.Fatal(err)
	}
	return snap.State
}

// --no-human-gates runs through auto_advance: false without changing a
// file; the session records that it ran another plan than the files'.
func TestNoHumanGates(t *testing.T) {
	dir := gatedProject(t)
	before, _ := os.ReadFile(filepath.Join(dir, "phases.yaml"))
	var plan struct {
		Digest string `json:"digest"`
	}
	if err := json.Unmarshal([]byte(pipeline(t, dir, "plan", "-o", "json").stdout), &plan); err != nil || plan.Digest == "" {
		t.Fatalf("plan -o json: %v", err)
	}
	r := pipeline(t, dir, "run", "--no-human-gates")
	if r.code != 0 {
		t.Fatalf("run --no-human-gates: exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "phases.yaml")); !bytes.Equal(before, after) {
		t.Errorf("phases.yaml changed")
	}
	if s := sessionState(t, dir); s.Status != engine.StatusCompleted || s.PlanDigest == "" || s.PlanDigest == plan.Digest {
		t.Errorf("the session is %s with plan digest %q; the files' plan is %q: want another", s.Status, s.PlanDigest, plan.Digest)
	}

	// Without the flag the gates hold; resume --no-human-gates passes
	// those left, and the session's log says its plan changed.
	dir = gatedProject(t)
	if r := pipeline(t, dir, "run"); r.code != exitPaused || !strings.Contains(r.stdout, "paused: phase-complete") {
		t.Fatalf("run: exit %d, want 3 at the gate:\n%s", r.code, r.stdout)
	}
	if s := sessionState(t, dir); s.PlanDigest != plan.Digest {
		t.Errorf("a run without the flag records digest %q, want the files' %q", s.PlanDigest, plan.Digest)
	}
	if r := pipeline(t, dir, "resume", "--no-human-gates"); r.code != 0 || !strings.Contains(r.stdout, "shipping") {
		t.Fatalf("resume --no-human-gates: exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	events, _ := filepath.Glob(filepath.Join(dir, ".pipeline", "sessions", "*", "events.jsonl"))
	if len(events) != 1 {
		t.Fatalf("%d event logs", len(events))
	}
	if log, _ := os.ReadFile(events[0]); !bytes.Contains(log, []byte("PlanChanged")) {
		t.Errorf("the event log does not record the change of plan:\n%s", log)
	}
}

// run -o json shows the run on standard error, with its groups, and prints
// the status on standard output at the end: a note that holds a workflow
// command is no command there either, and reads as it was.
func TestGitHubActionsRunJSON(t *testing.T) {
	dir := ciProject(t)
	env := ciEnv(t, "CI=true", "GITHUB_ACTIONS=true")
	r := pipelineEnv(t, dir, env, "run", "-o", "json")
	if r.code != exitPaused {
		t.Fatalf("run: exit %d:\n%s", r.code, r.stderr)
	}
	if got := githubCommands(r.stdout); got != nil {
		t.Errorf("the runner would carry out %q of the JSON:\n%s", got, r.stdout)
	}
	if got := githubCommands(r.stderr); len(got) != 5 || !strings.HasPrefix(got[4], "warning file=phases.yaml,") {
		t.Errorf("the runner would carry out:\n%s", strings.Join(got, "\n"))
	}
	if s := decodeStatus(t, r); s.PauseNote != "please review ##[error]note | pipe ::error::x" {
		t.Errorf("the JSON's note is %q", s.PauseNote)
	}
	if s := pipelineEnv(t, dir, env, "status", "-o", "json"); githubCommands(s.stdout) != nil || !strings.Contains(s.stdout, `#\u0023[error]`) {
		t.Errorf("status -o json:\n%s", s.stdout)
	}
}

// A summary or outputs file that cannot be written is a warning; the run
// exits as it went.
func TestUnwritableCIFilesAreWarnings(t *testing.T) {
	dir := ciProject(t)
	env := ciEnv(t, "CI=true", "GITHUB_ACTIONS=true", "GITHUB_STEP_SUMMARY="+t.TempDir(),
		"GITHUB_OUTPUT="+filepath.Join(dir, "missing", "out.txt"))
	r := pipelineEnv(t, dir, env, "run", "--junit", filepath.Join(dir, "missing", "junit.xml"))
	if r.code != exitPaused {
		t.Fatalf("run: exit %d, want 3:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"pipeline: warning: $GITHUB_STEP_SUMMARY:", "pipeline: warning: $GITHUB_OUTPUT:", "pipeline: warning: --junit "} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("no %q in:\n%s", want, r.stderr)
		}
	}
}

// What says that a run is over cannot go with run --watch.
func TestCIFlagsRefusedWithWatch(t *testing.T) {
	dir := gatedProject(t)
	for _, flag := range []string{"--junit=x.xml", "--fail-on-pause", "--no-human-gates"} {
		if r := pipeline(t, dir, "run", "--watch", flag); r.code != exitUsage || !strings.Contains(r.stderr, "cannot go with --watch") {
			t.Errorf("run --watch %s: exit %d, %s", flag, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".pipeline")); err == nil {
		t.Errorf("a refused run made a store")
	}
}

// In CI mode the run prints plain lines even on a terminal; --ci=false
// brings the live view back under CI=true.
func TestCIModeOnATerminal(t *testing.T) {
	for _, c := range []struct {
		env  []string
		args []string
		live bool
	}{
		{[]string{"CI=yes"}, nil, false},
		{nil, []string{"--ci"}, false},
		{[]string{"CI=true"}, []string{"--ci=false"}, true},
	} {
		dir := gatedProject(t)
		cmd := exec.Command(binary, append([]string{"run", "--no-human-gates"}, c.args...)...)
		cmd.Dir, cmd.Env = dir, append(ciEnv(t, "TERM=xterm-256color"), c.env...)
		f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		done := make(chan struct{})
		go func() {
			buf := make([]byte, 4096)
			for {
				n, err := f.Read(buf)
				out.Write(buf[:n])
				if err != nil {
					close(done)
					return
				}
			}
		}()
		select {
		case <-done:
		case <-time.After(failsafe):
			cmd.Process.Kill()
			t.Fatalf("%v %v: the run did not end", c.env, c.args)
		}
		cmd.Wait()
		f.Close()
		live := bytes.Contains(out.Bytes(), []byte("\x1b[1m"))
		plain := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d \| shipping\r?$`).Match(out.Bytes())
		if live != c.live || plain == c.live {
			t.Errorf("%v %v: live view %v, plain lines %v; want live %v:\n%q", c.env, c.args, live, plain, c.live, out.String())
		}
	}
}

// A run that fails leaves in the job summary the failing step's exit code
// and its last 20 lines, redacted, in a code block no line of it can end.
func TestGitHubJobSummaryCarriesTheFailingStepsLastLines(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "test.sh", "for i in $(seq 1 30); do echo \"line $i\"; done\necho \"token $API_TOKEN\"\necho '\x60\x60\x60'\nexit 7\n")
	write(t, dir, "phases.yaml", `version: 1
phases:
  - name: build
    steps:
      - name: test
        run: sh ./test.sh
`)
	summary := filepath.Join(dir, "summary.md")
	env := ciEnv(t, "CI=true", "GITHUB_ACTIONS=true", "GITHUB_STEP_SUMMARY="+summary, "API_TOKEN=s3cr3t-value-123")
	if r := pipelineEnv(t, dir, env, "run"); r.code == 0 {
		t.Fatalf("run: exit 0, want the failure:\n%s\n%s", r.stdout, r.stderr)
	}
	content, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	md := string(content)
	if !strings.Contains(md, "**Step `build/1-test.log` exited 7.** Its last lines:\n\n````text\nline 13\n") {
		t.Errorf("the summary does not name the step, its exit code and its last 20 lines, fenced past the step's own ```:\n%s", md)
	}
	if strings.Contains(md, "line 12\n") || !strings.Contains(md, "line 30\n") || !strings.HasSuffix(md, "```\n````\n\n") {
		t.Errorf("the summary's lines are not the last 20:\n%s", md)
	}
	if strings.Contains(md, "s3cr3t-value-123") {
		t.Errorf("the summary holds the secret:\n%s", md)
	}
}
