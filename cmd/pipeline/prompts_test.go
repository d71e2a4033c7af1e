package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/internal/filetree"
)

// storeBytes is every file of the store with its content, and its
// size, mode and time as filetree.Of has them.
func storeBytes(t *testing.T, dir string) map[string]string {
	t.Helper()
	root := filepath.Join(dir, ".pipeline")
	tree := filetree.Of(t, root)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		content, err := os.ReadFile(path)
		tree[path] += "\n" + string(content)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// Issue 12: the prompt actually sent, resume context included, is kept
// with the transcript (logs --prompts), and resume --dry-run prints the
// resume context that would be sent, sending and writing nothing.
func TestPromptsAreKeptAndResumeDryRunSendsNothing(t *testing.T) {
	dir := truthProject(t, `defaults: {pause_when: {checkpoint: checkpoint}}
phases:
  - {name: design, prompt: Draft the design.}
  - {name: build, prompt: Build it.}
`)
	env := append(os.Environ(), "CHECKPOINT_IN=design")
	if r := pipelineEnv(t, dir, env, "run", "--grace", "1s"); r.code != exitPaused {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	first := lastPrompt(t, dir, "design")
	logs := pipeline(t, dir, "logs", "--prompts")
	wantIn(t, logs.stdout, []string{"==> design/1-agent.prompt <==\n" + first + "==> design/1-agent.log <==\n[CHECKPOINT] halfway there"}, nil)
	if plain := pipeline(t, dir, "logs"); strings.Contains(plain.stdout, ".prompt") || strings.Contains(plain.stdout, "Draft the design.") {
		t.Errorf("logs without --prompts shows the prompt:\n%s", plain.stdout)
	}

	before := storeBytes(t, dir)
	dry := pipelineEnv(t, dir, env, "resume", "--dry-run", "--notes", "keep it small")
	if dry.code != 0 {
		t.Fatalf("resume --dry-run: exit %d: %s", dry.code, dry.stderr)
	}
	wantIn(t, dry.stdout, []string{"[Resume context]", `resuming phase "design"`, "You printed the checkpoint marker", "- keep it small"}, nil)
	wantIn(t, dry.stderr, []string{"would resume phase design, step agent (attempt 1); nothing was sent or written"}, nil)
	if after := storeBytes(t, dir); !reflect.DeepEqual(before, after) {
		t.Errorf("resume --dry-run changed the store:\n%v\n%v", before, after)
	}
	if got := lastPrompt(t, dir, "design"); got != first {
		t.Errorf("resume --dry-run sent a prompt:\n%s", got)
	}

	if r := pipelineEnv(t, dir, env, "resume", "--notes", "keep it small"); r.code != 0 {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	sent := lastPrompt(t, dir, "design")
	if !strings.HasPrefix(sent, strings.TrimSuffix(dry.stdout, "\n")+"\n\nDraft the design.") {
		t.Errorf("the dry run printed\n%s\nthe resume sent\n%s", dry.stdout, sent)
	}
	logs = pipeline(t, dir, "logs", "--prompts", "--phase", "design")
	wantIn(t, logs.stdout, []string{first + "\n----- the next prompt sent to this attempt -----\n" + sent}, nil)
	if js := pipeline(t, dir, "logs", "--prompts", "-o", "json"); !strings.Contains(js.stdout, `"prompt":"design/1-agent.prompt"`) {
		t.Errorf("logs --prompts -o json:\n%s", js.stdout)
	}
}

// When the step resumed is a run: step, the dry run shows the context the
// first agent step after it would get, and says which step that is.
func TestResumeDryRunNamesTheAgentStepTheContextGoesWith(t *testing.T) {
	dir := truthProject(t, `phases:
  - {name: design, auto_advance: false}
  - name: build
    steps: [{name: check, run: "true"}, {name: agent, agent: {}}]
`)
	if r := pipeline(t, dir, "run"); r.code != exitPaused {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	before := storeBytes(t, dir)
	dry := pipeline(t, dir, "resume", "--dry-run")
	if dry.code != 0 {
		t.Fatalf("resume --dry-run: exit %d: %s", dry.code, dry.stderr)
	}
	wantIn(t, dry.stderr, []string{"would resume phase build, step check (attempt 1)", "the first agent step, build/agent"}, nil)
	wantIn(t, dry.stdout, []string{`resuming phase "build"`, "(step agent, attempt 1)", "auto_advance: false"}, nil)
	if after := storeBytes(t, dir); !reflect.DeepEqual(before, after) {
		t.Errorf("resume --dry-run changed the store")
	}
	if r := pipeline(t, dir, "resume", "--dry-run", "--session-file", "x.tar.gz"); r.code != exitUsage {
		t.Errorf("--dry-run with --session-file: exit %d, %s", r.code, r.stderr)
	}
}
