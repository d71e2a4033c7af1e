package render

import "fmt"

import "github.com/pipeline-dev/pipeline/app"

import "io"

// Changes writes the files changed since a phase began and the spec's own
// diff (what a pause at a terminal shows on d).
func Changes(w io.Writer, r *app.ChangesResponse) {
	fmt.Fprintf(w, "files changed since phase %s began (checkpoint %.12s): %d\n", r.Phase, r.Since, len(r.Files))
	for _, f := range r.Files {
		fmt.Fprintf(w, "  %s\n", f)
	}
	switch {
	case r.Spec == "":
	case r.SpecDiff == "":
		fmt.Fprintf(w, "the spec %s is unchanged\n", r.Spec)
	default:
		io.WriteString(w, r.SpecDiff)
	}
}

// Tail writes the end of each transcript, as logs renders it, under a
// header that names it, as tail(1) does.
func Tail(w io.Writer, r *app.TailResponse) {
	for _, t := range r.Transcripts {
		fmt.Fprintf(w, "==> %s <==\n%s", t.Transcript, t.Text)
	}
}
