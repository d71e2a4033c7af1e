package tokens

import (
	"strings"
	"testing"
)

// Up to the queue's length of chunks waiting, every byte is tokenized: a
// turn of an agent arrives in a few chunks, so its count is exact.
func TestLiveTokenCounterIsExactWhileItKeepsUp(t *testing.T) {
	text := strings.Repeat("The agent edited engine/runner.go and ran the tests: 42 passed.\n", 400)
	c := NewLive()
	step := len(text)/liveQueue + 1
	for i := 0; i < len(text); i += step {
		c.Write([]byte(text[i:min(i+step, len(text))]))
	}
	got, want := c.Close(), Count(text)
	if got != want || c.Estimated() {
		t.Fatalf("counted %d (estimated %v), want exactly %d", got, c.Estimated(), want)
	}
}

func TestLiveTokenCounterEstimatesAFlood(t *testing.T) {
	line := "2026-11-25T09:00:00Z INFO request served path=/api/v1/items status=200 duration=3ms\n"
	chunk := []byte(strings.Repeat(line, 3000)) // ~250 KiB
	c := NewLive()
	const chunks = 200
	for i := 0; i < chunks; i++ {
		c.Write(chunk)
	}
	got := c.Close()
	want := chunks * Count(string(chunk))
	if !c.Estimated() {
		t.Log("the tokenizer kept up with 50 MB: the count is exact")
	}
	if diff := float64(got-want) / float64(want); diff < -0.02 || diff > 0.02 {
		t.Fatalf("counted %d, want %d ±2%%", got, want)
	}
}

// A burst bigger than the backlog is a flood, though it fits in the
// queue's chunks: of 4 MiB printed at once in reads of 256 KiB, no more
// than the backlog is tokenized (at a few MB/s, the end of the step waited
// over a second for all of it), and the estimate carries the count.
func TestLiveTokenCounterEstimatesABurstBeyondTheBacklog(t *testing.T) {
	line := "2026-11-25T09:00:00Z INFO request served path=/api/v1/items status=200 duration=3ms\n"
	chunk := []byte(strings.Repeat(line, (256<<10)/len(line)))
	c := NewLive()
	for range liveQueue {
		c.Write(chunk)
	}
	got, want := c.Close(), liveQueue*Count(string(chunk))
	total := int64(liveQueue * len(chunk))
	if counted := c.counted.Load(); counted > liveBacklog || !c.Estimated() {
		t.Fatalf("%d of the burst's %d bytes went to the tokenizer (estimated: %v)", counted, total, c.Estimated())
	}
	if diff := float64(got-want) / float64(want); diff < -0.02 || diff > 0.02 {
		t.Fatalf("counted %d, want %d ±2%%", got, want)
	}
}
