package main

import (
	"bytes"
	"os"
	"testing"
)

// The checked-in schemas are what the Go types generate now; run
// go generate ./schemas (or make schema) when this fails.
func TestSchemasAreFresh(t *testing.T) {
	phases, frontmatter, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string][]byte{"../phases.schema.json": phases, "../frontmatter.schema.json": frontmatter} {
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go generate ./schemas", file)
		}
	}
}
