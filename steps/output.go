package steps

import (
	"bytes"
	"strings"
)

// CheckpointMarker in a line of output sets checkpoint; the rest of the
// line is the checkpoint note.
var CheckpointMarker = []byte("[CHECKPOINT]")

// TailSize is how much of a step's latest output is kept for the output
// variable and the step's record.
const TailSize = 64 << 10

// OutputScanner follows a step's output as it passes in chunks of any
// size: it finds the checkpoint marker with a byte search over each chunk
// (and across chunk boundaries) and keeps the tail. It is not safe for
// concurrent use.
type OutputScanner struct {
	tail []byte
	// carry is the end of the previous chunk, for a marker split in two.
	carry []byte
	// noteOpen is set while the line of the last marker has not ended.
	noteOpen bool

	Checkpoint bool
	note       string
	// Found is set by Write when a marker was found in its chunk.
	Found bool
}

// Write scans one chunk.
func (s *OutputScanner) Write(chunk []byte) (int, error) {
	s.Found = false
	if s.noteOpen {
		s.extendNote(chunk)
	}
	// A marker split across the boundary: join the carried end with the
	// start of this chunk.
	if len(s.carry) > 0 {
		joined := append(s.carry[:len(s.carry):len(s.carry)], chunk[:min(len(chunk), len(CheckpointMarker)-1)]...)
		if i := bytes.LastIndex(joined, CheckpointMarker); i >= 0 {
			s.mark(chunk[i+len(CheckpointMarker)-len(s.carry):])
		}
	}
	// bytes.Index is vectorised, bytes.LastIndex is not: search forward,
	// and on from each hit, for the last marker.
	if i := bytes.Index(chunk, CheckpointMarker); i >= 0 {
		last := i
		for {
			next := bytes.Index(chunk[last+len(CheckpointMarker):], CheckpointMarker)
			if next < 0 {
				break
			}
			last += len(CheckpointMarker) + next
		}
		s.mark(chunk[last+len(CheckpointMarker):])
	}
	// Keep the stream's last len(marker)-1 bytes, whatever the chunk sizes.
	s.carry = append(s.carry, chunk[len(chunk)-min(len(chunk), len(CheckpointMarker)-1):]...)
	if extra := len(s.carry) - (len(CheckpointMarker) - 1); extra > 0 {
		s.carry = append(s.carry[:0], s.carry[extra:]...)
	}
	s.appendTail(chunk)
	return len(chunk), nil
}

func (s *OutputScanner) mark(rest []byte) {
	s.Checkpoint, s.Found = true, true
	s.note = ""
	s.noteOpen = true
	s.extendNote(rest)
}

// extendNote adds the text up to the end of the line to the note.
func (s *OutputScanner) extendNote(text []byte) {
	end := bytes.IndexByte(text, '\n')
	if end >= 0 {
		s.noteOpen = false
	} else {
		end = len(text)
	}
	if room := 1024 - len(s.note); room > 0 {
		s.note += string(text[:min(end, room)])
	}
}

// CheckpointNote is the rest of the line after the last marker.
func (s *OutputScanner) CheckpointNote() string { return strings.TrimSpace(s.note) }

func (s *OutputScanner) appendTail(chunk []byte) {
	if len(chunk) >= TailSize {
		s.tail = append(s.tail[:0], chunk[len(chunk)-TailSize:]...)
		return
	}
	if len(s.tail)+len(chunk) > 2*TailSize {
		s.tail = append(s.tail[:0], s.tail[len(s.tail)-(TailSize-len(chunk)):]...)
	}
	s.tail = append(s.tail, chunk...)
}

// Tail returns the last TailSize bytes of output.
func (s *OutputScanner) Tail() string {
	if len(s.tail) > TailSize {
		return string(s.tail[len(s.tail)-TailSize:])
	}
	return string(s.tail)
}
