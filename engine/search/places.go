package search

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"syscall"

	"github.com/pipeline-dev/pipeline/engine/store"
)

// A hit in an agent's transcript is shown with its place in the step: the
// model's turn, and on a tool call or its result the call's number and
// tool. Only a rendering of the transcript from its first line tells it
// (app/searchturns.go), which costs about as much as indexing the bytes
// again: the places a search found are kept, per transcript, in
// <store>/search/places/, for the next searches. Transcripts are
// append-only: places kept up to a line stay true while the file is the
// same one (its inode) and no shorter. Like the index, they are a cache:
// deleting them loses nothing.

// placesFolder is the places' folder in the index's.
const placesFolder = "places"

// Place is where a line of a transcript is in its step.
type Place struct {
	Line, Turn, Call int
	Tool             string
}

// Places are the places of a transcript's first Lines lines (Bytes of
// the file), as a rendering found them: Points are the lines whose place
// is more than the turn of the line before (a new turn, a call).
type Places struct {
	Lines  int
	Bytes  int64
	Inode  uint64
	Points []Place
}

// At is the place of a line, one of the first p.Lines.
func (p *Places) At(line int) (turn, call int, tool string) {
	for _, pt := range p.Points {
		if pt.Line > line {
			break
		}
		turn = pt.Turn
		call, tool = 0, ""
		if pt.Line == line {
			call, tool = pt.Call, pt.Tool
		}
	}
	return turn, call, tool
}

func placesPath(st *store.Store, session, rel string) (string, error) {
	dir, err := st.Folder(FolderName)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, placesFolder, url.PathEscape(session), url.PathEscape(rel)), nil
}

// LoadPlaces reads the places kept of a session's transcript, open as f;
// ok is false when none are, or they are of another file (replaced, or
// cut since).
func LoadPlaces(st *store.Store, session, rel string, f *os.File) (p Places, ok bool) {
	path, err := placesPath(st, session, rel)
	if err != nil {
		return p, false
	}
	content, err := os.ReadFile(path)
	if err != nil {
		return p, false
	}
	p, ok = decodePlaces(content)
	info, err := f.Stat()
	if !ok || err != nil {
		return p, false
	}
	sys, isStat := info.Sys().(*syscall.Stat_t)
	return p, isStat && sys.Ino == p.Inode && info.Size() >= p.Bytes
}

// SavePlaces keeps the places of a session's transcript, whole or not at
// all (a file written aside, then renamed). They are a cache: an error
// is reported, and costs only the next search's time.
func SavePlaces(st *store.Store, session, rel string, p Places) error {
	path, err := placesPath(st, session, rel)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".places-*")
	if err != nil {
		return err
	}
	w := bufio.NewWriter(tmp)
	_, err = w.Write(encodePlaces(p))
	if err == nil {
		err = w.Flush()
	}
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// removePlaces removes the places kept of a session's transcripts.
func removePlaces(st *store.Store, session string) {
	if dir, err := st.Folder(FolderName); err == nil {
		os.RemoveAll(filepath.Join(dir, placesFolder, url.PathEscape(session)))
	}
}

// placesMagic starts a places file: its format's name and version.
const placesMagic = "pipeline places 1\n"

// encodePlaces writes p as varints: the inode, bytes, lines and number
// of points, then each point (the line after the one before, the turn,
// the call, the tool's length and the tool).
func encodePlaces(p Places) []byte {
	b := []byte(placesMagic)
	b = binary.AppendUvarint(b, p.Inode)
	b = binary.AppendUvarint(b, uint64(p.Bytes))
	b = binary.AppendUvarint(b, uint64(p.Lines))
	b = binary.AppendUvarint(b, uint64(len(p.Points)))
	last := 0
	for _, pt := range p.Points {
		b = binary.AppendUvarint(b, uint64(pt.Line-last))
		b = binary.AppendUvarint(b, uint64(pt.Turn))
		b = binary.AppendUvarint(b, uint64(pt.Call))
		b = binary.AppendUvarint(b, uint64(len(pt.Tool)))
		b = append(b, pt.Tool...)
		last = pt.Line
	}
	return b
}

var errPlaces = errors.New("not a places file")

func decodePlaces(b []byte) (Places, bool) {
	var p Places
	if len(b) < len(placesMagic) || string(b[:len(placesMagic)]) != placesMagic {
		return p, false
	}
	r := &byteReader{b: b[len(placesMagic):]}
	p.Inode = r.uvarint()
	p.Bytes = int64(r.uvarint())
	p.Lines = int(r.uvarint())
	n := r.uvarint()
	if n > uint64(len(r.b)) { // each point takes at least 4 bytes
		return p, false
	}
	p.Points = make([]Place, 0, n)
	line := 0
	for range n {
		line += int(r.uvarint())
		pt := Place{Line: line, Turn: int(r.uvarint()), Call: int(r.uvarint())}
		pt.Tool = string(r.bytes(int(r.uvarint())))
		p.Points = append(p.Points, pt)
	}
	return p, r.err == nil && len(r.b) == 0
}

// byteReader reads varints from b; the first error stays.
type byteReader struct {
	b   []byte
	err error
}

func (r *byteReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err, r.b = errPlaces, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *byteReader) bytes(n int) []byte {
	if n < 0 || n > len(r.b) {
		r.err, r.b = io.ErrUnexpectedEOF, nil
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}
