//go:build temporal

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/engine/temporal"
	"github.com/pipeline-dev/pipeline/internal/cireport"
	"github.com/pipeline-dev/pipeline/internal/termsafe"
	"github.com/pipeline-dev/pipeline/internal/termview"
)

// The session commands on a Temporal fleet (--backend temporal): the
// session is a workflow whose id is the session's id; its state lives in
// the workflow, its steps run on pipeline worker processes. See README,
// "Beyond one machine: Temporal".

// withTemporal: this build has the Temporal backend.
const withTemporal = true

// A pipeline without the Temporal backend that handed its command line
// to this one marked the environment (handedOffEnv); the steps and
// hooks this process runs must not inherit the mark, or a pipeline
// command among them would take itself for a hand-off gone round.
func init() { os.Unsetenv(handedOffEnv) }

// fleetPoll is how soon a command following a session asks it again
// where it stands after a change; while nothing changes the wait grows
// by half each time, up to fleetPollMax. Every question is a query a
// worker answers: a hundred runs asking four times a second kept two
// workers busy answering (make bench's fleet figures: 2.2 pipelines a
// second before, see README). The workflow's end is awaited apart, and
// wakes the loop at once.
const (
	fleetPoll    = 250 * time.Millisecond
	fleetPollMax = time.Second
)

// fleetPlan reads the pipeline as it is sent to workers: phases.yaml and
// its spec with absolute paths, and the key of (pipeline, spec).
func fleetPlan(file, specPath string) (temporal.PlanSource, string, error) {
	file, specPath, err := absPaths(file, specPath)
	if err != nil {
		return temporal.PlanSource{}, "", err
	}
	src, err := temporal.ReadPlanSource(file, specPath)
	if err != nil {
		return temporal.PlanSource{}, "", err
	}
	return src, temporal.Key(src.File, src.Spec), nil
}

// fleetLatest finds the newest session of key whose status is one of
// statuses (any when none): the open workflows first (running and
// paused sessions), then the closed ones.
func fleetLatest(ctx context.Context, c *temporal.Client, key string, statuses ...engine.Status) (string, engine.StatusReport, error) {
	list, err := c.List(ctx, "")
	if err != nil {
		return "", engine.StatusReport{}, err
	}
	for _, s := range list {
		if s.Key != key {
			continue
		}
		r, err := c.Status(ctx, s.ID)
		if err != nil {
			return "", r, err
		}
		if len(statuses) == 0 || slices.Contains(statuses, engine.Status(r.Status)) {
			return s.ID, r, nil
		}
	}
	return "", engine.StatusReport{}, nil
}

// fleetSession names the session a command acts on: id, or the newest of
// the pipeline and spec of flags with one of statuses.
func fleetSession(ctx context.Context, c *temporal.Client, fl *fleet, flags *storeFlags, id string, statuses ...engine.Status) (string, engine.StatusReport, error) {
	if id != "" {
		r, err := c.Status(ctx, id)
		if errors.Is(err, temporal.ErrNoSession) {
			return "", r, usagef("%v; pipeline sessions%s lists them", err, fl.flagsLine())
		}
		return id, r, err
	}
	_, key, err := fleetPlan(flags.file, flags.spec)
	if err != nil {
		return "", engine.StatusReport{}, err
	}
	id, r, err := fleetLatest(ctx, c, key, statuses...)
	if err != nil {
		return "", r, err
	}
	if id == "" {
		what := "no session"
		if len(statuses) > 0 {
			what = "no " + string(statuses[0])
			for _, s := range statuses[1:] {
				what += " or " + string(s)
			}
			what += " session"
		}
		return "", r, usagef("%s of %s on the Temporal fleet (%s); start one with: pipeline run%s%s", what, flags.file, fl.where(), fileArgOf(flags), fl.flagsLine())
	}
	return id, r, nil
}

// dial connects to the fleet's server.
func (fl *fleet) dial(cmd *cobra.Command) (*temporal.Client, error) {
	ctx, cancel := context.WithTimeout(cmd.Context(), 20*time.Second)
	defer cancel()
	return temporal.NewClient(ctx, fl.target)
}

// flagsLine is how the fleet is named on a command line a message
// suggests: the flags that were not the defaults.
func (fl *fleet) flagsLine() string {
	line := " --backend temporal"
	if fl.target.Address != temporal.DefaultAddress {
		line += " --temporal " + shellQuote(fl.target.Address)
	}
	if fl.target.Namespace != temporal.DefaultNamespace {
		line += " --namespace " + shellQuote(fl.target.Namespace)
	}
	if fl.target.TaskQueue != temporal.DefaultTaskQueue {
		line += " --task-queue " + shellQuote(fl.target.TaskQueue)
	}
	return line
}

