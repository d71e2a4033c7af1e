package steps

import (
	"strings"
	"testing"
)

func TestCheckpointFoundWhereverChunksSplit(t *testing.T) {
	text := "working\nstill working\nagent: [CHECKPOINT] design drafted; review it\nmore\n"
	for split := 0; split <= len(text); split++ {
		for _, second := range []int{1, 3, len(text)} {
			var s OutputScanner
			s.Write([]byte(text[:split]))
			rest := text[split:]
			for len(rest) > 0 {
				n := min(second, len(rest))
				s.Write([]byte(rest[:n]))
				rest = rest[n:]
			}
			if !s.Checkpoint || s.CheckpointNote() != "design drafted; review it" {
				t.Fatalf("split at %d, then chunks of %d: checkpoint %v, note %q", split, second, s.Checkpoint, s.CheckpointNote())
			}
		}
	}
}

func TestNoCheckpointWithoutTheWholeMarker(t *testing.T) {
	var s OutputScanner
	s.Write([]byte("[CHECKPOIN"))
	s.Write([]byte("T-ish] no\n[CHECK"))
	s.Write([]byte("POINT"))
	if s.Checkpoint {
		t.Fatal("a partial marker set checkpoint")
	}
}

func TestLastCheckpointNoteWins(t *testing.T) {
	var s OutputScanner
	s.Write([]byte("[CHECKPOINT] first\n[CHECKPOINT] second\n"))
	if s.CheckpointNote() != "second" || !s.Checkpoint {
		t.Fatalf("note %q", s.CheckpointNote())
	}
	s.Write([]byte("plain\n[CHECKPOINT] third, not ended"))
	if s.CheckpointNote() != "second" || !s.NoteOpen() {
		t.Fatalf("an open line replaced the note: %q", s.CheckpointNote())
	}
	s.EndLine()
	if s.CheckpointNote() != "third, not ended" || s.NoteOpen() {
		t.Fatalf("EndLine: note %q", s.CheckpointNote())
	}
}

// Regression: the checkpoint counted as soon as its marker arrived, with
// the part of the note that had come with it, so that an agent streaming
// "[CHECKPOINT] design" then " drafted\n" paused with the note "design".
// Whatever the writes, the checkpoint counts only with its whole line.
func TestCheckpointNoteArrivingInPiecesIsWhole(t *testing.T) {
	const note = "design drafted; review it"
	text := "working\nagent: [CHECKPOINT] " + note + "\nmore output"
	for split := 0; split <= len(text); split++ {
		for _, size := range []int{1, 2, 5, len(text)} {
			var s OutputScanner
			s.Write([]byte(text[:split]))
			rest := text[split:]
			for len(rest) > 0 {
				if s.Checkpoint && s.CheckpointNote() != note {
					t.Fatalf("split at %d, then chunks of %d: checkpoint with the note %q before its line ended", split, size, s.CheckpointNote())
				}
				n := min(size, len(rest))
				s.Write([]byte(rest[:n]))
				rest = rest[n:]
			}
			if !s.Checkpoint || s.CheckpointNote() != note {
				t.Fatalf("split at %d, then chunks of %d: checkpoint %v, note %q", split, size, s.Checkpoint, s.CheckpointNote())
			}
		}
	}
}

func TestTailKeepsTheLastBytes(t *testing.T) {
	var s OutputScanner
	line := strings.Repeat("x", 99) + "\n"
	for i := 0; i < 5000; i++ {
		s.Write([]byte(line))
	}
	s.Write([]byte("end\n"))
	tail := s.Tail()
	if len(tail) != TailSize || !strings.HasSuffix(tail, "x\nend\n") {
		t.Fatalf("tail of %d bytes ending %q", len(tail), tail[len(tail)-10:])
	}
	big := strings.Repeat("y", 3*TailSize)
	s.Write([]byte(big))
	if s.Tail() != big[len(big)-TailSize:] {
		t.Fatal("a chunk larger than the tail")
	}
}
