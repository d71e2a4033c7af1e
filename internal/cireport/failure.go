package cireport

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/transcript"
)

// failureLines is how many of the failing step's last lines the job
// summary shows.
const failureLines = 20

// FailureTail is the job summary's account of the step that failed: its
// transcript, its exit code and its last lines (an agent's rendered as
// logs renders them), in a code block. It is empty unless the session
// failed, or paused after a step that exited non-zero by itself. safe makes each
// line safe to show (redacted, no control characters).
func FailureTail(plan *spec.Plan, s engine.State, transcripts string, safe func(string) string) []byte {
	if s.Phase >= len(s.Phases) || s.Phase >= len(plan.Phases) {
		return nil
	}
	codes := s.Phases[s.Phase].ExitCodes
	if len(codes) == 0 {
		return nil
	}
	// A step a trigger or a person stopped (-1) did not fail: a session
	// paused at a checkpoint shows no failure.
	if code := codes[len(codes)-1]; !(s.Status == engine.StatusFailed && code != 0) && !(s.Status == engine.StatusPaused && code > 0) {
		return nil
	}
	last := store.StandingTranscript(transcripts, plan.Phases[s.Phase].Name, s.Attempt, engine.StepAt(plan, s))
	if last == "" {
		return nil
	}
	rel, _ := filepath.Rel(transcripts, last)
	rel = filepath.ToSlash(rel)
	text := readTail(last, 256<<10)
	if f := transcript.FormatIn(plan, rel); f != transcript.Plain {
		var b strings.Builder
		transcript.WriteText(&b, transcript.Render(text, f, ""), transcript.Options{})
		text = []byte(b.String())
	}
	lines := strings.Split(strings.TrimRight(string(text), "\n"), "\n")
	lines = lines[max(0, len(lines)-failureLines):]
	for i := range lines {
		lines[i] = safe(lines[i])
	}
	body := strings.Join(lines, "\n")
	fence := "```"
	for strings.Contains(body, fence) {
		fence += "`"
	}
	return []byte(fmt.Sprintf("**Step `%s` exited %d.** Its last lines:\n\n%stext\n%s\n%s\n\n",
		strings.ReplaceAll(safe(rel), "`", ""), codes[len(codes)-1], fence, body, fence))
}