// where names the fleet in messages.
func (fl *fleet) where() string {
	return fmt.Sprintf("namespace %s, task queue %s at %s", fl.target.Namespace, fl.target.TaskQueue, fl.target.Address)
}

// absPaths makes the pipeline's and the spec's paths absolute: they
// travel to workers, which run steps in the folder of phases.yaml.
func absPaths(file, specPath string) (string, string, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", "", err
	}
	if specPath != "" {
		if specPath, err = filepath.Abs(specPath); err != nil {
			return "", "", err
		}
	}
	return abs, specPath, nil
}

func fileArgOf(flags *storeFlags) string {
	if flags.file != "phases.yaml" {
		return " " + shellQuote(flags.file)
	}
	return ""
}

// fleetRun starts the session's workflow, or resumes the paused session
// of the pipeline and spec, and follows it until it stops.
func fleetRun(cmd *cobra.Command, fl *fleet, o fleetRunOptions) error {
	src, key, err := fleetPlan(o.flags.file, o.flags.spec)
	if err != nil {
		return err
	}
	c, err := fl.dial(cmd)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx := cmd.Context()
	live, err := c.Live(ctx, key)
	if err != nil {
		return err
	}
	for _, s := range live {
		r, err := c.Status(ctx, s.ID)
		if err != nil {
			return err
		}
		switch {
		case r.Status == string(engine.StatusRunning):
			return &session.RefusedError{Message: fmt.Sprintf("session %s of %s is running on the Temporal fleet (%s); pause it with: pipeline pause%s %s",
				s.ID, o.flags.file, fl.where(), fl.flagsLine(), s.ID)}
		case r.Status == string(engine.StatusPaused) && !o.fresh && o.from == "" && o.only == "":
			how := "paused"
			if r.PauseReason != "" {
				how += ": " + r.PauseReason
			}
			printError(cmd.ErrOrStderr(), fmt.Sprintf("resuming session %s (%s); use run --new for a fresh session\n", s.ID, how))
			if err := fleetSignalResume(ctx, c, s.ID, "", "", &src, false); err != nil {
				return err
			}
			return followFleet(cmd, c, fl, s.ID, temporal.Interventions(r), o.json, o.quiet, o.failOnPause)
		}
	}
	now := time.Now()
	id := session.NewSessionID(now)
	plan, err := src.Load()
	if err != nil {
		return err
	}
	in := temporal.SessionInput{SessionID: id, Plan: src,
		Events:  []temporal.EventRecord{temporal.MustRecord(engine.Started{At: now.UTC(), Plan: plan.Digest, From: o.from + o.only, Only: o.only != ""})},
		Options: temporal.Options{HeartbeatTimeout: fl.heartbeat}}
	if err := c.Start(ctx, in, temporal.Memo{Pipeline: plan.Name.Value, File: src.File, Spec: src.Spec, Key: key}); err != nil {
		return fmt.Errorf("session %s cannot start on the Temporal fleet (%s): %w", id, fl.where(), err)
	}
	printError(cmd.ErrOrStderr(), fmt.Sprintf("session %s started on the Temporal fleet (%s)\n", id, fl.where()))
	return followFleet(cmd, c, fl, id, -1, o.json, o.quiet, o.failOnPause)
}

// fleetSignalResume signals a paused session to resume; with src, when
// its plan differs from the session's (always: whenever it is given),
// the session goes on with it.
func fleetSignalResume(ctx context.Context, c *temporal.Client, id, notes, phase string, src *temporal.PlanSource, always bool) error {
	sig := temporal.ResumeSignal{Notes: notes, Phase: phase}
	if src != nil {
		v, err := c.C.QueryWorkflow(ctx, id, "", temporal.QueryState)
		if err != nil {
			return err
		}
		var s engine.State
		if err := v.Get(&s); err != nil {
			return err
		}
		if always || s.PlanDigest != src.Digest {
			plan, err := src.Load()
			if err != nil {
				return err
			}
			if err := session.CheckPlan(plan, s, id); err != nil {
				return &session.RefusedError{Message: err.Error()}
			}
			sig.Plan = src
		}
	}
	return c.Resume(ctx, id, sig)
}

