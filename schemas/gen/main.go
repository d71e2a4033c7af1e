// Command gen writes the JSON Schemas of phases.yaml and of a spec's
// frontmatter from the Go types of engine/spec. Run it with
// go generate ./schemas.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"

	"github.com/invopop/jsonschema"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	phases, frontmatter, err := generate()
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "phases.schema.json"), phases, 0o644)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "frontmatter.schema.json"), frontmatter, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// frontmatter is the shape of a spec's frontmatter: LeanSpec's common keys,
// the two override keys, and any other key.
type frontmatter struct {
	Status      string          `json:"status,omitempty" jsonschema_description:"LeanSpec status, e.g. planned, in-progress, complete"`
	Priority    string          `json:"priority,omitempty" jsonschema_description:"LeanSpec priority, e.g. low, medium, high, critical"`
	Tags        []string        `json:"tags,omitempty" jsonschema_description:"free-form tags"`
	DependsOn   []string        `json:"depends_on,omitempty" jsonschema_description:"specs this one depends on"`
	AgentPhases agentPhases     `json:"agent_phases,omitempty" jsonschema_description:"the phases for this spec, each {name: prompt}; they replace the phases of phases.yaml, and one named like a phase of phases.yaml keeps its steps and policies"`
	Pipeline    *spec.Overrides `json:"pipeline,omitempty" jsonschema_description:"overrides of phases.yaml for this spec"`
}

type agentPhases []map[string]string

var (
	exprType        = reflect.TypeOf(spec.Expr{})
	durationType    = reflect.TypeOf(spec.Duration(0))
	triggersType    = reflect.TypeOf(spec.Triggers{})
	commandsType    = reflect.TypeOf(spec.Commands{})
	agentPhasesType = reflect.TypeOf(agentPhases{})
)

func exprSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		AnyOf:       []*jsonschema.Schema{{Type: "string"}, {Type: "boolean"}},
		Description: "an expression (expr-lang); see docs/expressions.md",
	}
}

func mapper(t reflect.Type) *jsonschema.Schema {
	switch t {
	case exprType:
		return exprSchema()
	case durationType:
		return &jsonschema.Schema{Type: "string", Pattern: `^\s*([0-9]+d)?([0-9.]+(ns|us|µs|ms|s|m|h))*\s*$`,
			Description: "a duration: 90s, 30m, 2h, 1h30m, 7d"}
	case triggersType:
		return &jsonschema.Schema{
			Type:                 "object",
			PropertyNames:        &jsonschema.Schema{Pattern: `^[A-Za-z0-9_][A-Za-z0-9_.-]*$`},
			AdditionalProperties: &jsonschema.Schema{AnyOf: []*jsonschema.Schema{exprSchema(), {Type: "null"}}},
			Description:          "named conditions; null removes an inherited one",
		}
	case commandsType:
		line := &jsonschema.Schema{Type: "string", Pattern: `\S`}
		return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{line, {Type: "array", Items: line}}}
	case agentPhasesType:
		phase := &jsonschema.Schema{
			AnyOf: []*jsonschema.Schema{
				{Type: "string"},
				{Type: "object", MinProperties: ptr(uint64(1)), MaxProperties: ptr(uint64(1)),
					AdditionalProperties: &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "string"}, {Type: "null"}}}},
			},
		}
		return &jsonschema.Schema{Type: "array", Items: phase, MinItems: ptr(uint64(1))}
	}
	return nil
}

// globSchema is one watch glob: not empty, and neither absolute nor
// starting above the folder of phases.yaml, as the loader checks (which
// also refuses a .. further in, and a glob that does not parse).
func globSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:      "string",
		MinLength: ptr(uint64(1)),
		Not:       &jsonschema.Schema{Pattern: `^(/|[A-Za-z]:|\.\.(/|$))`},
	}
}

func ptr[T any](v T) *T { return &v }

func reflector() *jsonschema.Reflector {
	return &jsonschema.Reflector{
		RequiredFromJSONSchemaTags: true,
		Mapper:                     mapper,
		DoNotReference:             true,
	}
}

func generate() (phases, fm []byte, err error) {
	p := reflector().Reflect(&spec.Pipeline{})
	p.ID = "urn:pipeline:phases.schema.json"
	p.Title = "phases.yaml"
	p.Description = "A pipeline of phases run by the pipeline tool; see README.md"
	watch, ok := p.Properties.Get("watch")
	if !ok {
		return nil, nil, fmt.Errorf("the phases.yaml schema has no watch")
	}
	watch.Items = globSchema()
	if phases, err = marshal(p); err != nil {
		return nil, nil, err
	}
	f := reflector().Reflect(&frontmatter{})
	f.ID = "urn:pipeline:frontmatter.schema.json"
	f.Title = "spec frontmatter"
	f.Description = "The YAML frontmatter of a spec file; keys other than agent_phases and pipeline are free and readable as spec.<key>"
	f.AdditionalProperties = jsonschema.TrueSchema
	fm, err = marshal(f)
	return phases, fm, err
}

func marshal(s *jsonschema.Schema) ([]byte, error) {
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}
