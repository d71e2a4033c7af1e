package main

import (
	"embed"
	"strings"
)

// The long help of the commands, and their examples, are text files:
// help/NAME.txt and help/NAME.example.txt, read as cobra builds the
// command (only the command a command line names is built).
//
//go:embed help
var helpFiles embed.FS

// helpText is help/NAME.txt without its last line break.
func helpText(name string) string {
	text, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic("pipeline: no help text " + name + ": " + err.Error())
	}
	return strings.TrimSuffix(string(text), "\n")
}
