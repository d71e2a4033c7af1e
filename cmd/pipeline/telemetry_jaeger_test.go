//go:build jaeger

package main

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/internal/jaegertest"
)

// A two-phase run that pauses at a checkpoint and is resumed, exporting
// to a real Jaeger: each invocation is a trace with spans for the
// session, each phase, each attempt and each step, the steps' token and
// exit-code attributes on them; the resume's session span links to the
// first run's; the metrics reach the collector too.
func TestTelemetryJaegerRunPausedAndResumed(t *testing.T) {
	jaeger := jaegertest.Start(t)
	dir, env := gitRepo(t)
	write(t, dir, "phases.yaml", `version: 1
name: traced
agent:
  kind: command
  model: scripted-1
  command: [sh, -c, 'cat > /dev/null; if [ ! -f .designed ]; then touch .designed; echo "drafted the design"; echo "[CHECKPOINT] review the design"; else echo "carried on with the work"; fi']
phases:
  - name: design
  - name: build
    steps:
      - agent: {}
      - name: test
        run: echo tests pass
`)
	gitOut(t, dir, env, "add", "-A")
	gitOut(t, dir, env, "commit", "-qm", "start")
	var nonce [4]byte
	_, _ = rand.Read(nonce[:])
	service := "pipeline-test-" + hex.EncodeToString(nonce[:])
	env = append(env, "OTEL_EXPORTER_OTLP_ENDPOINT="+jaeger.OTLPEndpoint(), "OTEL_SERVICE_NAME="+service)

	if r := pipelineEnv(t, dir, env, "run", "--no-prompt"); r.code != 3 || strings.Contains(r.stderr, "telemetry") {
		t.Fatalf("run: want a pause (exit 3) with no telemetry warning, got %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := pipelineEnv(t, dir, env, "resume"); r.code != 0 || strings.Contains(r.stderr, "telemetry") {
		t.Fatalf("resume: want exit 0 with no telemetry warning, got %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	traces := jaeger.AwaitTraces(t, service, func(traces []jaegertest.Trace) bool {
		return len(traces) == 2 && rootOf(traces[0]) != nil && rootOf(traces[1]) != nil
	})
	run, resume := traces[0], traces[1]
	if rootOf(run).Tag("pipeline.invocation") != "run" {
		run, resume = resume, run
	}
	first, second := rootOf(run), rootOf(resume)
	if first.OperationName != "session traced" || first.Tag("pipeline.invocation") != "run" ||
		first.Tag("pipeline.pause.reason") != "checkpoint" {
		t.Errorf("the run's session span: %s %v", first.OperationName, first.Tags)
	}
	if second.Tag("pipeline.invocation") != "resume" || second.Tag("pipeline.status") != "completed" {
		t.Errorf("the resume's session span: %s %v", second.OperationName, second.Tags)
	}
	linked := false
	for _, ref := range second.References {
		linked = linked || (ref.RefType == "FOLLOWS_FROM" && ref.TraceID == first.TraceID && ref.SpanID == first.SpanID)
	}
	if !linked {
		t.Errorf("the resume's session span does not link to the run's (%s/%s): %+v", first.TraceID, first.SpanID, second.References)
	}
	if first.Tag("pipeline.session.id") == nil || first.Tag("pipeline.session.id") != second.Tag("pipeline.session.id") {
		t.Errorf("session ids: %v and %v", first.Tag("pipeline.session.id"), second.Tag("pipeline.session.id"))
	}

	want := map[*jaegertest.Trace][]string{
		&run:    {"phase design", "attempt 1", "step agent"},
		&resume: {"phase design", "phase build", "attempt 1", "step agent", "step test"},
	}
	for tr, names := range want {
		for _, name := range names {
			if len(spansNamed(*tr, name)) == 0 {
				t.Errorf("trace %s has no span %q: %v", tr.TraceID, name, operationNames(*tr))
			}
		}
		for _, step := range append(spansNamed(*tr, "step agent"), spansNamed(*tr, "step test")...) {
			// The run's agent step may be stopped by the checkpoint
			// trigger before it exits on its own (-1, outcome stopped).
			code, _ := step.Tag("process.exit.code").(float64)
			stopped := tr == &run && code == -1 && step.Tag("pipeline.step.outcome") == "stopped"
			if step.Tag("process.exit.code") == nil || (code != 0 && !stopped) {
				t.Errorf("step %s: process.exit.code %v, outcome %v", step.OperationName, step.Tag("process.exit.code"), step.Tag("pipeline.step.outcome"))
			}
			if parent := parentOf(*tr, step); parent == nil || parent.OperationName != "attempt 1" {
				t.Errorf("step %s is not under its attempt: %+v", step.OperationName, step.References)
			}
		}
		for _, agent := range spansNamed(*tr, "step agent") {
			in, _ := agent.Tag("gen_ai.usage.input_tokens").(float64)
			out, _ := agent.Tag("gen_ai.usage.output_tokens").(float64)
			if in <= 0 || out <= 0 || agent.Tag("gen_ai.request.model") != "scripted-1" || agent.Tag("gen_ai.system") != "command" {
				t.Errorf("agent step of %s: %v", tr.TraceID, agent.Tags)
			}
		}
	}
	// The run's checkpoint trigger fired on its step.
	if agent := spansNamed(run, "step agent"); len(agent) != 1 || agent[0].Tag("pipeline.trigger") != "checkpoint" {
		t.Errorf("the run's agent step: %v", agent)
	}

	screenshotTraces(t, run, resume)

	// The metrics went to the collector too: its debug exporter prints
	// their names.
	deadlineOutput(t, jaeger, "pipeline.steps", "pipeline.tokens", "pipeline.step.duration", "pipeline.pauses")
}

func rootOf(tr jaegertest.Trace) *jaegertest.Span {
	for i, s := range tr.Spans {
		if strings.HasPrefix(s.OperationName, "session ") {
			return &tr.Spans[i]
		}
	}
	return nil
}

func spansNamed(tr jaegertest.Trace, name string) []jaegertest.Span {
	var out []jaegertest.Span
	for _, s := range tr.Spans {
		if s.OperationName == name {
			out = append(out, s)
		}
	}
	return out
}

func operationNames(tr jaegertest.Trace) []string {
	var out []string
	for _, s := range tr.Spans {
		out = append(out, s.OperationName)
	}
	return out
}

func parentOf(tr jaegertest.Trace, s jaegertest.Span) *jaegertest.Span {
	for _, ref := range s.References {
		if ref.RefType != "CHILD_OF" {
			continue
		}
		for i := range tr.Spans {
			if tr.Spans[i].SpanID == ref.SpanID {
				return &tr.Spans[i]
			}
		}
	}
	return nil
}

// deadlineOutput waits until Jaeger's output names every metric.
func deadlineOutput(t *testing.T, jaeger *jaegertest.Jaeger, names ...string) {
	t.Helper()
	jaeger.AwaitOutput(t, func(out string) bool {
		for _, n := range names {
			if !strings.Contains(out, n) {
				return false
			}
		}
		return true
	})
}
