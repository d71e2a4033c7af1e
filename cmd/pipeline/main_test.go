package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/internal/cachetest"
	"github.com/pipeline-dev/pipeline/internal/testwait"
	"github.com/pipeline-dev/pipeline/schemas"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// failsafe bounds every wait of these tests for an event (a line of
// output, an exit, a file, a lock dropped): see testwait.
const failsafe = testwait.Failsafe

// binary is the pipeline command built once for the end-to-end tests.
var binary string

// outerCI names the variables a CI job sets that change what pipeline
// prints and writes. The tests that run the built binary are unaffected
// by the job that runs them: they set these themselves, and no test
// appends to the job's own summary or outputs.
var outerCI = []string{"CI", "GITHUB_ACTIONS", "GITLAB_CI", "GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT", "GITHUB_WORKSPACE"}

// alsoBuild builds, beside the pipeline command, the programs it runs
// that the tests of a file need.
var alsoBuild []func(dir string) error

// The built pipeline hands --backend temporal, worker, mcp, search and ui
// to pipeline-temporal, found beside it: make test builds it beside
// PIPELINE_TEST_BINARY; else it is built here.
func init() {
	alsoBuild = append(alsoBuild, func(dir string) error {
		if built := os.Getenv("PIPELINE_TEST_BINARY"); built != "" {
			if beside := filepath.Join(filepath.Dir(built), fleetBinary); fileExists(beside) {
				return copyExecutable(beside, filepath.Join(dir, fleetBinary))
			}
		}
		if err := goBuild(filepath.Join(dir, fleetBinary), "-tags", "temporal"); err != nil {
			return fmt.Errorf("building %s: %w", fleetBinary, err)
		}
		return nil
	})
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// afterTests stops what the tests of a file share (the Temporal dev server
// of the fleet tests), once every test has run; an error fails the run.
var afterTests []func() error

func TestMain(m *testing.M) {
	flag.Parse()
	for _, name := range outerCI {
		os.Unsetenv(name)
	}
	// The tests send the pipelines they start SIGINT and SIGHUP: those
	// start with them at their default action (the runtime resets what
	// it catches in a child) even where the harness started the tests
	// with them ignored, which a run would leave ignored.
	if signal.Ignored(syscall.SIGINT) || signal.Ignored(syscall.SIGHUP) {
		signal.Notify(make(chan os.Signal, 1), syscall.SIGINT, syscall.SIGHUP)
	}
	// The plan cache and the git-ignored cache of the pipelines the tests
	// run are theirs, not the user's.
	cleanCache, err := cachetest.Isolate()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "pipeline-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "pipeline")
	// make test builds the binary once for the processes that run these
	// tests side by side, and names it here; it is copied into dir, where
	// what alsoBuild builds sits beside it, as pipeline looks for it.
	if built := os.Getenv("PIPELINE_TEST_BINARY"); built != "" {
		err = copyExecutable(built, binary)
	} else {
		err = goBuild(binary)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "building pipeline:", err)
		os.Exit(1)
	}
	for _, build := range alsoBuild {
		if err := build(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	for _, stop := range afterTests {
		if err := stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = max(code, 1)
		}
	}
	os.RemoveAll(dir)
	cleanCache()
	os.Exit(code)
}

// goBuild builds this package into out, with flags (-tags, say).
// copyExecutable puts the program at from at to: a hard link, or else a
// copy. Never read whole: under the race detector the test process's
// memory is what the children it starts report as their peak (a child
// shares it until it runs its program), and the hostile input tests
// bound that.
func copyExecutable(from, to string) error {
	if os.Link(from, to) == nil {
		return nil
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func goBuild(out string, flags ...string) error {
	build := exec.Command("go", append(append([]string{"build"}, flags...), "-o", out, ".")...)
	build.Stderr = os.Stderr
	return build.Run()
}

type result struct {
	stdout, stderr string
	code           int
}

// pipeline runs the built command in dir.
func pipeline(t *testing.T, dir string, args ...string) result {
	t.Helper()
	return pipelineEnv(t, dir, nil, args...)
}

// pipelineEnv runs the built command in dir with env (nil: this
// process's).
func pipelineEnv(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{stdout.String(), stderr.String(), code}
}

// statusJSON is what the tests read of status -o json.
type statusJSON struct {
	ID          string  `json:"id"`
	Status      string  `json:"status"`
	Phase       string  `json:"phase"`
	PauseReason string  `json:"pause_reason"`
	PauseNote   string  `json:"pause_note"`
	Tokens      int     `json:"tokens"`
	CostUSD     float64 `json:"cost_usd"`
	Phases      []struct {
		Name          string   `json:"name"`
		Status        string   `json:"status"`
		Attempts      int      `json:"attempts"`
		Tokens        int      `json:"tokens"`
		CostUSD       float64  `json:"cost_usd"`
		ExitCodes     []int    `json:"exit_codes"`
		Retries       int      `json:"retries"`
		Restarts      int      `json:"restarts"`
		Human         int      `json:"human_interventions"`
		Notes         []string `json:"notes"`
		NativeSession string   `json:"native_session"`
		Fired         []struct {
			Reason string         `json:"reason"`
			Values map[string]any `json:"values"`
		} `json:"triggers_fired"`
	} `json:"phases"`
}

// status runs status -o json in dir.
func status(t *testing.T, dir string, args ...string) statusJSON {
	t.Helper()
	return decodeStatus(t, pipeline(t, dir, append([]string{"status", "-o", "json"}, args...)...))
}

func decodeStatus(t *testing.T, r result) statusJSON {
	t.Helper()
	var s statusJSON
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("status: exit %d, %v: %s %s", r.code, err, r.stdout, r.stderr)
	}
	return s
}

const repoRoot = "../.."

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/pipeline -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the output (run with -update and review the diff):\n%s", path, got)
	}
}

