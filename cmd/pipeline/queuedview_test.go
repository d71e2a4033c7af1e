package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/local"
)

// recordingView keeps every call, in order.
type recordingView struct{ calls []string }

func (v *recordingView) StepStarted(info local.StepInfo) {
	v.calls = append(v.calls, "started "+info.Step)
}
func (v *recordingView) Output(chunk []byte) { v.calls = append(v.calls, "output "+string(chunk)) }
func (v *recordingView) Progress(p local.Progress) {
	v.calls = append(v.calls, fmt.Sprint("progress ", p.Tokens))
}
func (v *recordingView) StepFinished(info local.StepInfo, r engine.StepResult) {
	v.calls = append(v.calls, fmt.Sprint("finished ", info.Step, " ", r.ExitCode))
}
func (v *recordingView) Say(format string, args ...any) {
	v.calls = append(v.calls, "say "+fmt.Sprintf(format, args...))
}
func (v *recordingView) Close() error { v.calls = append(v.calls, "closed"); return nil }

// The queued view shows everything in the order it was given, copies
// output the caller reuses, formats Say at once, and Close shows what is
// still queued before it closes the view.
func TestQueuedViewKeepsOrderAndCopies(t *testing.T) {
	inner := &recordingView{}
	q := newQueuedView(inner)
	buf := []byte("first chunk")
	q.StepStarted(local.StepInfo{Step: "build"})
	q.Output(buf)
	copy(buf, "XXXXX")
	args := []any{"a note"}
	q.Say("%s", args...)
	args[0] = "changed"
	for i := 0; i < 3*queuedChunks; i++ {
		q.Output([]byte(fmt.Sprint("chunk ", i)))
	}
	q.Progress(local.Progress{Tokens: 7})
	q.StepFinished(local.StepInfo{Step: "build"}, engine.StepResult{ExitCode: 3})
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{"started build", "output first chunk", "say a note"}
	for i := 0; i < 3*queuedChunks; i++ {
		want = append(want, fmt.Sprint("output chunk ", i))
	}
	want = append(want, "progress 7", "finished build 3", "closed")
	if got := strings.Join(inner.calls, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("calls:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}
