package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// examples/ci: its phases.yaml validates, and every pipeline command its
// workflows run is one this pipeline takes, flags included (the
// workflows' schemas are checked in schemas/ci_examples_test.go).
func TestCIExampleValidatesAndItsCommandsParse(t *testing.T) {
	example := filepath.Join(repoRoot, "examples", "ci")
	if r := pipeline(t, example, "validate"); r.code != 0 || !strings.Contains(r.stdout, "ok  phases.yaml") {
		t.Errorf("validate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var scripts []string
	var github struct {
		Jobs map[string]struct {
			Steps []struct {
				Run string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	readYAML(t, filepath.Join(example, ".github", "workflows", "pipeline.yml"), &github)
	for _, job := range github.Jobs {
		for _, step := range job.Steps {
			scripts = append(scripts, step.Run)
		}
	}
	var gitlab map[string]any
	readYAML(t, filepath.Join(example, ".gitlab-ci.yml"), &gitlab)
	for _, v := range gitlab {
		job, ok := v.(map[string]any)
		if !ok {
			continue
		}
		for _, key := range []string{"before_script", "script", "after_script"} {
			lines, _ := job[key].([]any)
			for _, line := range lines {
				scripts = append(scripts, line.(string))
			}
		}
	}
	commands := 0
	for _, script := range scripts {
		for _, args := range pipelineCommands(script) {
			commands++
			r := pipeline(t, example, append(args, "--help")...)
			if r.code != 0 || !strings.Contains(r.stdout, "Usage:") {
				t.Errorf("pipeline %s: exit %d, %s", strings.Join(args, " "), r.code, r.stderr)
			}
		}
	}
	if commands < 8 {
		t.Errorf("only %d pipeline commands found in the workflows", commands)
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(content, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// pipelineCommands finds the pipeline commands of a shell script: the
// arguments of each simple command whose first word is pipeline, a
// quoted word taken whole (what is in it does not matter here).
func pipelineCommands(script string) [][]string {
	var out [][]string
	var words []string
	var word strings.Builder
	inWord := false
	var quote byte
	end := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	command := func() {
		end()
		if len(words) > 1 && words[0] == "pipeline" {
			out = append(out, words[1:])
		}
		words = nil
	}
	for i := 0; i < len(script); i++ {
		c := script[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				word.WriteByte(c)
			}
		case c == '"' || c == '\'':
			quote, inWord = c, true
		case c == '|' || c == '&' || c == ';' || c == '\n' || c == '(' || c == ')':
			command()
		case c == ' ' || c == '\t':
			end()
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	command()
	return out
}
