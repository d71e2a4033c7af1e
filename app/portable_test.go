package app_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/app"
)

// Export and Import, in process: a session written to a stream is read
// into another store, saying so through Say; read again, it is the same
// and nothing is written.
func TestExportThenImportElsewhere(t *testing.T) {
	p := newProject(t, oneStep)
	id, _ := p.run()
	ctx := context.Background()
	var archive bytes.Buffer
	r, err := app.Export(ctx, app.ExportRequest{Pipeline: p.pipeline(), To: &archive})
	if err != nil {
		t.Fatal(err)
	}
	if r.Session != id || r.Status != "completed" || r.Files == 0 || r.Bytes == 0 || r.Output != "" || archive.Len() == 0 {
		t.Fatalf("export: %+v (%d bytes written)", r, archive.Len())
	}

	other := newProject(t, oneStep)
	var said []string
	req := app.ImportRequest{Pipeline: other.pipeline(), File: "-", From: bytes.NewReader(archive.Bytes())}
	req.Say = func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) }
	got, err := app.Import(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != id || got.Session != id || got.Status != "completed" || got.Unchanged || got.Replaced {
		t.Errorf("import: %+v", got)
	}
	if len(said) != 1 || !strings.HasPrefix(said[0], "imported session "+id+" (completed, phase a) from standard input into ") {
		t.Errorf("import said %q", said)
	}

	// Again, from a file: the same session, left as it is.
	file := filepath.Join(t.TempDir(), "session.tar.gz")
	if r, err := app.Export(ctx, app.ExportRequest{Pipeline: p.pipeline(), Session: id, Output: file}); err != nil || r.Output != file {
		t.Fatalf("export to a file: %+v, %v", r, err)
	}
	said = nil
	req.File, req.From = file, nil
	if got, err = app.Import(ctx, req); err != nil || !got.Unchanged {
		t.Errorf("import of the same session: %+v, %v; want unchanged", got, err)
	}
	if len(said) != 1 || !strings.Contains(said[0], "from "+file+" is already in") {
		t.Errorf("import said %q", said)
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatal(err)
	}
}
