package spec_test

import (
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

func TestCheckResumeTemplate(t *testing.T) {
	valid := []string{
		"Resuming {{.Phase}} of {{.Pipeline}} (attempt {{.Attempt}}) after {{.Reason}}",
		"{{range .HumanNotes}}- {{indent 2 .}}\n{{end}}",
		"{{range $i, $d := .Done}}{{$i}}: {{$d.Phase}} {{ints \",\" $d.ExitCodes}}{{end}}",
		"{{with .Done}}{{range .}}{{.Summary}}{{end}}{{else}}{{$.Phase}}{{end}}",
		"{{$p := .Phase}}{{range .NextSteps}}{{$p}}: {{.}}{{end}}",
		"{{.Note | oneline}} {{join \", \" .FilesChanged}} {{with .SpecDiff}}{{diffblock .}}{{end}} {{fence \"md\" .Note}}",
		"{{if and .Step (gt .Attempt 1)}}{{len .Done}}{{end}} {{printf \"%d\" .Attempt}} {{index .FilesChanged 0}}",
		`{{define "x"}}{{.Anything}}{{end}}{{template "x" .}}`,
	}
	for _, text := range valid {
		if problems := spec.CheckResumeTemplate(text); len(problems) > 0 {
			t.Errorf("%q: %+v, want no problem", text, problems)
		}
	}
	invalid := []struct {
		text, at, message string
	}{
		{"{{.Phse}}", ".Phse", "a ResumeInput has no field Phse"},
		{"{{range .Done}}{{.Name}}{{end}}", ".Name", "a DoneItem has no field Name"},
		{"{{with .Done}}{{.Phase}}{{end}}", ".Phase", "a list has no fields: .Phase cannot be read from it"},
		// A variable's fields are placed at the first of them.
		{"{{$.Note.Text}}", ".Note.Text", "a text has no fields: .Text cannot be read from it"},
		{"{{range $d := .Done}}{{$d.Sumary}}{{end}}", ".Sumary", "a DoneItem has no field Sumary"},
		{"{{oneline}}", "oneline", "oneline takes 1 argument, not 0"},
		{"{{.Note | indent}}", "indent", "indent takes 2 arguments, not 1"},
		{"x\n{{shout .Note}}", "{{shout", `function "shout" not defined`},
		{"{{.Phase", "{{.Phase", "unclosed action"},
	}
	for _, tt := range invalid {
		problems := spec.CheckResumeTemplate(tt.text)
		if len(problems) != 1 {
			t.Errorf("%q: %+v, want one problem", tt.text, problems)
			continue
		}
		p := problems[0]
		if want := strings.Index(tt.text, tt.at); p.Offset != want || !strings.Contains(p.Message, tt.message) {
			t.Errorf("%q: at %d %q, want at %d %q", tt.text, p.Offset, p.Message, want, tt.message)
		}
	}
}

// A template calling the functions the documentation offers (oneline,
// indent, ...) was refused: it was parsed without them.
func TestResumeTemplateMayCallItsFunctions(t *testing.T) {
	doc, err := spec.Parse("phases.yaml", []byte("version: 1\nresume_context:\n  template: '{{oneline .Note}} {{indent 2 .Reason}} {{join \", \" .FilesChanged}}'\n"+
		"phases: [{name: a, steps: [{run: x}]}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := spec.Resolve(doc, nil, testBase); err != nil {
		t.Fatal(err)
	}
}
