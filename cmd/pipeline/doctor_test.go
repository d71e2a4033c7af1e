package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeCLI writes a program to bin that answers --version with version.
func fakeCLI(t *testing.T, bin, name, version string) {
	t.Helper()
	write(t, bin, name, "#!/bin/sh\n[ \"$1\" = --version ] && echo '"+version+"'\n")
	if err := os.Chmod(filepath.Join(bin, name), 0o755); err != nil {
		t.Fatal(err)
	}
}

const threeAgents = `version: 1
phases:
  - {name: design, agent: {kind: claude}}
  - {name: build, agent: {kind: gemini}}
  - {name: review, agent: {kind: codex, env: {OPENAI_API_KEY: sk-from-the-agent-env-0123456789}}}
`

type doctorJSON struct {
	OK     bool `json:"ok"`
	Agents []struct {
		Kind        string   `json:"kind"`
		Status      string   `json:"status"`
		Version     string   `json:"version"`
		Minimum     string   `json:"minimum"`
		Credentials []string `json:"credentials"`
		Problem     string   `json:"problem"`
	} `json:"agents"`
}

// Fake CLIs on PATH: claude is there and recent, gemini is missing, codex
// is too old. Credentials are named, never shown.
func TestDoctorChecksTheAgentCLIs(t *testing.T) {
	dir, bin, home := t.TempDir(), t.TempDir(), t.TempDir()
	write(t, dir, "phases.yaml", threeAgents)
	fakeCLI(t, bin, "claude", "2.1.400 (Claude Code)")
	fakeCLI(t, bin, "codex", "codex-cli 0.150.2")
	// gemini's login file is there, but not gemini.
	write(t, home, ".gemini/oauth_creds.json", `{"refresh_token": "a-secret-refresh-token"}`)
	env := []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + home, "ANTHROPIC_API_KEY=sk-ant-a-secret-value-0123456789"}

	r := pipelineEnv(t, dir, env, "doctor", "-o", "json")
	if r.code != 2 {
		t.Fatalf("doctor: exit %d, want 2: %s %s", r.code, r.stdout, r.stderr)
	}
	var got doctorJSON
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if got.OK || len(got.Agents) != 3 {
		t.Fatalf("%+v", got)
	}
	claude, gemini, codex := got.Agents[0], got.Agents[1], got.Agents[2]
	if claude.Kind != "claude" || claude.Status != "ok" || claude.Version != "2.1.400" || strings.Join(claude.Credentials, ",") != "ANTHROPIC_API_KEY" {
		t.Errorf("claude %+v", claude)
	}
	if gemini.Status != "missing" || !strings.Contains(gemini.Problem, `"gemini" was not found on PATH`) {
		t.Errorf("gemini %+v", gemini)
	}
	if codex.Status != "too-old" || codex.Version != "0.150.2" || codex.Minimum != "0.169.0" ||
		strings.Join(codex.Credentials, ",") != "OPENAI_API_KEY" {
		t.Errorf("codex %+v", codex)
	}

	text := pipelineEnv(t, dir, env, "doctor")
	if text.code != 2 {
		t.Errorf("doctor: exit %d", text.code)
	}
	for _, want := range []string{"ok", "claude", "2.1.400", "credentials: ANTHROPIC_API_KEY", "missing", "npm install -g @google/gemini-cli@0.61.0",
		"too-old", "needs 0.169.0 or newer"} {
		if !strings.Contains(text.stdout, want) {
			t.Errorf("doctor lacks %q:\n%s", want, text.stdout)
		}
	}
	for _, out := range []string{r.stdout, r.stderr, text.stdout, text.stderr} {
		for _, secret := range []string{"sk-ant-a-secret-value", "sk-from-the-agent-env", "a-secret-refresh-token"} {
			if strings.Contains(out, secret) {
				t.Errorf("a secret is shown: %s", out)
			}
		}
	}

	// Every CLI there and recent: exit 0; no credentials is a warning.
	fakeCLI(t, bin, "gemini", "0.61.0")
	fakeCLI(t, bin, "codex", "codex-cli 0.169.0")
	ok := pipelineEnv(t, dir, []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + t.TempDir()}, "doctor")
	if ok.code != 0 || !strings.Contains(ok.stdout, "claude: no credentials found: set ANTHROPIC_API_KEY") {
		t.Errorf("doctor: exit %d:\n%s%s", ok.code, ok.stdout, ok.stderr)
	}
	if strings.Contains(ok.stdout, "codex: no credentials") {
		t.Errorf("codex's key set in the agent's env was not seen:\n%s", ok.stdout)
	}
}

// validate --preflight fails (exit 2) when an agent CLI is missing; plain
// validate does not look.
func TestValidatePreflight(t *testing.T) {
	dir, bin := t.TempDir(), t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nphases: [{name: design, agent: {kind: claude}}]\n")
	env := []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + t.TempDir()}
	if r := pipelineEnv(t, dir, env, "validate"); r.code != 0 {
		t.Fatalf("validate: exit %d: %s", r.code, r.stderr)
	}
	r := pipelineEnv(t, dir, env, "validate", "--preflight")
	if r.code != 2 || !strings.Contains(r.stdout, `"claude" was not found on PATH`) {
		t.Errorf("validate --preflight: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	fakeCLI(t, bin, "claude", "2.1.332 (Claude Code)")
	if r := pipelineEnv(t, dir, env, "validate", "--preflight"); r.code != 0 {
		t.Errorf("validate --preflight with claude there: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
}
