package local

import (
	"context"
	"fmt"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/steps"
)

// Compact runs the compaction turn in the background: the compaction
// prompt, sent to the agent's native session as a turn of the step after
// which compact_when fired, its output appended to that step's
// transcript. Its end comes to finished as a Compacted event with the
// agent's working set, or the reason there is none; Compact returns nil
// when the turn could not start.
func (r *StepRunner) Compact(ctx context.Context, a engine.Compact, s engine.State, finished func(engine.Compacted)) *StepRun {
	phase := &r.Plan.Phases[a.Phase]
	step := &phase.Steps[a.Step]
	start := engine.StartStep{Phase: a.Phase, Step: a.Step, Attempt: a.Attempt, SessionKey: a.SessionKey, SessionID: a.SessionID}
	finish := func(ev engine.Compacted) {
		ev.At, ev.Execution = r.Clock.Now(), a.Execution
		finished(ev)
	}
	r.say("compaction: compact_when is true (%s): asking the %s session %s for its working set, then a fresh session goes on",
		phase.CompactWhen.Value.Source, step.Agent.Value.Kind, a.SessionID)
	t, err := r.prepareTurn(start, s, step, r.Plan.CompactPrompt.Value)
	if err != nil {
		go finish(engine.Compacted{Fallback: fmt.Sprintf("the compaction turn could not start (%v): the working set is its markers and the phase summaries", err)})
		return nil
	}
	transcript, err := r.Session.Transcript(phase.Name, a.Attempt, step.Name)
	if err != nil {
		go finish(engine.Compacted{Fallback: fmt.Sprintf("the compaction turn's transcript could not be opened (%v)", err)})
		return nil
	}
	fmt.Fprintf(transcript, "pipeline: compaction turn (compact_when %s) in native session %s\n", phase.CompactWhen.Value.Source, a.SessionID)
	if err := r.Session.RecordPrompt(phase.Name, a.Attempt, step.Name, t.prompt); err != nil {
		r.say("pipeline: keeping the prompt sent: %v", err)
	}
	stepCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	current := &StepRun{grace: r.Grace, cancel: cancel}
	run := steps.Step{Command: t.command, Parser: t.parser, PromptTokens: t.promptTokens, CountTokens: t.parser == nil,
		Transcript: transcript, Timeout: time.Duration(step.Timeout.Value), IdleTimeout: time.Duration(step.IdleTimeout.Value), Grace: r.Grace,
		Redact: func() steps.RedactStream { return r.Session.Redactor().NewStream() }, Markers: r.markerSink(phase.Name)}
	go func() {
		defer cancel()
		res, err := r.Executor.Execute(stepCtx, run, &compactObserver{r: r, current: current})
		if err == nil {
			r.Session.StepProcess(0)
		}
		if err := transcript.Close(); err != nil {
			r.say("pipeline: closing the transcript: %v", err)
		}
		ev := engine.Compacted{Tokens: res.Tokens, CostUSD: res.CostUSD}
		switch {
		case err != nil:
			ev.Fallback = fmt.Sprintf("the compaction turn could not start (%v): the working set is its markers and the phase summaries", err)
		case res.Stopped || res.TimedOut:
			ev.Fallback = "the compaction turn was stopped before it answered: the working set is its markers and the phase summaries"
		case res.ExitCode != 0:
			ev.Fallback = fmt.Sprintf("the compaction turn failed (exit %d%s): the working set is its markers and the phase summaries", res.ExitCode, errorSuffix(res.Error))
		default:
			if answer, ok := engine.ParseCompactionAnswer(res.Output); ok {
				ev.Answer = &answer
			} else {
				ev.Fallback = "the agent's answer held no JSON object of the working set's shape: the working set is its markers and the phase summaries"
			}
		}
		if ev.Answer != nil {
			r.say("compaction: the agent wrote its working set (%d facts, %d decisions, %d open tasks)",
				len(ev.Answer.PinnedFacts), len(ev.Answer.Decisions), len(ev.Answer.OpenTasks))
		} else {
			r.say("compaction: %s", ev.Fallback)
		}
		finish(ev)
	}()
	return current
}

func errorSuffix(message string) string {
	if message == "" {
		return ""
	}
	return ": " + message
}

// compactObserver follows a compaction turn: it can be stopped, and its
// text is shown; no pause_when trigger reads it (it is not a step of the
// phase, and a [CHECKPOINT] in the answer must not pause the session).
type compactObserver struct {
	r       *StepRunner
	current *StepRun
}

func (o *compactObserver) Started(running *steps.Running) {
	o.current.mu.Lock()
	o.current.running = running
	o.current.mu.Unlock()
	o.r.Session.StepProcess(running.Pid())
}

func (o *compactObserver) Output(text []byte) { o.r.View.Output(text) }

func (o *compactObserver) Observe(*steps.Live) {}

func (o *compactObserver) Warn(message string) { o.r.say("pipeline: %s", message) }
