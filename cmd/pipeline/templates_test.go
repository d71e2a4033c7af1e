package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/app"
)

// templateInfo is a line of pipeline templates -o json.
type templateInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	From        string `json:"from"`
	Dir         string `json:"dir"`
}

func listTemplates(t *testing.T, dir string, env []string) map[string]templateInfo {
	t.Helper()
	r := pipelineEnv(t, dir, env, "templates", "-o", "json")
	var list []templateInfo
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || r.code != 0 {
		t.Fatalf("templates -o json: exit %d, %v: %s%s", r.code, err, r.stdout, r.stderr)
	}
	byName := map[string]templateInfo{}
	for _, tl := range list {
		byName[tl.Name] = tl
	}
	return byName
}

// planPhases are the phase names of pipeline plan -o json in dir.
func planPhases(t *testing.T, dir string) []string {
	t.Helper()
	r := pipeline(t, dir, "plan", "-o", "json")
	var plan struct {
		Phases []struct {
			Name string `json:"name"`
		} `json:"phases"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil {
		t.Fatalf("plan -o json: exit %d, %v: %s", r.code, err, r.stderr)
	}
	var names []string
	for _, p := range plan.Phases {
		names = append(names, p.Name)
	}
	return names
}

// Issue 27: init --template bugfix writes a phases.yaml that validates
// and whose phases differ from feature's.
func TestInitTemplateBugfixDiffersFromFeature(t *testing.T) {
	want := map[string][]string{
		"bugfix":  {"reproduce", "fix", "regression-test", "review"},
		"feature": {"design", "implement", "test", "docs", "review"},
	}
	for name, phases := range want {
		dir := t.TempDir()
		if r := pipeline(t, dir, "init", "--template", name); r.code != 0 {
			t.Fatalf("init --template %s: exit %d: %s", name, r.code, r.stderr)
		}
		if r := pipeline(t, dir, "validate"); r.code != 0 {
			t.Fatalf("%s's phases.yaml does not validate: %s", name, r.stderr)
		}
		if got := planPhases(t, dir); !slices.Equal(got, phases) {
			t.Errorf("%s's phases are %v, want %v", name, got, phases)
		}
		skeleton := fileContent(t, filepath.Join(dir, filepath.FromSlash(app.StarterSpecPath)))
		if !strings.Contains(skeleton, "status: planned\n") || !strings.Contains(skeleton, "template: "+name+"\n") || strings.Contains(skeleton, "{{today}}") {
			t.Errorf("%s's spec skeleton:\n%s", name, skeleton)
		}
	}
	dir := t.TempDir()
	if r := pipeline(t, dir, "init", "--template", "nope"); r.code != exitUsage || !strings.Contains(r.stderr, "bugfix, docs, feature, refactor, spike") {
		t.Errorf("init --template nope: exit %d, %q", r.code, r.stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("init of an unknown template wrote %d file(s)", len(entries))
	}
}

// Every shipped template validates and runs to its first pause with a
// scripted agent (kind: command, set in the spec's pipeline block): the
// pause is after the first phase, whose prompt the agent got, and the
// spec is in-progress.
func TestEveryTemplateRunsToItsFirstPause(t *testing.T) {
	builtIn := listTemplates(t, t.TempDir(), nil)
	for _, name := range []string{"feature", "bugfix", "refactor", "docs", "spike"} {
		if builtIn[name].From != "built-in" || builtIn[name].Description == "" {
			t.Errorf("template %s: %+v, want a built-in one with a description", name, builtIn[name])
		}
	}
	for name := range builtIn {
		t.Run(name, func(t *testing.T) { runTemplateToFirstPause(t, name) })
	}
}

// runTemplateToFirstPause inits template name in a git work tree, with
// a scripted agent that keeps each prompt (and, in a spike, tries to
// write in the work tree), and runs it to its first pause.
func runTemplateToFirstPause(t *testing.T, name string) {
	dir, env := gitRepo(t)
	prompts := t.TempDir()
	env = append(env, "PROMPTS="+prompts)
	if r := pipelineEnv(t, dir, env, "init", "--template", name); r.code != 0 {
		t.Fatalf("init: exit %d: %s", r.code, r.stderr)
	}
	script := `cat > "$PROMPTS/$PIPELINE_PHASE.txt"`
	if name == "spike" {
		script += "; echo x > scratch.txt"
	}
	specPath := filepath.Join(dir, filepath.FromSlash(app.StarterSpecPath))
	scripted := strings.Replace(fileContent(t, specPath), "pipeline:\n",
		"pipeline:\n  agent: {kind: command, command: [sh, -c, '"+script+"'], args: []}\n", 1)
	write(t, dir, filepath.FromSlash(app.StarterSpecPath), scripted)
	gitOut(t, dir, env, "add", ".")
	gitOut(t, dir, env, "commit", "-qm", "init --template "+name)
	if r := pipelineEnv(t, dir, env, "validate"); r.code != 0 {
		t.Fatalf("validate: %s", r.stderr)
	}
	phases := planPhases(t, dir)
	r := pipelineEnv(t, dir, env, "run")
	s := decodeStatus(t, pipelineEnv(t, dir, env, "status", "-o", "json"))
	if r.code != exitPaused || s.PauseReason != "phase-complete" || s.Phases[0].Status != "completed" || s.Phase != phases[1] {
		t.Fatalf("run: exit %d, %s before %s (%s), want paused after %s: %s%s", r.code, s.Status, s.Phase, s.PauseReason, phases[0], r.stdout, r.stderr)
	}
	if got := fileContent(t, filepath.Join(prompts, phases[0]+".txt")); got == "<absent>" || !strings.Contains(got, "spec") {
		t.Errorf("the agent got no prompt for %s: %q", phases[0], got)
	}
	if got := fileContent(t, specPath); !strings.Contains(got, "status: in-progress\n") {
		t.Errorf("the spec is not in-progress at the first pause:\n%s", got)
	}
	if name == "spike" && fileContent(t, filepath.Join(dir, "scratch.txt")) != "<absent>" {
		t.Errorf("the spike's explore phase is not read-only: scratch.txt was kept")
	}
}

// A project's templates go over the user's, which go over the built-in
// ones; each is listed with where it comes from and used by init.
func TestProjectAndUserTemplatesShadowTheBuiltIn(t *testing.T) {
	config, dir := t.TempDir(), t.TempDir()
	env := append(os.Environ(), "XDG_CONFIG_HOME="+config, "HOME="+config)
	mine := "# description: my own flow\nversion: 1\nagent: {kind: command, command: [\"true\"]}\nphases:\n  - name: only-mine\n"
	write(t, config, "pipeline/templates/mine/phases.yaml", mine)
	write(t, config, "pipeline/templates/bugfix/phases.yaml", "# description: the user's bugfix\n"+mine)
	write(t, dir, ".pipeline/templates/bugfix/phases.yaml", "# description: the project's bugfix\n"+mine)
	list := listTemplates(t, dir, env)
	checks := map[string]string{"mine": "user", "bugfix": "project", "feature": "built-in"}
	for name, from := range checks {
		if list[name].From != from {
			t.Errorf("template %s: %+v, want from %s", name, list[name], from)
		}
	}
	if list["bugfix"].Description != "the project's bugfix" || list["mine"].Description != "my own flow" {
		t.Errorf("descriptions: %+v", list)
	}
	if text := pipelineEnv(t, dir, env, "templates").stdout; !strings.Contains(text, "mine") || !strings.Contains(text, "user (") {
		t.Errorf("templates does not list the user's:\n%s", text)
	}
	if r := pipelineEnv(t, dir, env, "init", "--template", "mine"); r.code != 0 {
		t.Fatalf("init --template mine: exit %d: %s", r.code, r.stderr)
	}
	if got := fileContent(t, filepath.Join(dir, "phases.yaml")); got != mine {
		t.Errorf("init wrote:\n%s\nwant the user's template", got)
	}
}

// A spec names its template (pipeline: {template: spike}): init --spec
// writes that template's phases.yaml with spec: pointing at it; a spec
// naming none is a usage error.
func TestInitSpecUsesTheTemplateItNames(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "specs/007-cache/README.md", "---\nstatus: planned\npipeline: {template: spike}\n---\n# Which cache?\n")
	if r := pipeline(t, dir, "init", "--spec", "specs/007-cache/README.md"); r.code != 0 {
		t.Fatalf("init --spec: exit %d: %s", r.code, r.stderr)
	}
	written := fileContent(t, filepath.Join(dir, "phases.yaml"))
	if !strings.Contains(written, "\nspec: specs/007-cache/README.md   #") || !strings.Contains(written, "name: spike") {
		t.Errorf("init --spec wrote:\n%s", written)
	}
	if got := planPhases(t, dir); !slices.Equal(got, []string{"explore", "write-up"}) {
		t.Errorf("phases %v, want spike's", got)
	}
	other := t.TempDir()
	write(t, other, "spec.md", "---\nstatus: planned\n---\n# No template\n")
	if r := pipeline(t, other, "init", "--spec", "spec.md"); r.code != exitUsage || !strings.Contains(r.stderr, "names no template") {
		t.Errorf("init --spec of a spec naming no template: exit %d, %q", r.code, r.stderr)
	}
}
