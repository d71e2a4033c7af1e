package app

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/transcript"
)

// AttachRequest names a session to follow from another process: by id,
// name or the latest of the pipeline and spec.
type AttachRequest struct {
	Pipeline
	Session string `json:"session,omitempty"`
	// Lines is how many of the running step's last lines show first (20
	// when 0).
	Lines int `json:"lines,omitempty"`
}

// AttachResponse is how the session stood when Attach returned.
type AttachResponse struct {
	engine.StatusReport
	// Detached: ctx ended while the session was still running.
	Detached bool `json:"detached,omitempty"`
	// WasRunning: a runner held the session when Attach began.
	WasRunning bool `json:"was_running"`
}

// attachPoll is how often the step's progress is shown, and whether the
// runner is still there looked at: its end is not a file event.
const attachPoll = 200 * time.Millisecond

// Attach follows a session that a runner holds, whoever started it, and
// shows it on view as run shows it: each step as it starts and ends, what
// it writes (an agent's rendered as logs renders it), its progress;
// until the session stops running (then the line run ends with) or ctx
// ends (detached: the run goes on). It writes nothing.
func Attach(ctx context.Context, req AttachRequest, view local.View) (*AttachResponse, error) {
	ref, err := req.FindSession(req.Session)
	if err != nil {
		return nil, err
	}
	defer ref.Store.Close()
	defer ref.Close()
	if err := onFleet(ref.X.Meta, "logs -f", "its steps run on the fleet's workers, and their output reaches here through the fleet"); err != nil {
		return nil, err
	}
	a := &attacher{ref: ref, view: view, root: filepath.Join(ref.X.Dir, "transcripts"), lines: req.Lines,
		seen: map[string]int64{}}
	if a.lines <= 0 {
		a.lines = 20
	}
	out := &AttachResponse{WasRunning: ref.Running()}
	if out.WasRunning {
		if out.Detached, err = a.follow(ctx); err != nil {
			return nil, err
		}
	}
	s, _, err := ref.State()
	if err != nil {
		return nil, err
	}
	if !out.Detached {
		a.ended(s)
	}
	out.StatusReport = StatusReport(ref.X.Meta, ref.Plan, s)
	r := redacted(session.NewRedactor(ref.Plan), *out)
	return &r, nil
}

// attacher follows one session's steps through their transcripts: a new
// transcript is a step that started; the one before it has ended.
type attacher struct {
	ref   *session.Ref
	view  local.View
	root  string
	lines int
	// seen holds how much of each transcript was shown.
	seen map[string]int64
	cur  *attachedStep
}

type attachedStep struct {
	path    string
	info    local.StepInfo
	render  *transcript.Renderer
	partial []byte
	started time.Time
}

func (a *attacher) follow(ctx context.Context) (detached bool, err error) {
	w, err := watchTranscripts(a.root)
	if err != nil {
		return false, err
	}
	defer w.Close()
	a.catchUp(true)
	tick := time.NewTicker(attachPoll)
	defer tick.Stop()
	for a.ref.Running() {
		select {
		case <-ctx.Done():
			return true, nil
		case ev := <-w.Events:
			if w.inTranscripts(ev) {
				w.folderMade(ev)
				a.catchUp(false)
			}
		case <-w.Errors:
		case <-tick.C:
			a.catchUp(false)
			a.progress()
		}
	}
	a.catchUp(false)
	return false, nil
}

// catchUp shows the steps started since it last looked and what the
// current one wrote. The first time, the step running shows from its
// last lines, and the steps before it not at all.
func (a *attacher) catchUp(first bool) {
	order := map[string]int{}
	for i, p := range a.ref.Plan.Phases {
		order[p.Name] = i
	}
	paths := a.withRunningStep(store.OrderedStepFiles(a.root, "", order, false))
	if first {
		for _, p := range paths {
			a.seen[p] = 0
		}
		if len(paths) > 0 && a.ref.Running() {
			a.start(paths[len(paths)-1], true)
		}
		return
	}
	for _, p := range paths {
		if _, known := a.seen[p]; !known {
			a.seen[p] = 0
			a.start(p, false)
		}
	}
	a.read()
}

// withRunningStep adds to paths the transcript of the step running, as
// the runner's live file names it, when the step has written nothing yet
// (its transcript is made at its first byte): a quiet step shows too.
func (a *attacher) withRunningStep(paths []string) []string {
	live, ok := a.ref.Live()
	if !ok || live.Phase == "" || live.Step == "" || live.Attempt < 1 {
		return paths
	}
	path := a.ref.X.TranscriptPath(live.Phase, live.Attempt, live.Step)
	if slices.Contains(paths, path) {
		return paths
	}
	return append(paths, path)
}

