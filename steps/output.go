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

// maxNote bounds a checkpoint note.
const maxNote = 1024

// OutputScanner follows a step's output as it passes in chunks of any
// size: it finds the checkpoint marker with a byte search over each chunk
// (and across chunk boundaries), follows the marker's line to its end for
// the note, and keeps the tail. It is not safe for concurrent use.
type OutputScanner struct {
	tail []byte
	// carry is the end of the previous chunk, for a marker split in two;
	// joined is carry and the start of the next chunk, a buffer kept so
	// that the scan of a chunk allocates nothing.
	carry, joined []byte
	// open is set from a marker to the end of its line; building is the
	// note so far.
	open     bool
	building []byte

	// Checkpoint is set once the line of a marker has ended (or was ended
	// by EndLine): an agent that writes the marker and its note in pieces
	// gets the whole line as its note.
	Checkpoint bool
	note       string
}

// Write scans one chunk.
func (s *OutputScanner) Write(chunk []byte) (int, error) {
	if s.open {
		s.extendNote(chunk)
	}
	// A marker split across the boundary: join the carried end with the
	// start of this chunk.
	if len(s.carry) > 0 {
		s.joined = append(append(s.joined[:0], s.carry...), chunk[:min(len(chunk), len(CheckpointMarker)-1)]...)
		if i := bytes.LastIndex(s.joined, CheckpointMarker); i >= 0 {
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

// mark starts the note of a marker with the rest of its chunk.
func (s *OutputScanner) mark(rest []byte) {
	s.open = true
	s.building = s.building[:0]
	s.extendNote(rest)
}

// extendNote adds the text up to the end of the line to the note, and
// ends the note at the end of the line.
func (s *OutputScanner) extendNote(text []byte) {
	end := bytes.IndexByte(text, '\n')
	if end < 0 {
		end = len(text)
	}
	if room := maxNote - len(s.building); room > 0 {
		s.building = append(s.building, text[:min(end, room)]...)
	}
	if end < len(text) {
		s.EndLine()
	}
}

// NoteOpen reports whether a marker's line has not ended yet.
func (s *OutputScanner) NoteOpen() bool { return s.open }

// EndLine takes an open marker's line as it is: the output ended, or the
// rest of the line is too long in coming.
func (s *OutputScanner) EndLine() {
	if !s.open {
		return
	}
	s.open = false
	s.Checkpoint = true
	s.note = strings.TrimSpace(string(s.building))
}

// CheckpointNote is the rest of the line after the last marker whose line
// has ended.
func (s *OutputScanner) CheckpointNote() string { return s.note }

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
