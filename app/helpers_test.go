package app_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/clock"
)

// project is a pipeline folder whose sessions the tests run in process,
// with the session service and the local driver, as a driver would.
type project struct {
	t    *testing.T
	dir  string
	file string
}

func newProject(t *testing.T, yamlText string) *project {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "phases.yaml")
	if err := os.WriteFile(file, []byte(yamlText), 0o600); err != nil {
		t.Fatal(err)
	}
	return &project{t: t, dir: dir, file: file}
}

// pipeline names the project's pipeline as the operations take it.
func (p *project) pipeline() app.Pipeline { return app.Pipeline{File: p.file} }

// run runs a new session of the pipeline to its end (or its pause) and
// gives its id and how it ended.
func (p *project) run() (string, engine.State) {
	p.t.Helper()
	plan, err := spec.Load(p.file, "")
	if err != nil {
		p.t.Fatal(err)
	}
	st, err := p.pipeline().Open()
	if err != nil {
		p.t.Fatal(err)
	}
	defer st.Close()
	sess, err := session.Open(context.Background(), st, session.Options{File: p.file, Plan: plan, Create: session.Always})
	if err != nil {
		p.t.Fatal(err)
	}
	driver := &local.Driver{View: local.Discard, Clock: clock.Real{}, Grace: time.Second}
	s, err := driver.Run(context.Background(), sess, sess.Start(time.Now()))
	if closeErr := sess.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		p.t.Fatal(err)
	}
	return sess.ID(), s
}
