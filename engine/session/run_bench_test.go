package session_test

import (
	"context"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
)

const oneTrueStep = "version: 1\nphases: [{name: one, steps: [{run: 'true'}]}]\n"

// benchProject is a store for a run of one true step, with the sessions
// of earlier runs in it as a project's would have.
func benchProject(b *testing.B) (*store.Store, *spec.Plan, string) {
	b.Helper()
	p := newProject(b, oneTrueStep)
	st, plan, file := p.st, p.plan, p.file
	for range 30 {
		runOnce(b, st, plan, file)
	}
	return st, plan, file
}

var runRequest = session.Options{Create: session.IfNone, Statuses: []engine.Status{engine.StatusPaused, engine.StatusRunning}}

// runOnce is what pipeline run of one true step asks of the session: the
// open, the first event, the step's end, the close.
func runOnce(b *testing.B, st *store.Store, plan *spec.Plan, file string) {
	o := runRequest
	o.File, o.Plan = file, plan
	s, err := session.Open(context.Background(), st, o)
	if err != nil {
		b.Fatal(err)
	}
	if !s.Created {
		b.Fatal("a run after a completed one made no new session")
	}
	now := time.Now()
	if _, err := s.Apply(s.Start(now)); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Apply(engine.StepFinished{At: now, Result: engine.StepResult{Elapsed: time.Millisecond}}); err != nil {
		b.Fatal(err)
	}
	if s.State().Status != engine.StatusCompleted {
		b.Fatalf("the run ended %s", s.State().Status)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRunOfOneTrueStep is the store and session side of pipeline
// run of one true step, fsyncs included (the disk of the temp folder).
func BenchmarkRunOfOneTrueStep(b *testing.B) {
	st, plan, file := benchProject(b)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		runOnce(b, st, plan, file)
	}
}

// BenchmarkOpenNewSession is session.Open of a run that makes a new
// session, alone.
func BenchmarkOpenNewSession(b *testing.B) {
	st, plan, file := benchProject(b)
	o := runRequest
	o.File, o.Plan = file, plan
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s, err := session.Open(context.Background(), st, o)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		s.Apply(engine.Completed{At: time.Now()})
		s.Close()
		b.StartTimer()
	}
}
