// The schema generator is a module of its own so that its dependencies
// (invopop/jsonschema, which pulls in a release candidate of yaml v4) stay
// out of the graph of github.com/pipeline-dev/pipeline. It builds against
// the checkout it sits in.
module github.com/pipeline-dev/pipeline/schemas/gen

go 1.26.8

require (
	github.com/invopop/jsonschema v0.14.0
	github.com/pipeline-dev/pipeline v0.0.0-00010101000000-000000000000
)

require (
	github.com/bahlo/generic-list-go v0.2.0 // indirect
	github.com/bmatcuk/doublestar/v4 v4.10.4 // indirect
	github.com/buger/jsonparser v1.1.2 // indirect
	github.com/expr-lang/expr v1.17.8 // indirect
	github.com/goccy/go-yaml v1.19.2 // indirect
	github.com/pb33f/ordered-map/v2 v2.3.1 // indirect
	go.yaml.in/yaml/v4 v4.0.0-rc.2 // indirect
)

replace github.com/pipeline-dev/pipeline => ../..
