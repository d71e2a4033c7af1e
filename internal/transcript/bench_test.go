package transcript

import (
	"bytes"
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
