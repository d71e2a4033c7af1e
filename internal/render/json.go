package render

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/pipeline-dev/pipeline/internal/termsafe"
)

// JSON writes v as indented JSON, as -o json prints it: no HTML escapes,
// and what a terminal would take for a control sequence escaped (see
// termsafe.EscapeJSON).
func JSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(termsafe.EscapeJSON(b.Bytes()))
	return err
}

// JSONLine writes v as one line of JSON, for streams of objects.
func JSONLine(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(termsafe.EscapeJSON(b.Bytes()))
	return err
}
