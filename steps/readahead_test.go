package steps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/internal/redact"
)

// numbered gives reads that fill the buffer with bytes numbered from 0
// (mod 251), size bytes in all, then err.
type numbered struct {
	next, size int
	err        error
}

func (n *numbered) Read(p []byte) (int, error) {
	if n.next == n.size {
		return 0, n.err
	}
	k := min(len(p), n.size-n.next)
	for i := range k {
		p[i] = byte((n.next + i) % 251)
	}
	n.next += k
	return k, nil
}

// The chunks come in order, each byte once, while their buffers go round;
// the count is of every byte; the read's error closes the channel.
func TestReadAheadKeepsOrder(t *testing.T) {
	src := &numbered{size: 10<<20 + 123, err: errors.New("closed")}
	var count atomic.Int64
	ahead := startReadAhead(src, make([]byte, 64<<10), &count)
	next := 0
	buffers := map[*byte]bool{}
	for chunk := range ahead.chunks {
		for i, c := range chunk {
			if c != byte((next+i)%251) {
				t.Fatalf("byte %d is %d", next+i, c)
			}
		}
		buffers[&chunk[:1][0]] = true
		next += len(chunk)
		ahead.done(chunk)
	}
	if next != src.size || count.Load() != int64(src.size) {
		t.Errorf("read %d bytes, counted %d, of %d", next, count.Load(), src.size)
	}
	if len(buffers) > readAheadChunks+1 {
		t.Errorf("%d buffers, more than %d", len(buffers), readAheadChunks+1)
	}
}

// slowStart is a recorder whose first Output takes a while, as a view
// behind a slow terminal: the pipe fills meanwhile, the next read fills
// its buffer and the rest of the output is read ahead.
type slowStart struct {
	*recorder
	slowed atomic.Bool
}

func (o *slowStart) Output(text []byte) {
	if !o.slowed.Swap(true) {
		time.Sleep(100 * time.Millisecond) // a slow consumer, not a wait for an event
	}
	o.recorder.Output(text)
}

// A flood read ahead reaches the transcript and the observer whole and in
// order, redacted, with its checkpoint line found and its tail kept.
func TestFloodReadAheadKeepsEveryByte(t *testing.T) {
	const key = "sk-0123456789abcdefghijKLMNOP"
	var want bytes.Buffer
	for i := 1; i <= 600000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	want.WriteString("[CHECKPOINT] half way\nkey [REDACTED]\n")
	for i := 600001; i <= 700000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	step := shellStep(`seq 1 600000; echo "[CHECKPOINT] half way"; echo "key `+key+`"; seq 600001 700000`, testMark())
	step.Redact = func() RedactStream { return redact.New(nil).NewStream() }
	obs := &slowStart{recorder: newRecorder()}
	res := execute(t, context.Background(), step, obs)
	transcript := res.Output[strings.Index(res.Output, "\n--- transcript\n")+len("\n--- transcript\n"):]
	if transcript != want.String() {
		t.Fatalf("the transcript differs from the output, first at byte %d of %d", firstDiff(transcript, want.String()), len(transcript))
	}
	if got := obs.recorder.output.String(); got != want.String() {
		t.Fatalf("the observer was shown other text, first at byte %d of %d", firstDiff(got, want.String()), len(got))
	}
	if !res.Checkpoint || res.CheckpointNote != "half way" {
		t.Errorf("checkpoint %v, note %q", res.Checkpoint, res.CheckpointNote)
	}
	if tail := strings.TrimSuffix(res.Output, "\n--- transcript\n"+transcript); !strings.HasSuffix(want.String(), tail) || len(tail) != TailSize {
		t.Errorf("the tail is %d bytes, not the output's last %d", len(tail), TailSize)
	}
}

func firstDiff(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

var _ io.Reader = (*numbered)(nil)
