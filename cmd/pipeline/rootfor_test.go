package main

import (
	"bytes"
	"testing"

	"github.com/spf13/cobra"
)

// Each command is listed under the name it answers to, and the whole
// tree holds nothing else than the listed commands, the tagged extras
// and cobra's own (help, completion): a command line that names one is
// given that command, and one that names none the whole tree.
func TestCommandsAreListedUnderTheirNames(t *testing.T) {
	listed := map[string]bool{}
	for _, c := range commands {
		if got := c.build().Name(); got != c.name {
			t.Errorf("%q builds the command %q", c.name, got)
		}
		listed[c.name] = true
	}
	for _, extra := range extraCommands {
		listed[extra().Name()] = true
	}
	root := rootCommand()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, cmd := range root.Commands() {
		if !listed[cmd.Name()] && cmd.Name() != "help" && cmd.Name() != "completion" {
			t.Errorf("the command %q is in the tree but not in commands: rootFor would never build it alone", cmd.Name())
		}
	}
	for name, args := range map[string][]string{"run": {"run", "x.yaml"}, "status": {"status"}} {
		tree := rootFor(args)
		if len(tree.Commands()) != 1 || tree.Commands()[0].Name() != name {
			t.Errorf("rootFor(%q) holds %v, want %s alone", args, names(tree.Commands()), name)
		}
	}
	if n := len(rootFor([]string{"--version"}).Commands()); n != 0 {
		t.Errorf("rootFor(--version) holds %d commands, want none", n)
	}
	if got, want := len(rootFor([]string{"--help"}).Commands()), len(root.Commands()); got != want-2 {
		t.Errorf("rootFor(--help) holds %d commands, the whole tree %d", got, want-2)
	}
}

// A command built alone parses and answers as in the whole tree: its
// help is the same text, and --version says the same line.
func TestACommandAloneAnswersAsInTheWholeTree(t *testing.T) {
	for _, args := range [][]string{{"run", "--help"}, {"status", "--help"}, {"memory", "--help"}, {"--version"},
		{"run", "--version"}, {"status", "completion"}} {
		alone, whole := execute(rootFor(args), args), execute(rootCommand(), args)
		if alone != whole {
			t.Errorf("pipeline %q built alone says:\n%s\nin the whole tree:\n%s", args, alone, whole)
		}
		if alone == "" {
			t.Errorf("pipeline %q says nothing", args)
		}
	}
}

func execute(root *cobra.Command, args []string) string {
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	if _, err := root.ExecuteC(); err != nil {
		out.WriteString("error: " + err.Error())
	}
	return out.String()
}

func names(cmds []*cobra.Command) []string {
	var out []string
	for _, c := range cmds {
		out = append(out, c.Name())
	}
	return out
}

// A command built alone runs without the root's --version and cobra's
// completion command, which only the whole tree needs.
func TestACommandAloneGoesWithoutTheRootsOwn(t *testing.T) {
	tree := rootFor([]string{"status", "--help"})
	execute(tree, []string{"status", "--help"})
	for _, name := range names(tree.Commands()) {
		if name != "status" && name != "help" {
			t.Errorf("after pipeline status --help, the tree holds %s", name)
		}
	}
	if tree.Version != "" {
		t.Errorf("the root of a command alone has the version %q", tree.Version)
	}
}
