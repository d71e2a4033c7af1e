// Package templates holds the built-in templates of pipeline init
// --template: for each kind of work, a phases.yaml whose phases, prompts,
// triggers and policies fit it, and a spec skeleton in LeanSpec's shape.
// A project's .pipeline/templates/NAME/ and the user's
// <config>/pipeline/templates/NAME/ are read the same way (see
// app.Templates).
package templates

import "embed"

// FS holds NAME/phases.yaml and NAME/spec.md for each built-in template.
//
//go:embed */phases.yaml */spec.md
var FS embed.FS
