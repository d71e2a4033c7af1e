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
