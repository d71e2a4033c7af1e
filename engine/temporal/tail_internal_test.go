package temporal

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine/local"
)

// TestTailBufferKeepsTheLastBytesAndTheOffset: chunks of every size keep
// the last OutputTailSize bytes exactly, and the offset of the whole; a
// tail from an offset holds the bytes after it.
func TestTailBufferKeepsTheLastBytesAndTheOffset(t *testing.T) {
	b := newTailBuffer()
	b.start(local.StepInfo{Phase: "build", Step: "make", Attempt: 2})
	var all bytes.Buffer
	for i := range 20000 {
		chunk := []byte(fmt.Sprintf("%d:%s\n", i, bytes.Repeat([]byte{'x'}, i%97)))
		if i == 10000 {
			chunk = bytes.Repeat([]byte{'y'}, 3*OutputTailSize+5) // larger than the buffer at once
		}
		b.write(chunk)
		all.Write(chunk)
	}
	tail := b.tail(0)
	if tail.Written != int64(all.Len()) || !bytes.Equal(tail.Bytes, all.Bytes()[all.Len()-OutputTailSize:]) {
		t.Fatalf("kept %d bytes of %d written (want the last %d of %d)", len(tail.Bytes), tail.Written, OutputTailSize, all.Len())
	}
	if cap(b.buf) > 3*OutputTailSize {
		t.Fatalf("the buffer grew to %d bytes", cap(b.buf))
	}
	from := int64(all.Len() - 100)
	if got := b.tail(from); got.Offset() != from || !bytes.Equal(got.Bytes, all.Bytes()[from:]) {
		t.Fatalf("the tail from %d starts at %d with %d bytes", from, got.Offset(), len(got.Bytes))
	}
	if tail.Phase != "build" || tail.Step != "make" || tail.Attempt != 2 || tail.Worker == "" {
		t.Fatalf("the step and worker: %+v", tail)
	}
}

// TestTailBufferUnsentIsAfterTheLastSettledHeartbeat: the result carries
// the output after the last heartbeat old enough to have reached the
// server; the later ones may still be held back by the SDK.
func TestTailBufferUnsentIsAfterTheLastSettledHeartbeat(t *testing.T) {
	const settle = 3 * time.Second
	b := newTailBuffer()
	b.write([]byte("0123456789"))
	if got := b.unsent(settle); got.Offset() != 0 || string(got.Bytes) != "0123456789" {
		t.Fatalf("no heartbeat yet: want all of it, got %q from %d", got.Bytes, got.Offset())
	}
	now := time.Now()
	b.beaten(now.Add(-10*time.Second), 2, settle)
	b.beaten(now.Add(-5*time.Second), 4, settle)
	b.beaten(now.Add(-time.Second), 8, settle) // may not have been sent yet
	if got := b.unsent(settle); got.Offset() != 4 || string(got.Bytes) != "456789" {
		t.Fatalf("want the output after the heartbeat of 5s ago (offset 4), got %q from %d", got.Bytes, got.Offset())
	}
	if len(b.beats) != 2 {
		t.Fatalf("the beats kept: %+v, want the last settled one and the later", b.beats)
	}
}

// TestFollowerWritesEachByteOnceByOffset: tails that overlap, repeat or
// leave a gap are written once each, in order; a gap is said on a line of
// its own.
func TestFollowerWritesEachByteOnceByOffset(t *testing.T) {
	var out bytes.Buffer
	f := &follower{w: &out, atLineStart: true, steps: map[stepKey]*followedStep{}}
	key := stepKey{"run", "1"}
	tail := func(written int64, b string) *OutputTail {
		return &OutputTail{Phase: "build", PhaseIndex: 0, Phases: 1, Step: "make", Attempt: 1, What: "run: make", Worker: "w/1",
			Written: written, Bytes: []byte(b)}
	}
	f.show(key, tail(6, "hello "))
	f.show(key, tail(6, "hello ")) // the same heartbeat, looked at again
	f.show(key, tail(11, "llo world"))
	f.show(key, tail(9, "hello wor")) // an older one
	f.show(key, tail(1000, "the end\n"))
	f.show(stepKey{"run", "2"}, tail(3, "ab\n"))
	want := "== phase 1/1 build · step make · attempt 1 · run: make · on w/1\n" +
		"hello world\n" +
		"== 981 bytes of the output skipped here (more than the last 64 KiB the worker holds came since the follow last looked, or before it started); pipeline logs on the worker w/1 has them\n" +
		"the end\n" +
		"== phase 1/1 build · step make · attempt 1 · run: make · on w/1\n" +
		"ab\n"
	if out.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}
