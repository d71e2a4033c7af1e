package main

import (
	"io/fs"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every file of help/ is the long help or the example of a command of
// the tree (the full build's commands are only in the full build: the
// local one lists them and hands them over), and its text is shown as it
// is written.
func TestEveryHelpFileIsAShownHelp(t *testing.T) {
	shown := map[string]bool{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		shown[c.Long], shown[c.Example] = true, true
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(rootCommand())
	files, err := fs.Glob(helpFiles, "help/*.txt")
	if err != nil || len(files) < 40 {
		t.Fatalf("%d help files: %v", len(files), err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(file, "help/"), ".txt")
		if _, handedOver := companionShort(strings.TrimSuffix(name, ".example")); handedOver && !withTemporal {
			continue
		}
		text := strings.ReplaceAll(helpText(name), "MAX_STORE_DEPTH", strconv.Itoa(maxStoreDepth))
		if !shown[text] {
			t.Errorf("%s is the help of no command", file)
		}
	}
}

// TestHelpTextIsNotCopiedTwice: a help text costs the file's name, the
// file embed opens and ReadFile's copy, not a second copy made a string (run's help is 2.5
// KB: a size class of heap each pipeline run touched for it).
func TestHelpTextIsNotCopiedTwice(t *testing.T) {
	want, err := helpFiles.ReadFile("help/run.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got := helpText("run"); got != strings.TrimSuffix(string(want), "\n") {
		t.Fatalf("helpText(run) is not help/run.txt without its last line break:\n%q", got)
	}
	if allocs := testing.AllocsPerRun(20, func() { _ = helpText("run") }); allocs > 3 {
		t.Errorf("helpText(run) makes %v allocations, want at most 3 (the name, the open file, ReadFile's copy)", allocs)
	}
}
