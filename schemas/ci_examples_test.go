package schemas_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// noFetch is a loader that loads nothing: a schema that needs a remote
// document fails to compile rather than reach the network.
type noFetch struct{}

func (noFetch) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s: the test fetches nothing; vendor the schema under testdata/", url)
}

// vendored compiles a schema of testdata/schemastore (see its README).
func vendored(t *testing.T, file string) *jsonschema.Schema {
	t.Helper()
	content, err := os.ReadFile("testdata/schemastore/" + file)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noFetch{})
	url := "https://vendored.invalid/" + file
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The CI examples are what GitHub Actions and GitLab CI take, as far as
// their schemas on SchemaStore tell; a mistake in them is caught.
func TestCIExamplesMatchTheirSchemas(t *testing.T) {
	for _, c := range []struct {
		schema, file string
		// broken is the file with a mistake its schema must catch.
		broken func(string) string
	}{
		{"github-workflow.json", "../examples/ci/.github/workflows/pipeline.yml",
			func(s string) string { return strings.Replace(s, "runs-on:", "run-on:", 1) }},
		{"gitlab-ci.json", "../examples/ci/.gitlab-ci.yml",
			func(s string) string { return strings.Replace(s, "when: always", "when: sometimes", 1) }},
	} {
		t.Run(c.schema, func(t *testing.T) {
			schema := vendored(t, c.schema)
			content, err := os.ReadFile(c.file)
			if err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(instance(t, content)); err != nil {
				t.Errorf("%s: %v", c.file, err)
			}
			broken := c.broken(string(content))
			if broken == string(content) {
				t.Fatal("the mistake was not made")
			}
			if err := schema.Validate(instance(t, []byte(broken))); err == nil {
				t.Errorf("%s with a mistake passes %s", c.file, c.schema)
			}
		})
	}
}
