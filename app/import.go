package app

import (
	"context"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// ImportRequest names an archive pipeline export wrote and the store to
// read it into (the pipeline's, made if need be).
type ImportRequest struct {
	Pipeline
	// File is the archive; "-" reads From (the command line's standard
	// input).
	File string    `json:"file"`
	From io.Reader `json:"-"`
	// MaxSize bounds the bytes of the session's files together; <= 0:
	// store.DefaultImportMaxSize.
	MaxSize int64 `json:"max_size,omitempty"`
	// Replace replaces another version of the session in the store (never
	// while it runs); the same session is left as it is.
	Replace bool `json:"replace,omitempty"`
}

// ImportResponse is `pipeline import -o json`: the session's line of the
// index, its pipeline and spec in this store, and whether the store had
// it already.
type ImportResponse struct {
	store.Summary
	File      string `json:"file"`
	Spec      string `json:"spec,omitempty"`
	Unchanged bool   `json:"unchanged,omitempty"`
	Replaced  bool   `json:"replaced,omitempty"`
	// Session is the id of the session imported, as its files name it.
	Session string `json:"-"`
}

// Import reads an exported session into the store, the archive checked
// before anything is written, and says what it did through Say: a
// session whose pipeline is not where its paths say is imported with a
// warning.
func Import(_ context.Context, req ImportRequest) (*ImportResponse, error) {
	in, name := req.From, "standard input"
	if req.File == "-" && in == nil {
		return nil, Usagef("import -: there is no standard input to read the session from")
	}
	if req.File != "-" {
		f, err := os.Open(req.File)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		in, name = f, req.File
	}
	st, err := req.Open()
	if err != nil {
		return nil, err
	}
	defer st.Close()
	got, err := session.Import(st, in, session.ImportOptions{MaxSize: req.MaxSize, Replace: req.Replace})
	if err != nil {
		return nil, err
	}
	req.sayImported(st, got, name)
	out := redacted(environmentRedactor(), ImportResponse{Summary: got.Manifest.Summary, File: got.Meta.File, Spec: got.Meta.Spec,
		Unchanged: got.Unchanged, Replaced: got.Replaced, Session: got.Meta.ID})
	return &out, nil
}

// sayImported says what the import of the archive name did.
func (req ImportRequest) sayImported(st *store.Store, got store.Imported, name string) {
	if req.Say == nil {
		return
	}
	sum := got.Manifest.Summary
	what := sum.Status
	if sum.PauseReason != "" {
		what += ": " + sum.PauseReason
	}
	if sum.Phase != "" {
		what += ", phase " + sum.Phase
	}
	switch {
	case got.Unchanged:
		req.Say("session %s (%s) from %s is already in %s, the same: nothing to import", got.Meta.ID, what, name, st.Root)
	case got.Replaced:
		req.Say("replaced session %s with the one from %s (%s) in %s", got.Meta.ID, name, what, st.Root)
	default:
		req.Say("imported session %s (%s) from %s into %s", got.Meta.ID, what, name, st.Root)
	}
	// Its files are where they were in the project it was exported from:
	// imported elsewhere, there is nothing to resume it with.
	if _, err := os.Stat(got.Meta.File); err != nil {
		req.Say("warning: its pipeline %s is not there (%s relative to %s): import it into the store of the project's checkout (run it there, or pass --file or --state-dir)",
			got.Meta.File, st.Rel(got.Meta.File), st.Base())
	}
}

// sizeUnits are the units ParseSize reads, longest first.
var sizeUnits = []struct {
	suffix string
	size   int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10},
	{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}}

// ParseSize reads a size as import's --max-size takes it: bytes, or a
// number with KiB, MiB or GiB (K, M, G and KB, MB, GB read the same, in
// powers of 1024).
func ParseSize(text string) (int64, error) {
	t, unit := strings.TrimSpace(text), int64(1)
	for _, u := range sizeUnits {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, unit = strings.TrimSpace(rest), u.size
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/unit {
		return 0, Usagef("--max-size %q is not a size: write bytes, or a number with KiB, MiB or GiB (512MiB, 8GiB)", text)
	}
	return n * unit, nil
}
