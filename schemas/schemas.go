// Package schemas holds the JSON Schemas of phases.yaml and of a spec's
// frontmatter, generated from the Go types of engine/spec by ./gen (run
// go generate ./schemas after changing those types; a test fails while the
// files are stale).
package schemas

import _ "embed"

//go:generate go -C gen run . ..

// Phases is the JSON Schema of phases.yaml.
//
//go:embed phases.schema.json
var Phases []byte

// Frontmatter is the JSON Schema of a spec's frontmatter.
//
//go:embed frontmatter.schema.json
var Frontmatter []byte