// followFleet shows the session's progress (its phase, step and attempt
// as they change) until it stops, and ends as run does: 0 completed, 1
// failed, 3 paused. since is the session's human interventions when it
// was resumed (-1 for a new session): a stop counts once the resume is
// taken. Ctrl+C (SIGINT, SIGTERM) signals pause and waits for it; a
// second one stops waiting.
func followFleet(cmd *cobra.Command, c *temporal.Client, fl *fleet, id string, since int, asJSON, quiet, failOnPause bool) error {
	out := cmd.OutOrStdout()
	if asJSON {
		out = cmd.ErrOrStderr()
	}
	interrupts := make(chan os.Signal, 2)
	signal.Notify(interrupts, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(interrupts)
	ctx := context.WithoutCancel(cmd.Context())
	wait := fleetPoll
	timer := time.NewTimer(wait)
	defer timer.Stop()
	// The workflow's close, long-polled from the server (no worker asked).
	closed := make(chan struct{})
	closeCtx, stopClose := context.WithCancel(ctx)
	defer stopClose()
	go func() {
		if err := c.C.GetWorkflow(closeCtx, id, "").Get(closeCtx, nil); closeCtx.Err() == nil {
			_ = err // failed or completed: the status says which
			close(closed)
		}
	}()
	text := termview.NewScreenText()
	var last string
	var failing time.Time
	pausing := false
	for {
		r, err := c.Status(ctx, id)
		switch {
		case err != nil:
			// A worker may be starting, or busy: the query is asked
			// again; after a while, the error is shown.
			if failing.IsZero() {
				failing = time.Now()
			} else if time.Since(failing) > 10*time.Second {
				printError(cmd.ErrOrStderr(), fmt.Sprintf("pipeline: %v (still trying; Ctrl+C pauses the session)\n", err))
				failing = time.Now()
			}
		case temporal.Stopped(r) && temporal.Interventions(r) > since:
			return fleetEnded(cmd, fl, r, out, asJSON, quiet, failOnPause)
		default:
			failing = time.Time{}
			line := fmt.Sprintf("phase %s, step %s, attempt %d: %s", r.Phase, orDash(r.Step), r.Attempt, r.Status)
			if line != last {
				if !quiet {
					printError(out, time.Now().Format("15:04:05")+" "+text.Line(line)+"\n")
				}
				last, wait = line, fleetPoll
			} else {
				wait = min(wait*3/2, fleetPollMax)
			}
		}
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-closed:
			closed = nil // asked once more now, then never ready again
		case sig := <-interrupts:
			if pausing {
				fmt.Fprintf(cmd.ErrOrStderr(), "pipeline: %s again: no longer waiting; session %s is pausing on the fleet (pipeline status%s %s)\n", sig, id, fl.flagsLine(), id)
				return &exitStatus{code: exitPaused, printed: true}
			}
			pausing = true
			fmt.Fprintf(cmd.ErrOrStderr(), "pipeline: %s: pausing session %s (its running step is stopped on its worker; again to stop waiting)\n", sig, id)
			if err := c.Pause(ctx, id, "", engine.ReasonInterrupted); err != nil {
				return err
			}
		}
	}
}

// fleetEnded prints how the session stopped and exits as run does.
func fleetEnded(cmd *cobra.Command, fl *fleet, r engine.StatusReport, out io.Writer, asJSON, quiet, failOnPause bool) error {
	text := termview.NewScreenText()
	var line string
	switch r.Status {
	case string(engine.StatusPaused):
		line = "paused: " + r.PauseReason
		if r.PauseNote != "" {
			line += " — " + r.PauseNote
		}
	case string(engine.StatusCompleted):
		line = r.CompletedLine()
	default:
		line = "failed: " + r.FailReason
	}
	printError(out, time.Now().Format("15:04:05")+" "+text.Line(line)+"\n")
	if asJSON {
		if err := writeJSON(cmd.OutOrStdout(), liveStatus{StatusReport: r}); err != nil {
			return err
		}
	}
	_ = quiet
	switch r.Status {
	case string(engine.StatusCompleted):
		return nil
	case string(engine.StatusPaused):
		fmt.Fprintf(cmd.ErrOrStderr(), "session %s is paused; continue it with: pipeline resume%s %s\n", r.ID, fl.flagsLine(), r.ID)
		if failOnPause {
			fmt.Fprintln(cmd.ErrOrStderr(), "exit 1: --fail-on-pause")
			return &exitStatus{code: exitFailed, printed: true}
		}
		return &exitStatus{code: exitPaused, printed: true}
	}
	return &exitStatus{code: exitFailed, printed: true}
}

