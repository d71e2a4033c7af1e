package app_test

import (
	"context"
	"os"
	"os/exec"
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

// newGitProject is a project in a git work tree of its own, its
// phases.yaml committed: its sessions take checkpoints.
func newGitProject(t *testing.T, yamlText string) *project {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed: ", err)
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", home)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	p := newProject(t, yamlText)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.name", "t"}, {"config", "user.email", "t@example.com"},
		{"config", "commit.gpgsign", "false"}, {"add", "phases.yaml"}, {"commit", "-qm", "start"}} {
		git := exec.Command("git", args...)
		git.Dir = p.dir
		if out, err := git.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return p
}

// pipeline names the project's pipeline as the operations take it.
func (p *project) pipeline() app.Pipeline { return app.Pipeline{File: p.file} }

// run runs a new session of the pipeline to its end (or its pause) and
// gives its id and how it ended.
func (p *project) run() (string, engine.State) {
	p.t.Helper()
	sess := p.opened()
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

// started opens a new session of the pipeline in process, as a runner
// would, and records its start: the session holds its lock and is
// running until the test ends or closes it.
func (p *project) started() *session.Session {
	p.t.Helper()
	sess := p.opened()
	if _, err := sess.Apply(sess.Start(time.Now())); err != nil {
		p.t.Fatal(err)
	}
	return sess
}

// opened opens a new session of the pipeline in process, as a runner
// would; it and its store are closed when the test ends, if not before.
func (p *project) opened() *session.Session {
	p.t.Helper()
	plan, err := spec.Load(p.file, "")
	if err != nil {
		p.t.Fatal(err)
	}
	st, err := p.pipeline().Open()
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { st.Close() })
	sess, err := session.Open(context.Background(), st, session.Options{File: p.file, Plan: plan, Create: session.Always})
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { sess.Close() })
	return sess
}