// start ends the step shown and begins p's; with tail, from its last
// lines.
func (a *attacher) start(path string, tail bool) {
	a.end()
	rel, _ := filepath.Rel(a.root, path)
	info := stepInfo(a.ref.Plan, filepath.ToSlash(rel))
	a.cur = &attachedStep{path: path, info: info, started: time.Now(),
		render: transcript.New(transcript.FormatIn(a.ref.Plan, filepath.ToSlash(rel)), planDir(a.ref.Plan))}
	if live, ok := a.ref.Live(); ok && live.Phase == info.Phase && live.Step == info.Step && live.Attempt == info.Attempt {
		a.cur.started = live.At.Add(-live.StepElapsed)
	}
	a.view.StepStarted(info)
	if tail {
		a.showTail()
	}
	a.read()
}

// showTail shows the last lines the step wrote before Attach began.
func (a *attacher) showTail() {
	content, err := os.ReadFile(a.cur.path)
	if err != nil {
		return
	}
	end := bytes.LastIndexByte(content, '\n') + 1
	var b strings.Builder
	transcript.WriteText(&b, a.cur.render.Lines(content[:end]), transcript.Options{})
	lines := strings.SplitAfter(b.String(), "\n")
	if n := len(lines); n > a.lines+1 {
		lines = lines[n-a.lines-1:]
	}
	a.view.Output([]byte(strings.Join(lines, "")))
	a.seen[a.cur.path] = int64(end)
}

// read shows what the current step wrote since it was last read, by
// whole lines.
func (a *attacher) read() {
	if a.cur == nil {
		return
	}
	f, err := os.Open(a.cur.path)
	if err != nil {
		return
	}
	defer f.Close()
	f.Seek(a.seen[a.cur.path], io.SeekStart)
	more, _ := io.ReadAll(f)
	a.seen[a.cur.path] += int64(len(more))
	data := append(a.cur.partial, more...)
	end := bytes.LastIndexByte(data, '\n') + 1
	a.cur.partial = append([]byte(nil), data[end:]...)
	a.show(a.cur.render.Lines(data[:end]))
}

func (a *attacher) show(items []transcript.Item) {
	var b strings.Builder
	transcript.WriteText(&b, items, transcript.Options{})
	if b.Len() > 0 {
		a.view.Output([]byte(b.String()))
	}
}

// end shows the end of the step shown: what it left unfinished, and how
// it ended as the session recorded it.
func (a *attacher) end() {
	if a.cur == nil {
		return
	}
	c := a.cur
	a.read()
	items := c.render.Line(c.partial)
	a.show(append(items, c.render.Flush()...))
	result := engine.StepResult{ExitCode: -1, Elapsed: time.Since(c.started)}
	if s, _, err := a.ref.State(); err == nil && c.info.PhaseIndex < len(s.Phases) {
		if codes := s.Phases[c.info.PhaseIndex].ExitCodes; len(codes) >= c.info.Attempt && c.info.Attempt > 0 {
			result.ExitCode = codes[c.info.Attempt-1]
		}
	}
	a.view.StepFinished(c.info, result)
	a.cur = nil
}

func (a *attacher) progress() {
	if a.cur == nil {
		return
	}
	p := local.Progress{Elapsed: time.Since(a.cur.started)}
	if live, ok := a.ref.Live(); ok && live.Phase == a.cur.info.Phase && live.Step == a.cur.info.Step && live.Attempt == a.cur.info.Attempt {
		p = local.Progress{Elapsed: live.StepElapsed + time.Since(live.At), Tokens: live.StepTokens}
	}
	a.view.Progress(p)
}

// ended says how the session stands, as the run's own last line says it.
func (a *attacher) ended(s engine.State) {
	a.end()
	switch s.Status {
	case engine.StatusPaused:
		if s.Pause != nil {
			a.view.Say("paused: %s", local.DescribeFiring(*s.Pause))
		} else {
			a.view.Say("paused")
		}
	case engine.StatusCompleted:
		a.view.Say("%s", engine.CompletedLine(s))
	case engine.StatusFailed:
		a.view.Say("failed: %s", s.FailReason)
	default:
		a.view.Say("session %s is %s", a.ref.ID(), s.Status)
	}
}

// stepInfo is what the view shows of the step of a transcript,
// phase/attempt-step.log.
func stepInfo(plan *spec.Plan, rel string) local.StepInfo {
	phase, base := filepath.Split(rel)
	phase = strings.TrimSuffix(phase, "/")
	number, step, _ := strings.Cut(strings.TrimSuffix(base, ".log"), "-")
	info := local.StepInfo{Phase: phase, Step: step, Phases: len(plan.Phases)}
	info.Attempt, _ = strconv.Atoi(number)
	i := slices.IndexFunc(plan.Phases, func(p spec.PhasePlan) bool { return p.Name == phase })
	if i < 0 {
		return info
	}
	info.PhaseIndex = i
	p := &plan.Phases[i]
	for j := range p.Steps {
		if s := &p.Steps[j]; s.Name == step {
			info.TimeLimit, info.TokenLimit = local.Limits(p, s)
			info.What = "run: " + s.Run
			if s.Agent != nil {
				info.What = "agent " + s.Agent.Value.Kind
			}
		}
	}
	return info
}