// fleetResume resumes a paused session (signal), or a failed one (its
// workflow closed: a new run of it, from its last state), and follows it.
func fleetResume(cmd *cobra.Command, fl *fleet, flags *storeFlags, id, notes, phase string, asJSON, failOnPause bool) error {
	c, err := fl.dial(cmd)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx := cmd.Context()
	id, r, err := fleetSession(ctx, c, fl, flags, id, engine.StatusPaused, engine.StatusFailed)
	if err != nil {
		return err
	}
	// The pipeline of --file, when it is this session's: its edits go
	// with the resume.
	var src *temporal.PlanSource
	if s, _, err := fleetPlan(flags.file, flags.spec); err == nil && s.File == r.File {
		src = &s
	}
	switch r.Status {
	case string(engine.StatusPaused):
		if err := fleetSignalResume(ctx, c, id, notes, phase, src, false); err != nil {
			return err
		}
	case string(engine.StatusFailed):
		h, err := c.History(ctx, id)
		if err != nil {
			return err
		}
		plan := h.Plan
		if src != nil {
			plan = *src
		}
		if err := c.Restart(ctx, h, plan, notes, phase, time.Now()); err != nil {
			return err
		}
	default:
		return usagef("session %s is %s: there is nothing to resume", id, r.Status)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "resuming session %s\n", id)
	return followFleet(cmd, c, fl, id, temporal.Interventions(r), asJSON, false, failOnPause)
}

// fleetPause pauses a running session and waits for its step to stop;
// on a paused one, its notes are left for the resume.
func fleetPause(cmd *cobra.Command, fl *fleet, flags *storeFlags, id, notes string, wait time.Duration, asJSON bool) error {
	c, err := fl.dial(cmd)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx := cmd.Context()
	id, r, err := fleetSession(ctx, c, fl, flags, id, engine.StatusRunning, engine.StatusPaused)
	if err != nil {
		return err
	}
	say := func(what string) error {
		if asJSON {
			return writeJSON(cmd.OutOrStdout(), map[string]string{"session": id, "result": what})
		}
		_, err := fmt.Fprintf(cmd.OutOrStdout(), "session %s %s\n", id, what)
		return err
	}
	switch r.Status {
	case string(engine.StatusRunning):
	case string(engine.StatusPaused):
		if notes == "" {
			return say("already paused")
		}
		before := len(allNotes(r))
		if err := c.Pause(ctx, id, notes, ""); err != nil {
			return err
		}
		if err := awaitFleet(ctx, c, id, wait, func(r engine.StatusReport) bool { return len(allNotes(r)) > before }); err != nil {
			return err
		}
		return say("paused, notes added")
	default:
		return usagef("session %s is %s: there is nothing to pause", id, r.Status)
	}
	since := temporal.Interventions(r)
	if err := c.Pause(ctx, id, notes, ""); err != nil {
		return err
	}
	err = awaitFleet(ctx, c, id, wait, func(r engine.StatusReport) bool {
		return temporal.Stopped(r) && temporal.Interventions(r) > since
	})
	if err != nil {
		return err
	}
	return say("paused")
}

func allNotes(r engine.StatusReport) []string {
	var out []string
	for _, p := range r.Phases {
		out = append(out, p.Notes...)
	}
	return out
}

// awaitFleet asks the session where it stands until done says so, or
// wait has passed.
func awaitFleet(ctx context.Context, c *temporal.Client, id string, wait time.Duration, done func(engine.StatusReport) bool) error {
	deadline := time.Now().Add(wait)
	for {
		r, err := c.Status(ctx, id)
		if err == nil && done(r) {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return err
			}
			return fmt.Errorf("session %s is still %s after %s: its worker has not stopped the step yet (see pipeline status --backend temporal %s)", id, r.Status, wait, id)
		}
		time.Sleep(fleetPoll)
	}
}

// fleetStatus prints where a session stands, from its status query.
func fleetStatus(cmd *cobra.Command, fl *fleet, flags *storeFlags, id string, output *outputFlag, verbose, watch bool) error {
	c, err := fl.dial(cmd)
	if err != nil {
		return err
	}
	defer c.Close()
	id, _, err = fleetSession(cmd.Context(), c, fl, flags, id)
	if err != nil {
		return err
	}
	show := func(w io.Writer) (bool, error) {
		r, err := c.Status(cmd.Context(), id)
		if err != nil {
			return false, err
		}
		running := r.Status == string(engine.StatusRunning)
		switch output.format {
		case "json":
			if watch {
				return running, writeJSONLine(w, liveStatus{StatusReport: r})
			}
			return running, writeJSON(w, liveStatus{StatusReport: r})
		case "markdown":
			_, err := w.Write(cireport.Markdown(r, termview.NewScreenText().Line))
			return running, err
		}
		return running, printStatus(w, liveStatus{StatusReport: r}, verbose)
	}
	if !watch {
		_, err := show(cmd.OutOrStdout())
		return err
	}
	return watchStatus(cmd, show)
}