func TestPlanSpecWorkflowGolden(t *testing.T) {
	r := pipeline(t, repoRoot, "plan", "examples/spec-workflow/phases.yaml")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	golden(t, "plan-spec-workflow.txt", r.stdout)
	r = pipeline(t, repoRoot, "plan", "examples/spec-workflow/phases.yaml", "--spec", "examples/spec-workflow/specs/046-export/README.md")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	golden(t, "plan-spec-workflow-046.txt", r.stdout)
}

// The five-phase example's spec replaces its phases through agent_phases;
// the plan says so, value by value.
func TestPlanShowsFrontmatterReplacingPhases(t *testing.T) {
	r := pipeline(t, repoRoot, "plan", "-o", "json", "examples/spec-workflow/phases.yaml")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	type origin struct {
		Layer string `json:"layer"`
		File  string `json:"file"`
		Line  int    `json:"line"`
	}
	var plan struct {
		FilePhases []string `json:"file_phases"`
		PhasesFrom origin   `json:"phases_from"`
		Phases     []struct {
			Name   string `json:"name"`
			From   origin `json:"from"`
			Prompt struct {
				Value string `json:"value"`
				From  origin `json:"from"`
			} `json:"prompt"`
			Steps []struct {
				Name string `json:"name"`
			} `json:"steps"`
			PauseWhen []struct {
				Name string `json:"name"`
				From origin `json:"from"`
			} `json:"pause_when"`
			AutoAdvance struct {
				From origin `json:"from"`
			} `json:"auto_advance"`
		} `json:"phases"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(plan.FilePhases, ","); got != "design,implementation,testing,documentation,review" {
		t.Fatalf("phases.yaml phases %s", got)
	}
	var names []string
	for _, p := range plan.Phases {
		names = append(names, p.Name)
		if p.From.Layer != "spec" || p.Prompt.From.Layer != "spec" || !strings.HasSuffix(p.Prompt.From.File, "045-dashboard/README.md") {
			t.Errorf("phase %s: from %+v, prompt from %+v; want both from the spec", p.Name, p.From, p.Prompt.From)
		}
	}
	if got := strings.Join(names, ","); got != "design,backend,implementation,review" {
		t.Errorf("plan phases %s, want the spec's design,backend,implementation,review", got)
	}
	if plan.PhasesFrom.Layer != "spec" || plan.PhasesFrom.Line != 16 {
		t.Errorf("phases from %+v, want the spec's agent_phases at line 16", plan.PhasesFrom)
	}
	impl := plan.Phases[2]
	if len(impl.Steps) != 2 || impl.Steps[1].Name != "test" {
		t.Errorf("implementation keeps phases.yaml's steps; got %+v", impl.Steps)
	}
	review := plan.Phases[3]
	if review.AutoAdvance.From.Layer != "phases.yaml" || review.AutoAdvance.From.Line != 45 {
		t.Errorf("review's auto_advance from %+v, want phases.yaml:45", review.AutoAdvance.From)
	}
	backend := plan.Phases[1]
	for _, trig := range backend.PauseWhen {
		if trig.Name == "tokens" && (trig.From.Layer != "phases.yaml" || trig.From.Line != 16) {
			t.Errorf("backend's tokens trigger from %+v, want phases.yaml defaults at line 16", trig.From)
		}
	}
}

func TestValidateExitCodes(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "good.yaml", "version: 1\nagent: {kind: claude}\nphases: [{name: a}]\n")
	write(t, dir, "bad.yaml", "version: 1\nagent: {kind: claude}\nphases:\n  - name: a\n    pause_when: {t: tokns > 1}\n  - nam: b\n")
	if r := pipeline(t, dir, "validate", "good.yaml"); r.code != 0 || !strings.Contains(r.stdout, "ok  good.yaml") {
		t.Errorf("valid file: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	r := pipeline(t, dir, "validate", "good.yaml", "bad.yaml")
	if r.code != exitUsage {
		t.Errorf("invalid file: exit %d, want %d", r.code, exitUsage)
	}
	for _, want := range []string{"bad.yaml:5:21: phases[0].pause_when.t: unknown variable \"tokns\"", "bad.yaml:6:5: unknown key \"nam\"", "2 problems found"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	r = pipeline(t, dir, "validate", "-o", "json", "bad.yaml")
	var out struct {
		Valid bool `json:"valid"`
		Files []struct {
			Problems []struct {
				Line, Column int
				Message      string
			} `json:"problems"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != exitUsage {
		t.Fatalf("exit %d, %v: %s", r.code, err, r.stdout)
	}
	if out.Valid || len(out.Files[0].Problems) != 2 || out.Files[0].Problems[0].Line != 5 || out.Files[0].Problems[0].Column != 21 {
		t.Errorf("json report %+v", out)
	}
	if r := pipeline(t, dir, "validate", "missing.yaml"); r.code != exitUsage || !strings.Contains(r.stderr, "missing.yaml") {
		t.Errorf("missing file: exit %d, %q", r.code, r.stderr)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"no-such-command"},
		{"plan", "--no-such-flag"},
		{"plan", "-o", "yaml", "x.yaml"},
		{"plan", "a.yaml", "b.yaml"},
		{"plan", "missing.yaml"},
		{"version", "extra"},
	} {
		if r := pipeline(t, dir, args...); r.code != exitUsage || r.stderr == "" {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and a message", args, r.code, r.stderr)
		}
	}
}

func TestInitWritesAValidStarterAndRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	if r := pipeline(t, dir, "init"); r.code != 0 {
		t.Fatalf("init: exit %d: %s", r.code, r.stderr)
	}
	if r := pipeline(t, dir, "validate"); r.code != 0 {
		t.Fatalf("the starter does not validate: %s", r.stderr)
	}
	if r := pipeline(t, dir, "validate", app.StarterSpecPath); r.code != 0 {
		t.Fatalf("the starter spec does not validate: %s", r.stderr)
	}
	// The schema phases.yaml's first line names is there.
	starter, _ := os.ReadFile(filepath.Join(dir, "phases.yaml"))
	ref := regexp.MustCompile(`(?m)^# yaml-language-server: \$schema=(\S+)$`).FindSubmatch(starter)
	if ref == nil {
		t.Fatalf("no schema reference on a line of its own in:\n%s", starter)
	}
	if got, err := os.ReadFile(filepath.Join(dir, string(ref[1]))); err != nil || !bytes.Equal(got, schemas.Phases) {
		t.Errorf("the schema reference %s does not resolve to the schema: %v", ref[1], err)
	}
	// A second init, with only the spec gone: nothing is written.
	specPath := filepath.Join(dir, filepath.FromSlash(app.StarterSpecPath))
	if err := os.Remove(specPath); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "phases.yaml", "mine\n")
	r := pipeline(t, dir, "init")
	if r.code != exitUsage || !strings.Contains(r.stderr, "already exists") {
		t.Errorf("init over an existing file: exit %d, %q", r.code, r.stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "phases.yaml")); string(got) != "mine\n" {
		t.Errorf("init overwrote phases.yaml: %q", got)
	}
	if _, err := os.Stat(specPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("init wrote the spec although it refused: %v", err)
	}
}

