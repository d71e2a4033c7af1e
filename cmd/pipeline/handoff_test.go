package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The built pipeline has no Temporal backend: --backend temporal (from
// any of the places that choose it) and worker run pipeline-temporal in
// its place, found beside it, then on PATH, with the same arguments.

// lonelyBinary is the built pipeline alone in a folder of its own, so
// that what lies beside it is the test's to say.
func lonelyBinary(t *testing.T) (dir, path string) {
	t.Helper()
	dir = t.TempDir()
	path = filepath.Join(dir, "pipeline")
	linkOrCopy(t, binary, path)
	return dir, path
}

func linkOrCopy(t *testing.T, from, to string) {
	t.Helper()
	if os.Link(from, to) == nil {
		return
	}
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// fakeFleetBinary writes a pipeline-temporal into dir that prints its
// pid, its arguments one a line and who handed over to it, then exits
// 7, or with code when one is given.
func fakeFleetBinary(t *testing.T, dir, name string) {
	t.Helper()
	write(t, dir, fleetBinary, "#!/bin/sh\necho \"pid $$ "+name+"\"\nfor a in \"$@\"; do echo \"arg $a\"; done\necho \"by $"+handedOffEnv+"\"\nexit 7\n")
	if err := os.Chmod(filepath.Join(dir, fleetBinary), 0o755); err != nil {
		t.Fatal(err)
	}
}

// runBinary runs path with args in dir, with env; it returns what it
// printed, its exit code and its pid.
func runBinary(t *testing.T, path, dir string, env []string, args ...string) (result, int) {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatal(err)
	}
	return result{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}, cmd.Process.Pid
}

const oneTrueStep = "version: 1\nphases: [{name: one, steps: [{run: \"true\"}]}]\n"

func TestHandOffRunsPipelineTemporalInPlace(t *testing.T) {
	bin, pipelinePath := lonelyBinary(t)
	fakeFleetBinary(t, bin, "beside")
	project := t.TempDir()
	write(t, project, "phases.yaml", oneTrueStep)
	write(t, project, "fleet.yaml", "version: 1\nbackend: {kind: temporal}\nphases: [{name: one, steps: [{run: \"true\"}]}]\n")
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	for _, c := range []struct {
		name string
		env  []string
		args []string
	}{
		{"--backend", nil, []string{"run", "--backend", "temporal", "--new"}},
		{"--temporal", nil, []string{"status", "--temporal", "fleet.internal:7233", "a session"}},
		{"PIPELINE_BACKEND", []string{"PIPELINE_BACKEND=temporal"}, []string{"sessions", "-o", "json"}},
		{"PIPELINE_TEMPORAL", []string{"PIPELINE_TEMPORAL=127.0.0.1:7233"}, []string{"pause", "--notes", "--help"}},
		{"backend: block", nil, []string{"resume", "--file", "fleet.yaml", "--notes", "it's fine"}},
		{"worker", nil, []string{"worker", "--help", "--task-queue", "q"}},
		{"mcp", nil, []string{"mcp", "--http", "127.0.0.1:0"}},
		{"search", nil, []string{"search", "-o", "json", "--", "--help"}},
		{"ui", nil, []string{"ui", "--addr", "127.0.0.1:0"}},
		{"help search", nil, []string{"help", "search"}},
		{"search --help", nil, []string{"search", "--help"}},
		{"completion of search", nil, []string{"__complete", "search", "--ph"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, pid := runBinary(t, pipelinePath, project, append(env, c.env...), c.args...)
			want := "pid " + strconv.Itoa(pid) + " beside\n"
			for _, a := range c.args {
				want += "arg " + a + "\n"
			}
			want += "by " + pipelinePath + "\n"
			if r.code != 7 || r.stdout != want || r.stderr != "" {
				t.Errorf("exit %d, want the exit 7 of pipeline-temporal, in the same process (pid %d), with the same arguments:\n%s\nwant:\n%s%s", r.code, pid, r.stdout, want, r.stderr)
			}
		})
	}
	// The block of phases.yaml chooses temporal; --backend local says
	// otherwise, and nothing is handed over.
	r, _ := runBinary(t, pipelinePath, project, env, "run", "fleet.yaml", "--backend", "local")
	if r.code != 0 || strings.Contains(r.stdout, "pid ") {
		t.Errorf("run --backend local: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
}

// run chosen onto the fleet by its flags or the environment is handed
// over before the plan is loaded: pipeline-temporal loads it, so this
// process neither prints its warnings (they came twice) nor writes a
// plan cache entry of its own, nor says what is wrong with it.
func TestHandOffRunBeforeItsPlan(t *testing.T) {
	bin, pipelinePath := lonelyBinary(t)
	fakeFleetBinary(t, bin, "beside")
	project := t.TempDir()
	write(t, project, "phases.yaml", "version: 1\nphases: [{name: one, steps: [{run: ./build.sh}]}]\n")
	write(t, project, "broken.yaml", "version: 1\nphases: [{name: one, steps: [{run: true, model: x}]}]\n")
	cache := t.TempDir()
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "XDG_CACHE_HOME=" + cache}
	for _, c := range []struct {
		env  []string
		args []string
	}{
		{nil, []string{"run", "--backend", "temporal"}},
		{nil, []string{"run", "--temporal", "127.0.0.1:7233", "-o", "json"}},
		{[]string{"PIPELINE_TEMPORAL=127.0.0.1:7233"}, []string{"run", "--new"}},
		{nil, []string{"run", "--backend", "temporal", "broken.yaml"}},
	} {
		r, _ := runBinary(t, pipelinePath, project, append(env, c.env...), c.args...)
		if r.code != 7 || !strings.Contains(r.stdout, " beside\n") || r.stderr != "" {
			t.Errorf("%s: exit %d, want pipeline-temporal's 7 and nothing said before it:\n%s%s", c.args, r.code, r.stdout, r.stderr)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(cache, "pipeline", "plans")); len(entries) > 0 {
		t.Errorf("the local build cached a plan it hands over: %v", entries)
	}
	// The local build still reads the backend: block when nothing else
	// chose, and loads the plan for it (here, and warns).
	r, _ := runBinary(t, pipelinePath, project, env, "run", "--backend", "local")
	if r.code != 1 || !strings.Contains(r.stderr, "warning: phases[0].steps[0].run: ./build.sh does not exist") || strings.Contains(r.stdout, " beside\n") {
		t.Errorf("run --backend local: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
}

// Beside the executable comes first, then PATH.
func TestHandOffFindsPipelineTemporalOnPath(t *testing.T) {
	bin, pipelinePath := lonelyBinary(t)
	onPath := t.TempDir()
	fakeFleetBinary(t, onPath, "on-path")
	project := t.TempDir()
	write(t, project, "phases.yaml", oneTrueStep)
	env := []string{"PATH=" + onPath + ":/usr/bin:/bin", "HOME=" + t.TempDir()}
	if r, _ := runBinary(t, pipelinePath, project, env, "status", "--backend", "temporal"); r.code != 7 || !strings.Contains(r.stdout, " on-path\n") {
		t.Errorf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	fakeFleetBinary(t, bin, "beside")
	if r, _ := runBinary(t, pipelinePath, project, env, "status", "--backend", "temporal"); r.code != 7 || !strings.Contains(r.stdout, " beside\n") {
		t.Errorf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
}

// Without pipeline-temporal, the fleet's commands exit 2 and say how to
// get it; local commands do not miss it.
func TestHandOffWithoutPipelineTemporal(t *testing.T) {
	bin, pipelinePath := lonelyBinary(t)
	project := t.TempDir()
	write(t, project, "phases.yaml", oneTrueStep)
	env := []string{"PATH=" + t.TempDir(), "HOME=" + t.TempDir()}
	for _, c := range []struct {
		args []string
		what string
	}{
		{[]string{"run", "--backend", "temporal"}, "--backend temporal"},
		{[]string{"worker", "--temporal", "127.0.0.1:7233"}, "pipeline worker"},
		{[]string{"mcp"}, "pipeline mcp"},
		{[]string{"search", "flaky"}, "pipeline search"},
		{[]string{"help", "ui"}, "pipeline ui"},
	} {
		r, _ := runBinary(t, pipelinePath, project, env, c.args...)
		want := "pipeline: " + c.what + " needs pipeline-temporal, the full build of pipeline (the Temporal backend, the MCP server, search, the dashboard), and it is not here (looked at " +
			filepath.Join(bin, "pipeline-temporal") + ", PATH); local runs need it only to send webhooks and telemetry. Install both with make install (or make build, into bin/), or build it beside this one: go build -tags temporal -o " +
			filepath.Join(bin, "pipeline-temporal") + " ./cmd/pipeline\n"
		if r.code != 2 || r.stderr != want {
			t.Errorf("%s: exit %d:\n%s\nwant exit 2:\n%s", c.args, r.code, r.stderr, want)
		}
	}
	// Asked for JSON, the error is JSON too, as any command's.
	r, _ := runBinary(t, pipelinePath, project, env, "search", "-o", "json", "flaky")
	var report struct {
		Error string `json:"error"`
		Code  int    `json:"code"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil || r.code != 2 || report.Code != 2 ||
		!strings.HasPrefix(report.Error, "pipeline search needs pipeline-temporal") {
		t.Errorf("search -o json: exit %d, %v: %s", r.code, err, r.stdout)
	}
	if r, _ := runBinary(t, pipelinePath, project, env, "validate"); r.code != 0 {
		t.Errorf("validate: exit %d: %s", r.code, r.stderr)
	}
}

// A pipeline-temporal that is the local build under that name says so,
// rather than handing over to itself again and again.
func TestHandOffToALocalBuildStops(t *testing.T) {
	bin, pipelinePath := lonelyBinary(t)
	linkOrCopy(t, pipelinePath, filepath.Join(bin, fleetBinary))
	project := t.TempDir()
	write(t, project, "phases.yaml", oneTrueStep)
	r, _ := runBinary(t, pipelinePath, project, []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}, "status", "--backend", "temporal")
	if r.code != 2 || !strings.Contains(r.stderr, filepath.Join(bin, fleetBinary)+" is not a build with the Temporal backend ("+pipelinePath+" ran it as its pipeline-temporal for --backend temporal)") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
}

type doctorFleetJSON struct {
	OK       bool `json:"ok"`
	Temporal struct {
		Program, Path, Version, Status, Problem, Hint string
		Needed                                        bool
	} `json:"temporal"`
}

// doctor says where pipeline-temporal is and whether it is this build;
// without it, a local pipeline is fine and a temporal one is not.
func TestDoctorChecksPipelineTemporal(t *testing.T) {
	bin, pipelinePath := lonelyBinary(t)
	project := t.TempDir()
	write(t, project, "phases.yaml", oneTrueStep)
	write(t, project, "fleet.yaml", "version: 1\nbackend: {kind: temporal}\nphases: [{name: one, steps: [{run: \"true\"}]}]\n")
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	doctor := func(file string, wantCode int) (doctorFleetJSON, string) {
		t.Helper()
		r, _ := runBinary(t, pipelinePath, project, env, "doctor", "-o", "json", file)
		var got doctorFleetJSON
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != wantCode {
			t.Fatalf("doctor %s: exit %d, want %d: %v\n%s%s", file, r.code, wantCode, err, r.stdout, r.stderr)
		}
		text, _ := runBinary(t, pipelinePath, project, env, "doctor", file)
		return got, text.stdout
	}
	sibling := filepath.Join(bin, fleetBinary)

	got, text := doctor("phases.yaml", 0)
	if got.Temporal.Status != "missing" || got.Temporal.Needed || !got.OK ||
		!strings.Contains(text, "pipeline-temporal: not found (looked at "+sibling+", PATH); local runs need it only to send webhooks and telemetry; --backend temporal, pipeline worker, mcp, search and ui do\n"+
			"  hint: make install builds pipeline and pipeline-temporal side by side; or go build -tags temporal -o "+sibling+" ./cmd/pipeline\n") {
		t.Errorf("%+v\n%s", got, text)
	}
	if got, text := doctor("fleet.yaml", 2); got.Temporal.Status != "missing" || !got.Temporal.Needed || got.OK ||
		!strings.Contains(text, "this pipeline runs on the Temporal backend and needs it") {
		t.Errorf("%+v\n%s", got, text)
	}

	// A pipeline-temporal that answers as this build with the backend.
	var self map[string]any
	if err := json.Unmarshal([]byte(pipeline(t, ".", "version", "-o", "json").stdout), &self); err != nil {
		t.Fatal(err)
	}
	answer := func(v map[string]any) {
		t.Helper()
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		write(t, bin, fleetBinary, "#!/bin/sh\n[ \"$*\" = 'version -o json' ] && echo '"+string(out)+"'\n")
		if err := os.Chmod(sibling, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self["backends"] = []string{"local", "temporal"}
	answer(self)
	if got, text := doctor("fleet.yaml", 0); got.Temporal.Status != "ok" || got.Temporal.Path != sibling || !strings.HasSuffix(got.Temporal.Version, " with the Temporal backend") ||
		!strings.Contains(text, "pipeline-temporal: "+sibling+" (pipeline ") {
		t.Errorf("%+v\n%s", got, text)
	}
	self["version"] = "v0.0.1"
	answer(self)
	if got, text := doctor("fleet.yaml", 0); got.Temporal.Status != "other-version" || !strings.Contains(got.Temporal.Problem, `is "pipeline v0.0.1`) ||
		!strings.Contains(text, "  hint: build both from one checkout: make install, or go build -tags temporal") {
		t.Errorf("%+v\n%s", got, text)
	}
	// The local build under that name.
	os.Remove(sibling)
	linkOrCopy(t, pipelinePath, sibling)
	if got, _ := doctor("fleet.yaml", 2); got.Temporal.Status != "broken" || !strings.Contains(got.Temporal.Problem, "has no Temporal backend") {
		t.Errorf("%+v", got)
	}
}
