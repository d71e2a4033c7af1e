package main

import (
	"bytes"
	"embed"
	"unsafe"
)

// The long help of the commands, and their examples, are text files:
// help/NAME.txt and help/NAME.example.txt, read as cobra builds the
// command (only the command a command line names is built).
//
//go:embed help
var helpFiles embed.FS

// helpText is help/NAME.txt without its last line break. ReadFile's
// copy is the string, not copied again: nothing else holds it, and a
// second copy of run's 2.5 KB of help was a size class of heap each
// pipeline run touched for the first time.
func helpText(name string) string {
	text, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic("pipeline: no help text " + name + ": " + err.Error())
	}
	text = bytes.TrimSuffix(text, []byte("\n"))
	return unsafe.String(unsafe.SliceData(text), len(text))
}