// fleetSessions lists the sessions' workflows of the task queue, each
// with where it stands.
func fleetSessions(cmd *cobra.Command, fl *fleet, active bool, status, specPath string) ([]sessionLine, int, error) {
	c, err := fl.dial(cmd)
	if err != nil {
		return nil, 0, err
	}
	defer c.Close()
	list, err := c.List(cmd.Context(), temporal.QueueQuery(fl.target.TaskQueue))
	if err != nil {
		return nil, 0, err
	}
	wantSpec := ""
	if specPath != "" {
		wantSpec, _ = filepath.Abs(specPath)
	}
	lines := make([]*sessionLine, len(list))
	var wg sync.WaitGroup
	limit := make(chan struct{}, 8)
	for i, s := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			limit <- struct{}{}
			defer func() { <-limit }()
			line := sessionLine{Summary: store.Summary{ID: s.ID, Key: s.Key, Pipeline: s.Pipeline, File: s.File, Spec: s.Spec,
				Status: s.Execution, Created: s.Started, Updated: s.Started}}
			if !s.Closed.IsZero() {
				line.Updated = s.Closed
			}
			if r, err := c.Status(cmd.Context(), s.ID); err == nil {
				line.Status, line.Phase, line.PauseReason, line.Tokens, line.CostUSD = r.Status, r.Phase, r.PauseReason, r.Tokens, r.CostUSD
			} else {
				line.Status = "unknown (" + s.Execution + ": " + err.Error() + ")"
			}
			lines[i] = &line
		}()
	}
	wg.Wait()
	out := []sessionLine{}
	for _, l := range lines {
		if active && l.Status != "running" && l.Status != "paused" {
			continue
		}
		if status != "" && l.Status != status {
			continue
		}
		if wantSpec != "" && l.Spec != wantSpec {
			continue
		}
		out = append(out, *l)
	}
	return out, len(list), nil
}

// fleetLogs prints the transcripts of a session's steps where this
// machine can read them (a shared folder, or a worker here), and names
// the workers and folders of the others.
func fleetLogs(cmd *cobra.Command, fl *fleet, flags *storeFlags, id, phase string, asJSON, prompts bool) error {
	c, err := fl.dial(cmd)
	if err != nil {
		return err
	}
	defer c.Close()
	id, _, err = fleetSession(cmd.Context(), c, fl, flags, id)
	if err != nil {
		return err
	}
	h, err := c.History(cmd.Context(), id)
	if err != nil {
		return err
	}
	plan, err := h.Plan.Load()
	if err != nil {
		return err
	}
	order := map[string]int{}
	for i, p := range plan.Phases {
		order[p.Name] = i
	}
	if phase != "" {
		if _, ok := order[phase]; !ok {
			return usagef("--phase %q is not a phase of %s (%s)%s", phase, plan.File, session.PhaseNames(plan), session.PhaseHint(plan, phase))
		}
	}
	dirs, workers := h.TranscriptDirs()
	if len(dirs) == 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "session %s: no step has ended yet; the transcripts of a running step are where its worker writes them\n", id)
		return nil
	}
	emit := logPrinter(termsafe.Output(cmd.OutOrStdout()), asJSON)
	for _, dir := range dirs {
		root := filepath.Join(dir, "transcripts")
		if info, err := os.Stat(root); err != nil || !info.IsDir() {
			printError(cmd.ErrOrStderr(), fmt.Sprintf("session %s: transcripts in %s on worker %s, not on this machine: run pipeline logs there, or give the workers a shared folder (pipeline worker --state-dir)\n",
				id, dir, joinWorkers(workers[dir])))
			continue
		}
		if err := app.ReadLogs(root, phase, order, prompts, emit); err != nil {
			return err
		}
	}
	return nil
}

func joinWorkers(ws []string) string {
	out := ""
	for i, w := range ws {
		if i > 0 {
			out += ", "
		}
		out += w
	}
	return out
}