func TestSchemaPrintsTheCheckedInSchemas(t *testing.T) {
	if r := pipeline(t, ".", "schema"); r.code != 0 || r.stdout != string(schemas.Phases) {
		t.Errorf("schema: exit %d, output differs from schemas/phases.schema.json", r.code)
	}
	if r := pipeline(t, ".", "schema", "--frontmatter"); r.code != 0 || r.stdout != string(schemas.Frontmatter) {
		t.Errorf("schema --frontmatter: exit %d, output differs", r.code)
	}
}

func TestVersion(t *testing.T) {
	r := pipeline(t, ".", "version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "pipeline ") {
		t.Errorf("version: exit %d, %q", r.code, r.stdout)
	}
	if flag := pipeline(t, ".", "--version"); flag.code != 0 || flag.stdout != r.stdout {
		t.Errorf("--version: exit %d, %q; version: %q", flag.code, flag.stdout, r.stdout)
	}
	var v struct{ Version, Go, Platform string }
	if err := json.Unmarshal([]byte(pipeline(t, ".", "version", "-o", "json").stdout), &v); err != nil || v.Version == "" || v.Go == "" || v.Platform == "" {
		t.Errorf("version -o json: %v, %+v", err, v)
	}
}

// The VCS revision the toolchain recorded is in the version.
func TestVersionFromBuildInfo(t *testing.T) {
	info := &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "4a1888e64ed10f1d6e289aef1f213e8e968ec341"}, {Key: "vcs.modified", Value: "true"},
		{Key: "vcs.time", Value: "2026-11-26T06:00:00Z"}}}
	v := versionOf(info)
	if v.Version != "v1.2.3" || v.Revision != "4a1888e64ed10f1d6e289aef1f213e8e968ec341" || !v.Modified || v.Time == "" {
		t.Errorf("%+v", v)
	}
	if s := v.String(); !strings.HasPrefix(s, "pipeline v1.2.3 4a1888e64ed1+modified (go") {
		t.Errorf("%q", s)
	}
	if v := versionOf(&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}); v.Version != version {
		t.Errorf("a devel build: %q", v.Version)
	}
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Each kind of bad input exits 2 with file:line:col, whether it is the
// YAML, an expression, the frontmatter or a missing spec.
func TestBadInputExits2WithPosition(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "syntax.yaml", "version: 1\nphases:\n  - name: [a\n")
	write(t, dir, "expr.yaml", "version: 1\nagent: {kind: claude}\nphases:\n  - name: a\n    done_when: \"spec.status == \\\"x\\\" && tokns\"\n")
	write(t, dir, "fm.yaml", "version: 1\nagent: {kind: claude}\nspec: spec.md\nphases: [{name: a}]\n")
	write(t, dir, "spec.md", "---\nstatus: x\nagent_phases: {a: b}\n---\n# body\n")
	write(t, dir, "nospec.yaml", "version: 1\nagent: {kind: claude}\nspec: nope.md\nphases: [{name: a}]\n")
	for file, want := range map[string]string{
		"syntax.yaml": "syntax.yaml:3:11: YAML syntax",
		"expr.yaml":   `expr.yaml:5:41: phases[0].done_when: unknown variable "tokns"`,
		"fm.yaml":     "spec.md:3:15: agent_phases must be a list",
		"nospec.yaml": "nospec.yaml:3:7: spec file nope.md does not exist",
	} {
		for _, command := range []string{"validate", "plan"} {
			r := pipeline(t, dir, command, file)
			if r.code != exitUsage || !strings.Contains(r.stderr, want) {
				t.Errorf("%s %s: exit %d, want 2 and %q in:\n%s", command, file, r.code, want, r.stderr)
			}
		}
	}
}
