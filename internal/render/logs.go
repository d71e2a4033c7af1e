package render

import (
	"fmt"
	"io"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/internal/transcript"
)

// LogPiece is a piece of a transcript or a prompt, as -o json prints it.
type LogPiece struct {
	Transcript string            `json:"transcript,omitempty"`
	Prompt     string            `json:"prompt,omitempty"`
	Text       string            `json:"text"`
	Items      []transcript.Item `json:"items,omitempty"`
}

// LogPrinter prints the pieces of transcripts read: each file headed by
// its name; as JSON, one object per piece read: {"transcript":
// "phase/1-step.log", "text": ..., "items": [...]} (no items with --raw),
// or {"prompt": "phase/1-step.prompt", "text": ...}.
func LogPrinter(w io.Writer, asJSON bool) func(app.LogChunk) error {
	return func(c app.LogChunk) error {
		if asJSON {
			piece := LogPiece{Transcript: c.File, Text: string(c.Text), Items: c.Items}
			if c.Prompt {
				piece.Prompt, piece.Transcript = c.File, ""
			}
			return JSONLine(w, piece)
		}
		if c.First {
			fmt.Fprintf(w, "==> %s <==\n", c.File)
		}
		_, err := w.Write(c.Text)
		return err
	}
}
