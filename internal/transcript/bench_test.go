package transcript

import (
	"bytes"
	"os"
	"testing"

	"github.com/pipeline-dev/pipeline/internal/transcriptgen"
)

// BenchmarkRender renders 4 MB of Claude Code stream-json as logs and a
// search hit's turn do: a line at a time.
func BenchmarkRender(b *testing.B) {
	var buf bytes.Buffer
	transcriptgen.New(7).Write(&buf, 4<<20, "session")
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		Render(data, Claude, "")
	}
}

// BenchmarkRenderStreamed renders Claude Code's output as the real CLI
// writes it with --include-partial-messages (captured turns repeated to
// 4 MB): mostly streamed deltas.
func BenchmarkRenderStreamed(b *testing.B) {
	var turn []byte
	for _, name := range []string{"turn", "checkpoint", "resume"} {
		data, err := os.ReadFile("../../steps/testdata/claude/" + name + ".jsonl")
		if err != nil {
			b.Fatal(err)
		}
		turn = append(turn, data...)
	}
	data := bytes.Repeat(turn, 4<<20/len(turn)+1)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		Render(data, Claude, "")
	}
}
