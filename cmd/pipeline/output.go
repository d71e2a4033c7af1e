package main

import (
	"encoding/json"
	"io"

	"github.com/spf13/cobra"
)

// outputFlag is the --output flag shared by every command that prints data.
type outputFlag struct{ format string }

func addOutputFlag(cmd *cobra.Command) *outputFlag {
	o := &outputFlag{format: "text"}
	cmd.Flags().StringVarP(&o.format, "output", "o", "text", "output format: text or json")
	return o
}

func (o *outputFlag) check() error {
	if o.format != "text" && o.format != "json" {
		return usagef("--output must be text or json, not %q", o.format)
	}
	return nil
}

func (o *outputFlag) json() bool { return o.format == "json" }

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeJSONLine writes v as one line of JSON, for streams of objects.
func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
