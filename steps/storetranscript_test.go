package steps

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pipeline-dev/pipeline/engine/store"
)

// sessionNeverGone is a SessionChecker that never finds the session gone:
// it makes the executor read standard output and error apart.
type sessionNeverGone struct{}

func (sessionNeverGone) SessionGone([]byte, int) bool { return false }

// A step whose standard output and error are read apart (by two
// goroutines) writes to both at once from its start: whichever comes
// first makes the store's transcript, made at its first byte, and the one
// file holds both. Run with -race.
func TestOutputAndErrorRacingOnAStoreTranscriptMakeOneFile(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), ".pipeline"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	x, err := st.Create(store.Meta{ID: "s1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for attempt := 1; attempt <= 10; attempt++ {
		transcript, err := x.CreateTranscript("build", attempt, "agent")
		if err != nil {
			t.Fatal(err)
		}
		step := Step{Command: Command{Args: []string{"sh", "-c", "echo out & echo err >&2 & wait"}},
			SessionChecker: sessionNeverGone{}, AskedSession: "s", Transcript: transcript}
		obs := newRecorder()
		if _, err := (&Executor{}).Execute(context.Background(), step, obs); err != nil {
			t.Fatal(err)
		}
		if err := transcript.Close(); err != nil {
			t.Fatal(err)
		}
		content, err := os.ReadFile(x.TranscriptPath("build", attempt, "agent"))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(content); got != "out\n"+StderrPrefix+"err\n" && got != StderrPrefix+"err\nout\n" {
			t.Errorf("attempt %d: the transcript holds %q, want both lines once", attempt, got)
		}
		if len(obs.warned) > 0 {
			t.Errorf("attempt %d: warned %v", attempt, obs.warned)
		}
	}
}
