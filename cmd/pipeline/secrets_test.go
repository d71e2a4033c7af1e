package main

import (
	"encoding/base64"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The secrets of these tests: one in the environment of pipeline itself,
// one only in phases.yaml's agent.env, one short enough (7 bytes) that
// only its variable's name marks it.
const (
	envSecret   = "tok-9f8e7d6c5b4a-deploy"
	agentSecret = "s3cr3t-value/7f9a+2b4c"
	shortSecret = "pw-1234"
)

// encodedForms are the ways a secret can be written: as it is, JSON
// escapes (\u002d for "-", \/ for "/", every character escaped), URL
// encoding, base64 in both alphabets with and without padding, alone and
// inside "user:secret" (HTTP Basic authentication).
func encodedForms(secret string) []string {
	var all, dash strings.Builder
	for _, r := range secret {
		fmt.Fprintf(&all, `\u%04x`, r)
	}
	dash.WriteString(strings.NewReplacer("-", `\u002d`, "/", `\/`).Replace(secret))
	var percent strings.Builder
	for i := 0; i < len(secret); i++ {
		fmt.Fprintf(&percent, "%%%02X", secret[i])
	}
	forms := []string{secret, all.String(), dash.String(), url.QueryEscape(secret), url.PathEscape(secret), percent.String()}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		forms = append(forms, enc.EncodeToString([]byte(secret)), enc.EncodeToString([]byte("user:"+secret)))
	}
	return forms
}

// leakingProject is a pipeline whose agent prints its secret and the
// pipeline's in every encoded form, checkpoints with the secret in its
// note, and whose run step carries the environment's secret on its
// command line.
func leakingProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var script strings.Builder
	script.WriteString("echo \"token is $MY_API_TOKEN and $DEPLOY_TOKEN\"\n")
	for _, secret := range []string{agentSecret, envSecret} {
		for _, form := range encodedForms(secret) {
			fmt.Fprintf(&script, "printf '%%s\\n' '{\"form\":\"%s\"}'\n", form)
		}
	}
	script.WriteString("echo \"[CHECKPOINT] note with $MY_API_TOKEN\"\n")
	write(t, dir, "leak.sh", script.String())
	write(t, dir, "phases.yaml", `version: 1
agent:
  kind: command
  command: [sh, ./leak.sh]
  env: {MY_API_TOKEN: '`+agentSecret+`', SHORT_PASSWORD: '`+shortSecret+`'}
phases:
  - name: build
    steps:
      - name: deploy
        run: echo deploying --token `+envSecret+`
      - agent: {}
`)
	return dir
}

// assertNoSecret fails when text holds a secret in any encoded form.
func assertNoSecret(t *testing.T, where, text string, secrets ...string) {
	t.Helper()
	for _, secret := range secrets {
		for _, form := range encodedForms(secret) {
			if strings.Contains(text, form) {
				t.Errorf("%s shows %q (a form of %q):\n%s", where, form, secret, text)
			}
		}
	}
}

// plan -o json printed agent.env's values as they were; plan (text and
// JSON) now shows a secret variable by name, and a secret written
// anywhere else in the plan (a run line) is redacted.
func TestPlanShowsNoSecret(t *testing.T) {
	dir := leakingProject(t)
	env := append(os.Environ(), "DEPLOY_TOKEN="+envSecret)
	for _, args := range [][]string{{"plan"}, {"plan", "-o", "json"}} {
		r := pipelineEnv(t, dir, env, args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d, %s", args, r.code, r.stderr)
		}
		assertNoSecret(t, strings.Join(args, " "), r.stdout+r.stderr, agentSecret, envSecret, shortSecret)
		if !strings.Contains(r.stdout, "[REDACTED:DEPLOY_TOKEN]") {
			t.Errorf("%v: the run line's secret is not shown redacted:\n%s", args, r.stdout)
		}
	}
	r := pipelineEnv(t, dir, env, "plan", "-o", "json")
	for _, want := range []string{`"MY_API_TOKEN": "[REDACTED:MY_API_TOKEN]"`, `"SHORT_PASSWORD": "[REDACTED:SHORT_PASSWORD]"`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan -o json: no %s in:\n%s", want, r.stdout)
		}
	}
}

// The step's header line ("== phase … · run: <line>") showed a secret of
// the run line as it was.
func TestStepHeaderShowsNoSecret(t *testing.T) {
	dir := leakingProject(t)
	r := pipelineEnv(t, dir, append(os.Environ(), "CI=true", "DEPLOY_TOKEN="+envSecret), "run")
	if r.code != exitPaused {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "step deploy · attempt 1 · run: echo deploying --token [REDACTED:DEPLOY_TOKEN]\n") {
		t.Errorf("no redacted header line in:\n%s", r.stdout)
	}
	assertNoSecret(t, "run", r.stdout+r.stderr, envSecret)
}

// Neither a file under .pipeline nor the output of run, plan, status,
// logs or sessions, as text or as JSON, holds a secret in any form the
// agent printed it in.
func TestNoSecretInAnyOutputOrFile(t *testing.T) {
	dir := leakingProject(t)
	env := append(os.Environ(), "CI=true", "DEPLOY_TOKEN="+envSecret)
	outputs := map[string]string{}
	r := pipelineEnv(t, dir, env, "run")
	if r.code != exitPaused {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	outputs["run"] = r.stdout + r.stderr
	for _, args := range [][]string{
		{"plan"}, {"plan", "-o", "json"}, {"validate"},
		{"status"}, {"status", "-v"}, {"status", "-o", "json"},
		{"logs"}, {"logs", "-o", "json"}, {"sessions"}, {"sessions", "-o", "json"},
	} {
		r := pipelineEnv(t, dir, env, args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d, %s", args, r.code, r.stderr)
		}
		outputs[strings.Join(args, " ")] = r.stdout + r.stderr
	}
	if !strings.Contains(outputs["logs"], "[REDACTED:MY_API_TOKEN]") || !strings.Contains(outputs["logs"], "[REDACTED:DEPLOY_TOKEN]") {
		t.Errorf("logs should show where the secrets were:\n%s", outputs["logs"])
	}
	for name, out := range outputs {
		assertNoSecret(t, name, out, agentSecret, envSecret)
	}
	files := 0
	err := filepath.WalkDir(filepath.Join(dir, ".pipeline"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		content, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		assertNoSecret(t, path, string(content), agentSecret, envSecret)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 5 {
		t.Fatalf("only %d files under .pipeline", files)
	}
}
